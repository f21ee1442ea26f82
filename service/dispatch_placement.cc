#include "service/dispatch_placement.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>

#include "service/log.h"
#include "support/cpu_affinity.h"

namespace tensorgym::service {
namespace {

std::atomic<uint64_t> g_next_placement_id{1};

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A thread's CPU time; -1 once the thread has ended.
int64_t cpu_ns(clockid_t clock) {
  timespec t;
  if (clock_gettime(clock, &t) != 0) return -1;
  return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// What this thread last did for a placement: which one, and that one's epoch then.
struct ThreadView {
  uint64_t placement = 0;
  uint32_t epoch = 0;
};
thread_local ThreadView t_view;

}  // namespace

struct DispatchPlacement::CallThread {
  clockid_t clock;
  int64_t cpu_ns;  // at the last window's end
};

Expected<int> parse_dispatch_cpu(const std::string& text) {
  if (text == "auto") return kDispatchCpuAuto;
  if (text == "none") return kDispatchCpuNone;
  const bool number = !text.empty() && text.size() <= 6 &&
                      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!number) return invalid_argument("--dispatch-cpu takes auto, none or a CPU number, not '" + text + "'");
  return std::stoi(text);
}

std::string dispatch_cpu_name(int cpu) {
  if (cpu == kDispatchCpuAuto) return "auto";
  if (cpu == kDispatchCpuNone) return "none";
  return std::to_string(cpu);
}

bool DispatchLoad::together_after(double load) {
  const bool past = together_ ? load > limits_.spread_above : load < limits_.gather_below;
  windows_ = past ? windows_ + 1 : 0;
  if (windows_ >= (together_ ? limits_.spread_after : limits_.gather_after)) {
    together_ = !together_;
    windows_ = 0;
  }
  return together_;
}

Expected<std::unique_ptr<DispatchPlacement>> DispatchPlacement::create(int cpu, const DispatchLoadLimits& limits) {
  if (cpu < kDispatchCpuAuto) return invalid_argument("--dispatch-cpu must be auto, none or a CPU number");
  if (limits.window.count() <= 0 || limits.spread_after < 1 || limits.gather_after < 1)
    return invalid_argument("the dispatch load window and the windows to spread and gather after must be positive");
  TG_ASSIGN_OR_RETURN(std::vector<int> allowed, allowed_cpus());
  if (cpu >= 0 && std::find(allowed.begin(), allowed.end(), cpu) == allowed.end()) {
    std::string list;
    for (int c : allowed) list += (list.empty() ? "" : ",") + std::to_string(c);
    return invalid_argument("--dispatch-cpu " + std::to_string(cpu) + ": this process may run on CPUs " + list +
                            " only");
  }
  // With one CPU allowed there is nothing to gather.
  if (cpu == kDispatchCpuAuto && allowed.size() < 2) cpu = kDispatchCpuNone;
  return std::unique_ptr<DispatchPlacement>(new DispatchPlacement(cpu, std::move(allowed), limits));
}

DispatchPlacement::DispatchPlacement(int cpu, std::vector<int> allowed, const DispatchLoadLimits& limits)
    : mode_(cpu),
      allowed_(std::move(allowed)),
      window_ns_(std::chrono::nanoseconds(limits.window).count()),
      id_(g_next_placement_id.fetch_add(1)),
      load_(limits) {
  if (cpu >= 0) home_.store(cpu);
}

DispatchPlacement::~DispatchPlacement() = default;

void DispatchPlacement::on_call() {
  if (mode_ == kDispatchCpuNone) return;
  if (t_view.placement != id_) {
    if (mode_ == kDispatchCpuAuto) register_this_thread();
    t_view = {id_, epoch_.load(std::memory_order_acquire) - 1};
  }
  if (mode_ == kDispatchCpuAuto) {
    const int64_t now = steady_ns();
    if (now >= next_window_ns_.load(std::memory_order_relaxed)) evaluate(now);
  }
  const uint32_t epoch = epoch_.load(std::memory_order_acquire);
  if (t_view.epoch == epoch) return;
  t_view.epoch = epoch;
  const int home = home_.load(std::memory_order_acquire);
  // The CPUs were checked at start-up; should one go away later, the thread stays where it was.
  (void)(home >= 0 ? pin_this_thread(home) : set_this_thread_cpus(allowed_));
}

void DispatchPlacement::register_this_thread() {
  clockid_t clock;
  if (pthread_getcpuclockid(pthread_self(), &clock) != 0) return;
  const int64_t now = cpu_ns(clock);
  std::lock_guard<std::mutex> lock(mu_);
  for (const CallThread& t : threads_)
    if (t.clock == clock) return;
  threads_.push_back({clock, now});
}

void DispatchPlacement::evaluate(int64_t now) {
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock() || now < next_window_ns_.load(std::memory_order_relaxed)) return;  // another thread has it
  int64_t used = 0;
  for (auto it = threads_.begin(); it != threads_.end();) {
    const int64_t cpu = cpu_ns(it->clock);
    if (cpu < 0) {  // the thread ended
      it = threads_.erase(it);
      continue;
    }
    used += cpu - it->cpu_ns;
    it->cpu_ns = cpu;
    ++it;
  }
  const int64_t wall = now - window_start_ns_;
  const double load = window_start_ns_ == 0 || wall <= 0 ? 0.0 : double(used) / double(wall);
  window_start_ns_ = now;
  next_window_ns_.store(now + window_ns_, std::memory_order_relaxed);
  const bool was_together = home_.load(std::memory_order_relaxed) >= 0;
  const bool together = load_.together_after(load);
  if (together == was_together) return;
  int home = -1;
  if (together) {  // where this thread is: its caches hold the calls' code
    home = sched_getcpu();
    if (std::find(allowed_.begin(), allowed_.end(), home) == allowed_.end()) home = allowed_.front();
  }
  home_.store(home, std::memory_order_release);
  epoch_.fetch_add(1, std::memory_order_release);
  char load_text[32];
  std::snprintf(load_text, sizeof load_text, "%.2f", load);
  log(LogLevel::kDebug, together ? "call threads gathered on CPU " + std::to_string(home) + " (load " + load_text + ")"
                                 : "call threads let go (load " + std::string(load_text) + " of one core)");
}

}  // namespace tensorgym::service
