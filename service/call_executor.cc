#include "envs/env_context.h"
#include "service/call_executor.h"

#include <algorithm>

namespace tensorgym::service {
namespace {

// A measurement that started just after a cancel is cancelled again this often.
constexpr auto kRecancelPeriod = std::chrono::milliseconds(20);

}  // namespace

Status CallExecutor::Call::reason() const {
  switch (StatusCode(reason_.load())) {
    case StatusCode::kOk: return Status();
    case StatusCode::kDeadlineExceeded:
      return Status(StatusCode::kDeadlineExceeded,
                    "the call's deadline passed while it was measuring; the measurement was cancelled and the "
                    "session is unchanged");
    case StatusCode::kUnavailable: return Status(StatusCode::kUnavailable, "the server is shutting down");
    default: return Status(StatusCode::kCancelled, "the call was cancelled; the session is unchanged");
  }
}

CallExecutor::CallExecutor(int threads, CancelJob cancel_job) : cancel_job_(std::move(cancel_job)) {
  for (int i = 0; i < std::max(1, threads); ++i) workers_.emplace_back([this] { run_worker(); });
  watcher_ = std::thread([this] { run_watcher(); });
}

CallExecutor::~CallExecutor() {
  shutdown(std::chrono::seconds(0));
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  watch_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
  watcher_.join();
}

std::shared_ptr<CallExecutor::Call> CallExecutor::create_call(Clock::time_point deadline) {
  return std::make_shared<Call>(next_job_id_.fetch_add(1), deadline);
}

void CallExecutor::submit(std::shared_ptr<Call> call, std::function<void(Call&)> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!accepting_) mark(*call, StatusCode::kUnavailable);
    live_.push_back(call);
    queue_.push_back(Task{call, std::move(fn)});
  }
  work_cv_.notify_one();
  watch_cv_.notify_one();
}

void CallExecutor::mark(Call& call, StatusCode reason) {
  int expected = 0;
  call.reason_.compare_exchange_strong(expected, int(reason));
  call.token_.cancel();
}

void CallExecutor::cancel(Call& call, StatusCode reason) {
  if (call.done_.load()) return;
  mark(call, reason);
  cancel_job_(call.token_.job_id());
  watch_cv_.notify_one();
}

void CallExecutor::run_worker() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    Task task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    {
      MeasureCancellation::Scope scope(&task.call->token_);
      task.fn(*task.call);
    }
    task.call->done_.store(true);
    task.fn = nullptr;  // release what the closure holds before the call leaves the live list
    lock.lock();
    live_.remove(task.call);
    idle_cv_.notify_all();
  }
}

void CallExecutor::run_watcher() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const Clock::time_point now = Clock::now();
    Clock::time_point next = now + std::chrono::hours(1);
    std::vector<uint64_t> to_cancel;
    for (const std::shared_ptr<Call>& c : live_) {
      if (c->done_.load()) continue;
      if (!c->cancelled() && c->deadline_ <= now) mark(*c, StatusCode::kDeadlineExceeded);
      if (c->cancelled()) {
        to_cancel.push_back(c->token_.job_id());
        next = std::min(next, now + kRecancelPeriod);
      } else {
        next = std::min(next, c->deadline_);
      }
    }
    if (!to_cancel.empty()) {
      lock.unlock();
      for (uint64_t id : to_cancel) cancel_job_(id);
      lock.lock();
    }
    watch_cv_.wait_until(lock, next);
  }
}

void CallExecutor::shutdown(std::chrono::steady_clock::duration grace) {
  std::unique_lock<std::mutex> lock(mu_);
  accepting_ = false;
  idle_cv_.wait_for(lock, grace, [&] { return live_.empty(); });
  for (const std::shared_ptr<Call>& c : live_) mark(*c, StatusCode::kUnavailable);
  watch_cv_.notify_all();
  idle_cv_.wait(lock, [&] { return live_.empty(); });
}

size_t CallExecutor::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_.size();
}

}  // namespace tensorgym::service
