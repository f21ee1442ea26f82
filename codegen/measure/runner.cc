#include "codegen/measure/runner.h"

#include <algorithm>
#include <exception>
#include <thread>
#include <utility>

#include "codegen/backend/registry.h"
#include "codegen/ir/program.h"
#include "codegen/measure/measure_error.h"
#include "codegen/measure/provenance.h"
#include "codegen/measure/runner_settings.h"

namespace tensorgym {
namespace {

// Ids the runner hands out have the top bit set, so they never collide with ids a
// caller chose (which cancel() takes).
constexpr uint64_t kRunnerJobIdBit = uint64_t(1) << 63;

MeasureResult finish_result(MeasureResult r, const MeasureRequest& request, int64_t pid) {
  r.job_id = request.job_id;
  if (r.target.empty()) r.target = request.target.empty() ? std::string(kDefaultTarget) : request.target;
  if (r.provenance.tensorgym_version.empty()) r.provenance = make_provenance(r.target, request.settings, pid);
  return r;
}

}  // namespace

int64_t default_worker_memory_limit() {
  const int64_t threads = std::max(1u, std::thread::hardware_concurrency());
  return ProgramLimits{}.max_total_bytes + (int64_t(3) << 30) + threads * (int64_t(72) << 20);
}

Runner::Runner(RunnerOptions options) : options_(std::move(options)) {
  slots_.resize(size_t(std::max(1, options_.num_workers)));
}

Runner::~Runner() { shutdown(); }

MeasureResult Runner::measure(MeasureRequest request) {
  Expected<RunnerSettings> settings = resolve_runner_settings(request.settings);
  if (!settings.ok())
    return finish_result(error_result(MeasureError::kInstantiation, settings.status().message()), request, 0);
  request.settings = *settings;

  Job job;
  size_t slot = 0;
  std::unique_lock<std::mutex> lock(mu_);
  if (request.job_id == 0) request.job_id = kRunnerJobIdBit | next_job_id_++;
  job.id = request.job_id;
  if (shut_down_) return finish_result(error_result(MeasureError::kWorkerLost, "the runner is shut down"), request, 0);
  auto registered = jobs_.emplace(job.id, &job);
  auto free_slot = [&] { return std::find_if(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.busy; }); };
  slot_free_.wait(lock, [&] { return shut_down_ || job.cancelled.load() || free_slot() != slots_.end(); });
  if (shut_down_ || job.cancelled.load()) {
    jobs_.erase(registered);
    return finish_result(shut_down_
                             ? error_result(MeasureError::kWorkerLost, "the runner is shut down")
                             : error_result(MeasureError::kTimeout, "cancelled by the caller while waiting for a worker"),
                         request, 0);
  }
  slot = size_t(free_slot() - slots_.begin());
  slots_[slot].busy = true;
  ++busy_;
  lock.unlock();

  MeasureResult result;
  try {
    result = run_on_slot(slot, job, request);
  } catch (const std::exception& e) {  // e.g. std::bad_alloc; the slot must still be freed
    result = finish_result(error_result(MeasureError::kWorkerLost, std::string("runner error: ") + e.what()), request, 0);
  }

  lock.lock();
  jobs_.erase(registered);
  slots_[slot].busy = false;
  --busy_;
  ++stats_.jobs;
  // Notified under the lock: once shutdown() sees busy_ == 0 the runner may be
  // destroyed, condition variable included.
  slot_free_.notify_all();
  return result;
}

MeasureResult Runner::run_on_slot(size_t slot, Job& job, const MeasureRequest& request) {
  // The slot is ours while busy; its worker pointer changes under mu_ so that
  // worker_pids() and cancel() may look at it.
  Slot& s = slots_[slot];
  std::unique_ptr<WorkerProcess> retired;
  if (s.worker && !s.worker->alive()) {  // died while idle: replace it quietly
    std::lock_guard<std::mutex> lock(mu_);
    retired = std::move(s.worker);
    ++stats_.workers_lost;
  }
  retired.reset();
  if (!s.worker) {
    Expected<std::unique_ptr<WorkerProcess>> started = WorkerProcess::start(launch(), spawner_);
    if (!started.ok()) {
      return finish_result(error_result(MeasureError::kWorkerLost, "cannot start a worker: " + started.status().message()),
                           request, 0);
    }
    std::lock_guard<std::mutex> lock(mu_);
    s.worker = std::move(started).value();
    sandbox_ = s.worker->sandbox();
    ++stats_.workers_started;
  }
  WorkerProcess* worker = s.worker.get();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_down_ || job.cancelled.load()) {
      return finish_result(error_result(MeasureError::kTimeout, "cancelled by the caller before it started"), request,
                           worker->pid());
    }
    job.worker = worker;
  }

  JobControl control;
  control.compile_timeout_s = request.settings.compile_timeout_s;
  control.run_timeout_s = request.settings.run_timeout_s;
  control.cancelled = &job.cancelled;
  control.acquire_run = [this, &job] { return acquire_run(job); };
  control.release_run = [this] { release_run(); };
  MeasureResult result = worker->run_job(request, control);

  {
    std::lock_guard<std::mutex> lock(mu_);
    job.worker = nullptr;
    if (!worker->alive()) {
      retired = std::move(s.worker);
      ++stats_.workers_lost;
    } else if ((options_.max_jobs_per_worker > 0 && worker->jobs_done() >= options_.max_jobs_per_worker) ||
               (options_.max_worker_rss_bytes > 0 && worker->resident_bytes() > options_.max_worker_rss_bytes) ||
               (result.error == MeasureError::kResourceExhausted && worker->last_job_ran())) {
      retired = std::move(s.worker);
      ++stats_.workers_recycled;
    }
  }
  retired.reset();  // kill + reap outside the lock
  return finish_result(std::move(result), request, 0);
}

WorkerLaunch Runner::launch() const {
  WorkerLaunch launch;
  launch.binary = options_.worker_binary;
  launch.extra_args = options_.worker_args;
  if (options_.worker_memory_limit_bytes > 0) {
    launch.extra_args.push_back("--memory-limit");
    launch.extra_args.push_back(std::to_string(options_.worker_memory_limit_bytes));
  }
  launch.startup_timeout_s = options_.startup_timeout_s;
  launch.stderr_tail_bytes = options_.stderr_tail_bytes;
  return launch;
}

Status Runner::start_workers() {
  for (size_t i = 0; i < slots_.size(); ++i) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (shut_down_) return Status(StatusCode::kUnavailable, "the runner is shut down");
      if (slots_[i].busy || slots_[i].worker) continue;
      slots_[i].busy = true;
      ++busy_;
    }
    Expected<std::unique_ptr<WorkerProcess>> started = WorkerProcess::start(launch(), spawner_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (started.ok()) {
        slots_[i].worker = std::move(started).value();
        sandbox_ = slots_[i].worker->sandbox();
        ++stats_.workers_started;
      }
      slots_[i].busy = false;
      --busy_;
      slot_free_.notify_all();
    }
    if (!started.ok()) return started.status();
  }
  return Status();
}

bool Runner::acquire_run(const Job& job) {
  std::unique_lock<std::mutex> lock(run_mu_);
  run_free_.wait(lock, [&] { return !options_.serialize_runs || running_ == 0 || job.cancelled.load(); });
  if (job.cancelled.load()) return false;
  ++running_;
  return true;
}

void Runner::release_run() {
  {
    std::lock_guard<std::mutex> lock(run_mu_);
    --running_;
  }
  run_free_.notify_all();
}

bool Runner::cancel(uint64_t job_id) {
  bool found = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [begin, end] = jobs_.equal_range(job_id);
    for (auto it = begin; it != end; ++it) {
      found = true;
      it->second->cancelled.store(true);
      if (it->second->worker) it->second->worker->cancel();
    }
  }
  if (found) {
    slot_free_.notify_all();
    { std::lock_guard<std::mutex> lock(run_mu_); }
    run_free_.notify_all();
  }
  return found;
}

void Runner::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!shut_down_) {
      shut_down_ = true;
      for (auto& [id, job] : jobs_) {
        job->cancelled.store(true);
        if (job->worker) job->worker->cancel();
      }
    }
  }
  slot_free_.notify_all();
  { std::lock_guard<std::mutex> lock(run_mu_); }
  run_free_.notify_all();
  std::vector<std::unique_ptr<WorkerProcess>> workers;
  {
    std::unique_lock<std::mutex> lock(mu_);
    slot_free_.wait(lock, [&] { return busy_ == 0; });
    for (Slot& s : slots_) {
      if (s.worker) workers.push_back(std::move(s.worker));
    }
  }
  workers.clear();  // kills and reaps each
}

std::string Runner::worker_sandbox() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sandbox_;
}

std::vector<pid_t> Runner::worker_pids() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<pid_t> pids;
  for (const Slot& s : slots_) {
    if (s.worker) pids.push_back(s.worker->pid());
  }
  return pids;
}

Runner::Stats Runner::stats() const {
  Stats s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    s = stats_;
    s.busy_workers = busy_;
  }
  std::lock_guard<std::mutex> lock(run_mu_);
  s.runs_in_progress = running_;
  return s;
}

}  // namespace tensorgym
