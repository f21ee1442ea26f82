// Where the gRPC threads that run the service's handlers run (serve --dispatch-cpu).
//
// gRPC serves callbacks from a few threads that take calls in turn. Left to the
// kernel they may sit on different cores, and then every other step runs where its
// code is not in the core's cache (docs/performance.md). Three placements:
//   - a CPU N: they all stay on N;
//   - none: the kernel places them;
//   - auto (the default): they stay together on one CPU while the load they carry fits
//     in it (one agent stepping), and are let go when it does not (many agents), then
//     gathered again once the load has been low for a while.
// Measurement workers and the threads that run slow calls are never pinned.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "support/status.h"

namespace tensorgym::service {

inline constexpr int kDispatchCpuNone = -1;
inline constexpr int kDispatchCpuAuto = -2;

// "auto", "none" or a CPU number, as --dispatch-cpu takes it.
Expected<int> parse_dispatch_cpu(const std::string& text);
std::string dispatch_cpu_name(int cpu);

// When auto lets go and gathers. The load is the CPU time the call threads used in a
// window divided by its length: 1.0 is one core kept busy. One agent cannot keep the
// core busy, as the service idles while the agent works and the answer travels (0.65-0.8
// here with a C++ agent in a tight loop, docs/performance.md); agents that together
// need more than the core keep it near 1.0.
struct DispatchLoadLimits {
  std::chrono::milliseconds window{50};
  double spread_above = 0.9;  // together: let go after `spread_after` windows in a row above this
  int spread_after = 4;
  double gather_below = 0.85;  // spread: gather after `gather_after` windows in a row below this
  int gather_after = 20;
};

// The decision alone, window by window (no threads, no clocks).
class DispatchLoad {
 public:
  explicit DispatchLoad(const DispatchLoadLimits& limits) : limits_(limits) {}
  // Takes the load of the window that just ended; true while the threads should be together.
  bool together_after(double load);
  bool together() const { return together_; }

 private:
  DispatchLoadLimits limits_;
  bool together_ = true;
  int windows_ = 0;  // in a row past the limit of the present state
};

class DispatchPlacement {
 public:
  // cpu: a CPU number, kDispatchCpuNone or kDispatchCpuAuto. A CPU this process may
  // not run on is INVALID_ARGUMENT, with the ones it may.
  static Expected<std::unique_ptr<DispatchPlacement>> create(int cpu, const DispatchLoadLimits& limits = {});
  ~DispatchPlacement();

  // From every handler's thread as it starts: cheap unless the placement changed since
  // this thread's last call here.
  void on_call();

  // The CPU the call threads are kept on now; -1 when they are left to the kernel.
  int home_cpu() const { return home_.load(std::memory_order_acquire); }

 private:
  struct CallThread;
  DispatchPlacement(int cpu, std::vector<int> allowed, const DispatchLoadLimits& limits);
  void register_this_thread();
  void evaluate(int64_t now_ns);

  const int mode_;  // a CPU, kDispatchCpuNone or kDispatchCpuAuto
  const std::vector<int> allowed_;
  const int64_t window_ns_;
  const uint64_t id_;               // tells placements apart in thread-local state
  std::atomic<int> home_{-1};       // read by every call
  std::atomic<uint32_t> epoch_{0};  // bumped when home_ changes
  std::atomic<int64_t> next_window_ns_{0};
  std::mutex mu_;  // the rest
  DispatchLoad load_;
  std::vector<CallThread> threads_;
  int64_t window_start_ns_ = 0;
};

}  // namespace tensorgym::service
