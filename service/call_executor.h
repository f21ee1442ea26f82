// Calls that may measure (compile and run a kernel: 0.1-2 s) run on this pool, not on
// gRPC's few callback threads. Each runs under a MeasureCancellation (envs/env.h);
// when its deadline passes, its client cancels it, or the server shuts down, the
// executor cancels the token and the measurement in its sandboxed worker (through
// `cancel_job`, i.e. Runner::cancel), again every few milliseconds until the call
// returns (a measurement may start just after a cancel).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "envs/env_context.h"
#include "support/status.h"

namespace tensorgym::service {

class CallExecutor {
 public:
  using Clock = std::chrono::system_clock;  // gRPC deadlines are system_clock points
  using CancelJob = std::function<void(uint64_t job_id)>;

  class Call {
   public:
    Call(uint64_t job_id, Clock::time_point deadline) : token_(job_id), deadline_(deadline) {}
    const MeasureCancellation& token() const { return token_; }
    Clock::time_point deadline() const { return deadline_; }
    bool cancelled() const { return token_.cancelled(); }
    // Why it was cancelled: DEADLINE_EXCEEDED, CANCELLED (by the client) or
    // UNAVAILABLE (shutdown); OK while it was not.
    Status reason() const;

   private:
    friend class CallExecutor;
    MeasureCancellation token_;
    const Clock::time_point deadline_;
    std::atomic<int> reason_{0};
    std::atomic<bool> done_{false};
  };

  CallExecutor(int threads, CancelJob cancel_job);
  ~CallExecutor();
  CallExecutor(const CallExecutor&) = delete;
  CallExecutor& operator=(const CallExecutor&) = delete;

  // A call with a fresh job id; Clock::time_point::max() is no deadline.
  std::shared_ptr<Call> create_call(Clock::time_point deadline);
  // Queues fn; it runs on a pool thread with the call's token installed
  // (MeasureCancellation::Scope). fn must check call.cancelled() when it starts: a
  // call may be cancelled while queued. After shutdown() the call starts cancelled.
  void submit(std::shared_ptr<Call> call, std::function<void(Call&)> fn);
  // Cancels a call (e.g. from a reactor's OnCancel); `reason` is CANCELLED or UNAVAILABLE.
  void cancel(Call& call, StatusCode reason);

  // Stops taking calls; calls in flight get `grace` to finish, then are cancelled;
  // returns when every call has returned. Idempotent.
  void shutdown(std::chrono::steady_clock::duration grace);

  size_t in_flight() const;

 private:
  struct Task {
    std::shared_ptr<Call> call;
    std::function<void(Call&)> fn;
  };
  void run_worker();
  void run_watcher();
  void mark(Call& call, StatusCode reason);

  const CancelJob cancel_job_;
  std::atomic<uint64_t> next_job_id_{1};
  mutable std::mutex mu_;
  std::condition_variable work_cv_;     // tasks queued, or stopping
  std::condition_variable watch_cv_;    // a call was added or cancelled, or stopping
  std::condition_variable idle_cv_;     // a call finished
  std::deque<Task> queue_;
  std::list<std::shared_ptr<Call>> live_;  // queued or running
  bool accepting_ = true;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
  std::thread watcher_;
};

}  // namespace tensorgym::service
