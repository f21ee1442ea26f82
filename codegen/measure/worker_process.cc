#include "codegen/measure/worker_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "codegen/backend/registry.h"
#include "codegen/measure/measure_error.h"
#include "codegen/measure/measure_wire.h"
#include "codegen/measure/provenance.h"
#include "codegen/measure/sandbox.h"

extern char** environ;

namespace tensorgym {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;

std::string errno_text(int err) { return std::strerror(err); }

std::string format_seconds(double s) { return fmt::format("{:g} s", s); }

// Moves a descriptor to >= 10 (close-on-exec) so that dup2 onto 0..3 in the child is
// never a no-op that would leave the close-on-exec flag set.
int move_high(int fd) {
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  ::close(fd);
  return moved;
}

}  // namespace

Expected<std::string> resolve_worker_binary(const std::string& configured) {
  std::string path = configured;
  if (path.empty()) {
    if (const char* env = std::getenv("TENSORGYM_WORKER_BINARY"); env && *env) path = env;
  }
  if (path.empty()) {
    char buf[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return not_found("cannot find this process's executable (/proc/self/exe): " + errno_text(errno));
    path.assign(buf, size_t(n));
  }
  if (access(path.c_str(), X_OK) != 0) {
    return not_found("worker binary " + path + " is not an executable file: " + errno_text(errno));
  }
  return path;
}

Expected<std::unique_ptr<WorkerProcess>> WorkerProcess::start(const WorkerLaunch& launch, SpawnThread& spawner) {
  TG_ASSIGN_OR_RETURN(std::string binary, resolve_worker_binary(launch.binary));

  int channel[2], err[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0) {
    return Status(StatusCode::kUnavailable, "socketpair failed: " + errno_text(errno));
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(channel[0]);
    ::close(channel[1]);
    return Status(StatusCode::kUnavailable, "pipe2 failed: " + errno_text(e));
  }
  const int child_channel = move_high(channel[1]);
  const int child_err = move_high(err[1]);
  auto close_all = [&] {
    for (int fd : {channel[0], err[0], child_channel, child_err}) {
      if (fd >= 0) ::close(fd);
    }
  };
  if (child_channel < 0 || child_err < 0) {
    close_all();
    return Status(StatusCode::kUnavailable, "fcntl(F_DUPFD_CLOEXEC) failed");
  }

  std::vector<std::string> args = {binary, "worker", "--fd", "3", "--parent-pid", std::to_string(getpid())};
  args.insert(args.end(), launch.extra_args.begin(), launch.extra_args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  // The child: stdin /dev/null, stdout and stderr the capture pipe, fd 3 the channel,
  // nothing else; default signal dispositions and an empty mask (the caller's threads
  // may block or ignore signals).
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, child_err, 1);
  posix_spawn_file_actions_adddup2(&actions, child_err, 2);
  posix_spawn_file_actions_adddup2(&actions, child_channel, 3);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  posix_spawn_file_actions_addclosefrom_np(&actions, 4);
#endif
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  pid_t pid = -1;
  int rc = 0;
  // posix_spawn does not fork the caller's address space (glibc uses clone(CLONE_VM |
  // CLONE_VFORK) and execs at once), so it is safe in a threaded process.
  spawner.call([&] { rc = posix_spawn(&pid, binary.c_str(), &actions, &attr, argv.data(), environ); });
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(child_channel);
  ::close(child_err);
  if (rc != 0) {
    ::close(channel[0]);
    ::close(err[0]);
    return Status(StatusCode::kUnavailable, "cannot start worker " + binary + ": " + errno_text(rc));
  }
  WorkerLaunch resolved = launch;
  resolved.binary = binary;
  std::unique_ptr<WorkerProcess> worker(new WorkerProcess(pid, channel[0], err[0], resolved));
  TG_RETURN_IF_ERROR(worker->await_hello(launch.startup_timeout_s));
  return worker;
}

WorkerProcess::WorkerProcess(pid_t pid, int channel_fd, int stderr_fd, const WorkerLaunch& launch)
    : pid_(pid),
      launch_(launch),
      channel_(io_, asio::local::stream_protocol(), channel_fd),
      stderr_(io_, stderr_fd),
      deadline_(io_) {
  fcntl(stderr_fd, F_SETFL, fcntl(stderr_fd, F_GETFL) | O_NONBLOCK);
}

WorkerProcess::~WorkerProcess() { kill_and_reap(); }

bool WorkerProcess::alive() {
  if (reaped_) return false;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  reaped_ = true;
  wait_status_ = r == pid_ ? status : 0;
  return false;
}

int64_t WorkerProcess::resident_bytes() const {
  if (reaped_) return 0;
  std::ifstream in(fmt::format("/proc/{}/statm", pid_));
  int64_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * int64_t(sysconf(_SC_PAGESIZE));
}

int WorkerProcess::kill_and_reap() {
  if (reaped_) return wait_status_;
  ::kill(pid_, SIGKILL);
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  reaped_ = true;
  wait_status_ = r == pid_ ? status : 0;
  return wait_status_;
}

int WorkerProcess::reap_after_channel_closed() {
  // The channel closes as the process exits; give it a moment to become a zombie so
  // its own death (a signal, an exit status) is what we report, then make sure.
  for (int i = 0; i < 100 && alive(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return kill_and_reap();
}

void WorkerProcess::cancel() {
  asio::post(io_, [this] {
    if (control_ && control_->cancelled && control_->cancelled->load() && outcome_ == Outcome::kNone) {
      finish(Outcome::kCancelled);
    }
  });
}

// ---- the exchange ----------------------------------------------------------------

void WorkerProcess::arm_deadline(double seconds) {
  phase_timeout_s_ = seconds;
  const uint64_t generation = ++deadline_generation_;
  deadline_.expires_after(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds)));
  deadline_.async_wait([this, generation](const error_code& ec) {
    if (ec || generation != deadline_generation_ || outcome_ != Outcome::kNone) return;
    finish(Outcome::kTimeout);
  });
}

void WorkerProcess::read_next_frame() {
  asio::async_read(channel_, asio::buffer(header_), [this](const error_code& ec, size_t) {
    if (outcome_ != Outcome::kNone) return;
    if (ec) return finish(Outcome::kChannelClosed, ec.message());
    Expected<FrameHeader> header = decode_frame_header(header_);
    if (!header.ok()) return finish(Outcome::kProtocol, header.status().message());
    frame_type_ = header->type;
    payload_.assign(header->payload_bytes, '\0');
    if (payload_.empty()) return on_frame();
    asio::async_read(channel_, asio::buffer(payload_), [this](const error_code& ec2, size_t) {
      if (outcome_ != Outcome::kNone) return;
      if (ec2) return finish(Outcome::kChannelClosed, ec2.message());
      on_frame();
    });
  });
}

void WorkerProcess::on_frame() {
  auto unexpected = [&] {
    finish(Outcome::kProtocol, std::string("unexpected ") + frame_type_name(frame_type_) + " frame");
  };
  auto take_result = [&] {
    Expected<MeasureResult> result = parse_measure_result(payload_);
    if (!result.ok()) return finish(Outcome::kProtocol, "the result frame does not parse");
    result_ = std::move(result).value();
    finish(Outcome::kResult);
  };
  switch (phase_) {
    case Phase::kStartup:
      if (frame_type_ != FrameType::kHello) return unexpected();
      sandbox_ = payload_;
      return finish(Outcome::kResult);
    case Phase::kCompile:
      if (frame_type_ == FrameType::kResult) return take_result();
      if (frame_type_ != FrameType::kCompiled) return unexpected();
      if (Expected<MeasureResult> compiled = parse_measure_result(payload_); compiled.ok()) {
        compiled_ = std::move(compiled).value();
      } else {
        return finish(Outcome::kProtocol, "the compiled frame does not parse");
      }
      // Compilation is done: wait for our turn to run (no deadline runs meanwhile),
      // then the run deadline starts with the go.
      if (control_->acquire_run) {
        if (!control_->acquire_run()) return finish(Outcome::kCancelled);
        run_acquired_ = true;
      }
      if (control_->cancelled && control_->cancelled->load()) return finish(Outcome::kCancelled);
      phase_ = Phase::kRun;
      arm_deadline(control_->run_timeout_s);
      out_frame_ = encode_frame(FrameType::kGo, "");
      asio::async_write(channel_, asio::buffer(out_frame_), [this](const error_code& ec, size_t) {
        if (ec && outcome_ == Outcome::kNone) finish(Outcome::kChannelClosed, ec.message());
      });
      return read_next_frame();
    case Phase::kRun:
      if (frame_type_ != FrameType::kResult) return unexpected();
      return take_result();
  }
}

void WorkerProcess::read_stderr() {
  if (!stderr_open_) return;
  stderr_.async_read_some(asio::buffer(stderr_buf_), [this](const error_code& ec, size_t n) {
    if (n > 0) append_stderr(stderr_buf_, n);
    if (ec) {
      if (ec != asio::error::operation_aborted && ec != asio::error::would_block) stderr_open_ = false;
      return;
    }
    if (outcome_ == Outcome::kNone) read_stderr();
  });
}

void WorkerProcess::drain_stderr_nonblocking() {
  if (!stderr_open_) return;
  for (;;) {
    const ssize_t n = ::read(stderr_.native_handle(), stderr_buf_, sizeof stderr_buf_);
    if (n > 0) {
      append_stderr(stderr_buf_, size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) stderr_open_ = false;  // every writer is gone
    return;
  }
}

void WorkerProcess::append_stderr(const char* data, size_t n) {
  stderr_tail_.append(data, n);
  if (stderr_tail_.size() > launch_.stderr_tail_bytes) {
    stderr_tail_.erase(0, stderr_tail_.size() - launch_.stderr_tail_bytes);
  }
}

void WorkerProcess::finish(Outcome outcome, std::string detail) {
  if (outcome_ != Outcome::kNone) return;
  outcome_ = outcome;
  detail_ = std::move(detail);
  ++deadline_generation_;
  error_code ignored;
  deadline_.cancel();
  channel_.cancel(ignored);
  stderr_.cancel(ignored);
  // A deadline, a cancellation or a protocol error: stop the worker now. (A closed
  // channel is a worker that is already going; it is reaped after the loop.)
  if (outcome == Outcome::kTimeout || outcome == Outcome::kCancelled || outcome == Outcome::kProtocol) {
    if (!reaped_) ::kill(pid_, SIGKILL);
  }
}

std::string WorkerProcess::stderr_report() const {
  if (stderr_tail_.empty()) return "";
  std::string tail = stderr_tail_;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
  return fmt::format("\n--- worker stderr (last {} bytes) ---\n{}", tail.size(), tail);
}

Status WorkerProcess::await_hello(double timeout_s) {
  control_ = nullptr;
  phase_ = Phase::kStartup;
  outcome_ = Outcome::kNone;
  io_.restart();
  arm_deadline(timeout_s);
  read_next_frame();
  read_stderr();
  io_.run();
  if (outcome_ == Outcome::kResult) return Status();
  const int status = outcome_ == Outcome::kChannelClosed ? reap_after_channel_closed() : kill_and_reap();
  drain_stderr_nonblocking();
  std::string why =
      outcome_ == Outcome::kTimeout ? "it did not say hello within " + format_seconds(timeout_s) : detail_;
  return Status(StatusCode::kUnavailable, fmt::format("worker {} (pid {}) did not start: {} ({}){}", launch_.binary, pid_,
                                                      why, describe_wait_status(status), stderr_report()));
}

MeasureResult WorkerProcess::run_job(const MeasureRequest& request, const JobControl& control) {
  drain_stderr_nonblocking();  // whatever it wrote while idle is not this job's
  stderr_tail_.clear();
  compiled_ = {};
  result_ = {};
  detail_.clear();
  run_acquired_ = false;
  outcome_ = Outcome::kNone;
  phase_ = Phase::kCompile;

  MeasureResult out;
  if (!alive()) {
    out = error_result(MeasureError::kWorkerLost,
                       fmt::format("the worker (pid {}) had already ended: {}", pid_, describe_wait_status(wait_status_)));
  } else if (control.cancelled && control.cancelled->load()) {
    out = error_result(MeasureError::kTimeout, "cancelled by the caller before it started");
  } else {
    const std::string bytes = serialize(request);
    if (bytes.size() > kMaxFramePayload) {
      out = error_result(MeasureError::kInstantiation, fmt::format("the request is too large ({} bytes)", bytes.size()));
    } else {
      control_ = &control;
      out_frame_ = encode_frame(FrameType::kRequest, bytes);
      io_.restart();
      asio::async_write(channel_, asio::buffer(out_frame_), [this](const error_code& ec, size_t) {
        if (ec && outcome_ == Outcome::kNone) finish(Outcome::kChannelClosed, ec.message());
      });
      arm_deadline(control.compile_timeout_s);
      read_next_frame();
      read_stderr();
      io_.run();
      control_ = nullptr;
      if (run_acquired_ && control.release_run) control.release_run();
      run_acquired_ = false;
      out = failure_result(request);
    }
  }
  out.job_id = request.job_id;
  if (out.target.empty()) out.target = request.target.empty() ? std::string(kDefaultTarget) : request.target;
  if (out.provenance.tensorgym_version.empty()) out.provenance = make_provenance(out.target, request.settings, pid_);
  return out;
}

MeasureResult WorkerProcess::failure_result(const MeasureRequest& request) {
  if (outcome_ == Outcome::kResult) {
    if (result_.job_id != request.job_id) {
      kill_and_reap();
      return error_result(MeasureError::kWorkerLost, fmt::format("the worker answered job {} to request {}", result_.job_id, request.job_id));
    }
    ++jobs_done_;
    return std::move(result_);
  }
  const bool compiling = phase_ == Phase::kCompile;
  const int status = outcome_ == Outcome::kChannelClosed ? reap_after_channel_closed() : kill_and_reap();
  drain_stderr_nonblocking();
  const std::string pid = fmt::format("worker pid {}", pid_);
  MeasureResult r;
  switch (outcome_) {
    case Outcome::kTimeout:
      r = error_result(MeasureError::kTimeout, std::string(compiling ? "compilation" : "the run") + " passed its deadline of " +
                                           format_seconds(phase_timeout_s_) + "; the worker was killed (" + pid + ")" +
                                           stderr_report());
      break;
    case Outcome::kCancelled:
      r = error_result(MeasureError::kTimeout, std::string("cancelled by the caller while ") +
                                           (compiling ? "compiling" : "running") + "; the worker was killed (" + pid +
                                           ")" + stderr_report());
      break;
    case Outcome::kChannelClosed:
      if (WIFEXITED(status) && WEXITSTATUS(status) == kOutOfMemoryExitStatus) {
        r = error_result(MeasureError::kResourceExhausted, std::string("the job passed the worker's memory limit while ") +
                                                        (compiling ? "compiling" : "running") + " (" + pid + ")" +
                                                        stderr_report());
      } else if (compiling) {
        r = error_result(MeasureError::kCompile, "the worker died while compiling: " + describe_wait_status(status) + " (" +
                                             pid + ")" + stderr_report());
      } else {
        r = error_result(MeasureError::kRuntimeCrash, "the worker died during the run: " + describe_wait_status(status) +
                                                   " (" + pid + ")" + stderr_report());
      }
      break;
    case Outcome::kProtocol:
    case Outcome::kNone:
    case Outcome::kResult:
      r = error_result(MeasureError::kWorkerLost,
                       "the worker broke the protocol: " + detail_ + " (" + pid + ")" + stderr_report());
      break;
  }
  if (!compiling) {
    r.compile_ms = compiled_.compile_ms;
    r.kernel_cache_hit = compiled_.kernel_cache_hit;
  }
  return r;
}

}  // namespace tensorgym
