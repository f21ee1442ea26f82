// Evaluate: batch jobs on the server. A job (proto::EvaluateJob) is one episode in a
// fresh environment: reset on the benchmark, apply the actions, compute the
// observations and rewards; its result (proto::JobResult) says what came out, or the
// class of what went wrong, with its queue, compile and run times.
//
//   EvaluatePool  jobs of every Evaluate stream, run `concurrency` at a time on threads
//                 of its own; jobs that measure also take one of `measure_slots` (the
//                 runner's workers) before they start, so they never wait for a worker
//                 on a thread that a cheap job could use. Streams are served round
//                 robin, each in arrival order.
//   run_evaluate_job  one job, in-process (the pool calls it; tests and benchmarks too).
//   new_evaluate_reactor  the gRPC side of one Evaluate call.
//
// Deadlines: a job's timeout_s becomes its measurement's compile and run deadlines,
// which the runner counts from the moment each phase starts: waiting in the pool's
// queue, for a worker, or for the run gate never counts. A worker that crashes or
// passes a deadline is replaced by the runner; only its job fails.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "envs/env_context.h"
#include "proto/tensorgym.pb.h"
#include "service/server_options.h"

namespace grpc {
class CallbackServerContext;
template <class Request, class Response>
class ServerBidiReactor;
}  // namespace grpc

namespace tensorgym::service {

class Authenticator;

struct EvaluateLimits {
  int max_spaces = 256;                     // observations, rewards, parameters per job
  int max_actions = 4096;                   // actions per job
  int64_t max_program_bytes = int64_t(1) << 20;  // program text, and action text
};

// Whether a job asks for a space that measures (compiles and runs in a worker).
class MeasuringSpaces {
 public:
  MeasuringSpaces();  // the platform-dependent spaces of every environment
  bool measures(const proto::EvaluateJob& job) const;

 private:
  std::map<std::string, std::unordered_set<std::string>> by_env_;
};

// Runs one job in a fresh environment of `context` on this thread. A measurement
// cancelled through the thread's MeasureCancellation makes the result JOB_UNAVAILABLE.
// Fills everything but queue_ms, instance_id and slot.
proto::JobResult run_evaluate_job(const proto::EvaluateJob& job, const std::shared_ptr<EnvContext>& context,
                                  const EvaluateLimits& limits);

struct EvaluatePoolOptions {
  int concurrency = 2;     // jobs at once
  int measure_slots = 1;   // of which measuring at once
  int max_queued_per_stream = 10000;
  std::string instance_id;
  EvaluateLimits limits;
};

class EvaluatePool {
 public:
  using Clock = std::chrono::steady_clock;
  using ResultFn = std::function<void(proto::JobResult)>;
  class Stream;

  EvaluatePool(EvaluatePoolOptions options, std::shared_ptr<EnvContext> context);
  ~EvaluatePool();  // shutdown(0)
  EvaluatePool(const EvaluatePool&) = delete;
  EvaluatePool& operator=(const EvaluatePool&) = delete;

  const EvaluatePoolOptions& options() const { return options_; }

  // A stream of jobs whose results go to on_result, one call at a time, on pool
  // threads (or on the caller's, for jobs answered at once). on_closing (may be null)
  // is called once when shutdown() begins, after the queued jobs were refused: a
  // stream with nothing left to answer ends then, instead of when the grace runs out.
  std::shared_ptr<Stream> open_stream(ResultFn on_result, std::function<void()> on_closing = nullptr);
  // Queues jobs in order. Every job gets exactly one result, unless the stream is
  // closed first: past the stream's queue cap, or after shutdown, at once (UNAVAILABLE).
  void submit(const std::shared_ptr<Stream>& stream, std::vector<proto::EvaluateJob> jobs);
  // The caller is gone: queued jobs are dropped, running ones cancelled, and no
  // result is delivered any more once this returns (on_result is not running).
  void close_stream(const std::shared_ptr<Stream>& stream);
  // Jobs of the stream queued or running.
  size_t outstanding(const Stream& stream) const;
  // False once shutdown() began: streams end as soon as their jobs are answered.
  bool accepting() const;

  // Stops taking jobs: queued jobs are answered UNAVAILABLE now; running jobs get
  // `grace` to finish, then their measurements are cancelled (UNAVAILABLE). Returns
  // once every job has returned. Idempotent.
  void shutdown(std::chrono::steady_clock::duration grace);

  struct Stats {
    int64_t jobs = 0;      // results delivered
    int64_t running = 0;
    int64_t queued = 0;
  };
  Stats stats() const;

 private:
  struct Queued {
    proto::EvaluateJob job;
    Clock::time_point arrival;
    bool measures = false;
  };
  struct Running {
    explicit Running(uint64_t id) : token(id) {}
    MeasureCancellation token;
    Stream* stream = nullptr;
  };

  void run_slot(int slot);
  void run_watcher();
  // Takes the next runnable job (round robin over streams); false when none is.
  bool pick(std::shared_ptr<Stream>* stream, Queued* job);
  void deliver(Stream& stream, proto::JobResult result);
  void cancel_locked(Running& r);

  const EvaluatePoolOptions options_;
  const std::shared_ptr<EnvContext> context_;
  const MeasuringSpaces measuring_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;   // a job was queued, a measure slot freed, or stopping
  std::condition_variable idle_cv_;   // a job finished
  std::condition_variable watch_cv_;  // a job was cancelled, or stopping
  std::deque<std::shared_ptr<Stream>> ready_;  // streams with queued jobs, in turn
  std::vector<std::weak_ptr<Stream>> streams_;  // every stream opened, for shutdown()
  std::set<Running*> running_;
  int measure_free_ = 0;
  bool accepting_ = true;
  bool stopping_ = false;
  uint64_t next_job_id_ = 1;
  std::atomic<int64_t> delivered_{0};
  std::vector<std::thread> slots_;
  std::thread watcher_;
};

// The reactor of one Evaluate call: checks the caller, sends the greeting (instance,
// concurrency), queues the jobs it reads and writes results as they come, several to
// a message when they come faster than the client reads. Finishes OK once the client
// has half-closed and every job is answered; UNAVAILABLE once the pool shuts down and
// every job it had is answered, so that a draining server does not wait for clients.
grpc::ServerBidiReactor<proto::EvaluateRequest, proto::EvaluateResponse>* new_evaluate_reactor(
    EvaluatePool& pool, const Authenticator& auth, grpc::CallbackServerContext* ctx);

}  // namespace tensorgym::service
