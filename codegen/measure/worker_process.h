// The runner's side of one worker process: starting it (exec of `tensorgym worker`,
// never a fork of the caller), one job's exchange with compile and run deadlines over
// Boost.Asio, classifying how it failed, killing and reaping it.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codegen/measure/frame.h"
#include "codegen/measure/measurement.h"
#include "codegen/measure/spawn_thread.h"
#include "support/status.h"

namespace tensorgym {

struct WorkerLaunch {
  // The tensorgym executable; see resolve_worker_binary().
  std::string binary;
  // Extra arguments after `worker --fd 3 --parent-pid PID`.
  std::vector<std::string> extra_args;
  // How long a new worker may take to say hello.
  double startup_timeout_s = 30;
  // How much of the worker's stderr is kept for diagnostics (the tail).
  size_t stderr_tail_bytes = 8192;
};

// `configured` when not empty, else $TENSORGYM_WORKER_BINARY, else this process's own
// executable (/proc/self/exe). NOT_FOUND when the result is not an executable file.
Expected<std::string> resolve_worker_binary(const std::string& configured);

// What the runner lets a job do between its phases.
struct JobControl {
  double compile_timeout_s = 60;
  double run_timeout_s = 60;
  // Set (by another thread) to cancel the job, followed by WorkerProcess::cancel().
  const std::atomic<bool>* cancelled = nullptr;
  // Called when compilation is done, before the go; may block (one run phase at a
  // time). Returns false when the job was cancelled while waiting. Empty: no wait.
  std::function<bool()> acquire_run;
  // Called once after acquire_run returned true, when the run phase is over.
  std::function<void()> release_run;
};

class WorkerProcess {
 public:
  // Starts `tensorgym worker` from `spawner`'s thread and waits for its hello.
  // UNAVAILABLE (with the worker's stderr) when it does not start.
  static Expected<std::unique_ptr<WorkerProcess>> start(const WorkerLaunch& launch, SpawnThread& spawner);
  ~WorkerProcess();  // kill_and_reap()
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  pid_t pid() const { return pid_; }
  // False once the process has ended (it is then reaped).
  bool alive();
  int jobs_done() const { return jobs_done_; }
  // Whether the last job got the go for its run phase (it allocated its buffers).
  bool last_job_ran() const { return phase_ == Phase::kRun; }
  // Resident memory of the process from /proc/PID/statm; 0 when unknown.
  int64_t resident_bytes() const;

  // Sends one request and waits for its result under the deadlines. A failure seen
  // from this side (deadline, crash, exit, cancellation, protocol error) is returned
  // as its error class with the worker's stderr tail; the worker is then dead and
  // reaped. Not thread-safe with itself: one job at a time.
  MeasureResult run_job(const MeasureRequest& request, const JobControl& control);

  // Thread-safe: wakes the exchange in flight so that it sees its JobControl's
  // `cancelled` flag (set it first); the job then ends as TIMEOUT "cancelled" and the
  // worker is killed. Harmless between jobs and for a job whose flag is not set.
  void cancel();

  // Kills (SIGKILL) and reaps the process; idempotent. Returns its wait status.
  int kill_and_reap();

  // The tail of what the worker wrote to stderr during the last job.
  const std::string& stderr_tail() const { return stderr_tail_; }
  // What the worker said it runs under, from its hello (sandbox.h).
  const std::string& sandbox() const { return sandbox_; }

 private:
  enum class Phase { kStartup, kCompile, kRun };
  enum class Outcome { kNone, kResult, kTimeout, kCancelled, kChannelClosed, kProtocol };

  WorkerProcess(pid_t pid, int channel_fd, int stderr_fd, const WorkerLaunch& launch);
  Status await_hello(double timeout_s);

  // Asio plumbing of one exchange.
  void arm_deadline(double seconds);
  void read_next_frame();
  void on_frame();
  void read_stderr();
  void drain_stderr_nonblocking();
  void append_stderr(const char* data, size_t n);
  void finish(Outcome outcome, std::string detail = {});
  int reap_after_channel_closed();
  std::string stderr_report() const;
  MeasureResult failure_result(const MeasureRequest& request);

  pid_t pid_ = -1;
  bool reaped_ = false;
  int wait_status_ = 0;
  int jobs_done_ = 0;
  WorkerLaunch launch_;

  boost::asio::io_context io_;
  boost::asio::local::stream_protocol::socket channel_;
  boost::asio::posix::stream_descriptor stderr_;
  boost::asio::steady_timer deadline_;

  // State of the exchange in flight.
  const JobControl* control_ = nullptr;
  Phase phase_ = Phase::kStartup;
  Outcome outcome_ = Outcome::kNone;
  std::string detail_;
  uint64_t deadline_generation_ = 0;
  double phase_timeout_s_ = 0;
  bool run_acquired_ = false;
  bool stderr_open_ = true;
  unsigned char header_[kFrameHeaderBytes] = {};
  FrameType frame_type_ = FrameType::kHello;
  std::string payload_;
  std::string out_frame_;
  char stderr_buf_[4096] = {};
  std::string stderr_tail_;
  std::string sandbox_;
  MeasureResult compiled_;  // the kCompiled frame's content
  MeasureResult result_;
};

}  // namespace tensorgym
