// The Runner: a pool of sandboxed worker processes that measure MeasureRequests.
//
//   MeasureResult r = runner.measure(request);   // thread-safe; plain C++ (measurement.h)
//
// Each call takes a free worker (concurrent calls use different workers; with
// serialize_runs one run phase at a time across the pool, so timings do not disturb
// each other while compilations still overlap), sends the request and waits under the
// compile deadline, then the run deadline. A worker that crashes, hangs past a
// deadline or breaks the protocol is killed (SIGKILL) and reaped; the next call gets a
// fresh one. Workers are recycled after max_jobs_per_worker jobs, when their resident
// memory passes max_worker_rss_bytes (JIT-heavy processes grow) or after a job that
// ran out of memory in its run phase (RESOURCE_EXHAUSTED; one refused before
// compiling costs nothing); each runs under a hard memory limit and a sandbox
// (sandbox.h). Every
// result carries its target and provenance; errors are values (measure_error.h),
// never exceptions. The request's target names the backend the worker compiles for
// (codegen/backend/registry.h); requests and results cross to the worker as protobuf
// frames (measure_wire.h), and nowhere else here.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "codegen/measure/measurement.h"
#include "codegen/measure/spawn_thread.h"
#include "codegen/measure/worker_process.h"
#include "support/status.h"

namespace tensorgym {

// The default RLIMIT_DATA of a worker: the kernel's buffers (ProgramLimits::
// max_total_bytes, which lowering enforces), 3 GiB for the rest of the job (up to
// 2 GiB held from earlier jobs before the worker is recycled, LLVM and the JIT'd code,
// the reference evaluator's tables, host-side copies) and 72 MiB per hardware thread
// (the parallel runtime's 64 MiB thread stacks and each thread's malloc arena).
int64_t default_worker_memory_limit();

struct RunnerOptions {
  int num_workers = 1;
  // The tensorgym executable to run as `tensorgym worker`; empty means
  // $TENSORGYM_WORKER_BINARY, else this process's own executable.
  std::string worker_binary;
  std::vector<std::string> worker_args;             // extra `tensorgym worker` flags
  int max_jobs_per_worker = 200;                    // 0: never recycle by count
  int64_t max_worker_rss_bytes = int64_t(2) << 30;  // 0: never recycle by memory
  // Each worker's hard memory limit (RLIMIT_DATA; sandbox.h); 0: none. A job that
  // passes it ends as RESOURCE_EXHAUSTED and costs its worker.
  int64_t worker_memory_limit_bytes = default_worker_memory_limit();
  bool serialize_runs = true;
  double startup_timeout_s = 30;
  size_t stderr_tail_bytes = 8192;
};

class Runner {
 public:
  explicit Runner(RunnerOptions options = {});
  ~Runner();  // shutdown()
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // Measures one request. A zero job_id is replaced by a fresh one (the result
  // carries it). Settings are resolved (runner_settings.h) before anything runs;
  // invalid settings are INSTANTIATION errors.
  MeasureResult measure(MeasureRequest request);

  // Starts every worker that is not running yet, now rather than on first use (a
  // warm pool: the first measurements do not pay for process start-up).
  Status start_workers();

  // Cancels every in-flight or waiting measure() of this job id: its worker is killed
  // and the call returns TIMEOUT "cancelled ...". Returns whether a job was found.
  bool cancel(uint64_t job_id);

  // Cancels in-flight jobs, waits for their calls to return, kills and reaps every
  // worker. Later measure() calls return WORKER_LOST. Idempotent.
  void shutdown();

  // Pids of the live workers (started lazily, on first use).
  std::vector<pid_t> worker_pids() const;
  // What the last worker started said it runs under (sandbox.h); empty before one
  // started.
  std::string worker_sandbox() const;

  struct Stats {
    int64_t jobs = 0;
    int64_t workers_started = 0;
    int64_t workers_recycled = 0;  // retired after max jobs or memory
    int64_t workers_lost = 0;      // killed or found dead
    // At this moment, not totals: workers holding a job (or starting), and jobs in
    // their timed run phase. What runs at once shows here, without timing anything.
    int64_t busy_workers = 0;
    int64_t runs_in_progress = 0;
  };
  Stats stats() const;
  const RunnerOptions& options() const { return options_; }

 private:
  struct Job {
    uint64_t id = 0;
    std::atomic<bool> cancelled{false};
    WorkerProcess* worker = nullptr;  // while its exchange runs (guarded by mu_)
  };
  struct Slot {
    std::unique_ptr<WorkerProcess> worker;
    bool busy = false;
  };

  WorkerLaunch launch() const;
  bool acquire_run(const Job& job);
  void release_run();
  MeasureResult run_on_slot(size_t slot, Job& job, const MeasureRequest& request);

  const RunnerOptions options_;
  SpawnThread spawner_;

  mutable std::mutex mu_;
  std::condition_variable slot_free_;
  std::vector<Slot> slots_;
  std::multimap<uint64_t, Job*> jobs_;
  bool shut_down_ = false;
  int busy_ = 0;
  uint64_t next_job_id_ = 1;
  Stats stats_;
  std::string sandbox_;

  mutable std::mutex run_mu_;
  std::condition_variable run_free_;
  int running_ = 0;  // jobs in their run phase; at most one with serialize_runs
};

}  // namespace tensorgym
