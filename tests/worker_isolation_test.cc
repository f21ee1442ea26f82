// Sandboxed measurement with real worker processes (the built `tensorgym worker`):
// every failure a kernel can cause (crash, hang, exit, wrong answer) comes back as
// its error class, the runner carries on with a fresh worker, deadlines hold, workers
// are recycled, cancelled, shut down and die with their parent, and `tensorgym eval`
// prints what it promises. Loopback only; every wait is bounded.
#include <fcntl.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "codegen/measure/measure_error.h"
#include "codegen/measure/runner.h"
#include "tests/test_support.h"

extern char** environ;

namespace tensorgym {
namespace {

const char* const kCli = TENSORGYM_BINARY_DIR "/bin/tensorgym";

const char* kGemm32 =
    "input A: f32[32, 32]\n"
    "input B: f32[32, 32]\n"
    "C[i, j] += A[i, k] * B[k, j]\n";

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

MeasureRequest request(TestFault fault = TestFault::kNone, uint64_t job_id = 0) {
  MeasureRequest r;
  r.job_id = job_id;
  r.program = kGemm32;
  r.schedule = "split(C.j, 8, jo, ji)\nvectorize(C.ji)";
  r.test_fault = fault;
  RunnerSettings* s = &r.settings;
  s->repeat = 2;
  s->min_repeat_ms = 1;
  s->threads = 1;
  s->compile_timeout_s = 20;
  s->run_timeout_s = 20;
  return r;
}

// A job that hangs in `fault`'s phase until cancelled: both deadlines a minute away.
MeasureRequest long_hang(TestFault fault, uint64_t job_id) {
  MeasureRequest r = request(fault, job_id);
  r.settings.compile_timeout_s = 60;
  r.settings.run_timeout_s = 60;
  return r;
}

RunnerOptions runner_options(int workers = 1) {
  RunnerOptions o;
  o.num_workers = workers;
  o.worker_binary = kCli;
  return o;
}

// Whether a process is gone: no /proc entry, or a zombie nobody reaped yet (its
// parent, e.g. a container's init, may not reap).
bool process_gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

// Whether `done` came true within timeout_s (a bound on the test's own waiting).
template <typename Done>
bool wait_until(Done done, double timeout_s) {
  const double end = now_s() + timeout_s;
  while (now_s() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

bool wait_until_gone(pid_t pid, double timeout_s) {
  return wait_until([pid] { return process_gone(pid); }, timeout_s);
}

// Live children of `parent` (from /proc/*/stat), optionally only those running `exe`.
std::vector<pid_t> children_of(pid_t parent, const std::string& exe = "") {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const size_t paren = line.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream rest(line.substr(paren + 2));
    char state = 0;
    long ppid = 0;
    rest >> state >> ppid;
    if (ppid != parent || state == 'Z') continue;
    if (!exe.empty()) {
      std::error_code ec;
      const auto target = std::filesystem::read_symlink(entry.path() / "exe", ec);
      if (ec || std::filesystem::weakly_canonical(target, ec) != std::filesystem::weakly_canonical(exe, ec)) continue;
    }
    out.push_back(pid_t(std::stol(name)));
  }
  return out;
}

// Runs a command to completion, capturing stdout; returns the exit status.
int run_capture(const std::vector<std::string>& args, std::string* out) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], 1);
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipefd[1]);
  if (rc != 0) {
    ::close(pipefd[0]);
    return -1;
  }
  char buf[4096];
  for (ssize_t n; (n = ::read(pipefd[0], buf, sizeof buf)) > 0;) out->append(buf, size_t(n));
  ::close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string write_temp(const std::string& name, const std::string& text, bool executable = false) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("tg_isolation_" + std::to_string(getpid()) + "_" + name)).string();
  std::ofstream(path) << text;
  if (executable) chmod(path.c_str(), 0755);
  return path;
}

// ---- failures come back as error classes, and the runner carries on ------------------

// Needs the LLVM backend (every fault in the run phase happens after compilation).
TEST(WorkerIsolationTest, CrashInRunIsRuntimeCrashWithTheSignalThenRecovers) {
  Runner runner(runner_options());
  MeasureResult crash = runner.measure(request(TestFault::kCrashInRun));
  ASSERT_EQ(crash.error, MeasureError::kRuntimeCrash) << crash.error_message;
  EXPECT_CONTAINS(crash.error_message, "SIGSEGV");
  EXPECT_FALSE(crash.correct);
  EXPECT_GT(crash.provenance.worker_pid, 0);
  EXPECT_TRUE(process_gone(pid_t(crash.provenance.worker_pid)));

  MeasureResult next = runner.measure(request());
  ASSERT_EQ(next.error, MeasureError::kOk) << next.error_message;
  EXPECT_TRUE(next.correct);
  EXPECT_NE(next.provenance.worker_pid, crash.provenance.worker_pid);
}

// Needs the LLVM backend.
TEST(WorkerIsolationTest, HangInRunTimesOutOnTheRunDeadline) {
  Runner runner(runner_options());
  ASSERT_EQ(runner.measure(request()).error, MeasureError::kOk);  // a warm worker
  MeasureRequest hang = request(TestFault::kHangInRun);
  const double deadline = 0.5;
  hang.settings.run_timeout_s = deadline;
  hang.settings.compile_timeout_s = 60;
  const double t0 = now_s();
  MeasureResult r = runner.measure(hang);
  const double elapsed = now_s() - t0;
  ASSERT_EQ(r.error, MeasureError::kTimeout) << r.error_message;
  // The run's deadline ended it, not the compile deadline or a cancellation. How soon
  // after the deadline it was seen depends on the machine: reported, not asserted.
  EXPECT_CONTAINS(r.error_message, "the run passed its deadline of 0.5 s");
  // Time spent past the run deadline: compilation (reported, unless the worker's
  // kernel cache served it) comes before it.
  const double compile_s = r.kernel_cache_hit ? 0 : r.compile_ms / 1e3;
  const double margin = elapsed - compile_s - deadline;
  std::printf("[ measured ] run deadline %.2f s: detected %.1f ms after it (compile %.1f ms, total %.1f ms)\n",
              deadline, margin * 1e3, r.compile_ms, elapsed * 1e3);
  RecordProperty("run_timeout_margin_ms", std::to_string(margin * 1e3));
  EXPECT_GE(elapsed, deadline);  // never before the deadline
  EXPECT_TRUE(process_gone(pid_t(r.provenance.worker_pid)));

  MeasureResult next = runner.measure(request());
  EXPECT_EQ(next.error, MeasureError::kOk) << next.error_message;
}

TEST(WorkerIsolationTest, HangInCompileTimesOutOnTheCompileDeadline) {
  Runner runner(runner_options());
  MeasureRequest hang = request(TestFault::kHangInCompile);
  const double deadline = 0.5;
  hang.settings.compile_timeout_s = deadline;
  hang.settings.run_timeout_s = 30;
  MeasureResult warm = runner.measure(request(TestFault::kNone));  // starts the worker
  (void)warm;
  const double t0 = now_s();
  MeasureResult r = runner.measure(hang);
  const double elapsed = now_s() - t0;
  ASSERT_EQ(r.error, MeasureError::kTimeout) << r.error_message;
  // The compile deadline ended it (the run's is 30 s); how soon after it is reported.
  EXPECT_CONTAINS(r.error_message, "compilation passed its deadline of 0.5 s");
  std::printf("[ measured ] compile deadline %.2f s: detected %.1f ms after it\n", deadline,
              (elapsed - deadline) * 1e3);
  RecordProperty("compile_timeout_margin_ms", std::to_string((elapsed - deadline) * 1e3));
  EXPECT_GE(elapsed, deadline);  // never before the deadline
  EXPECT_TRUE(process_gone(pid_t(r.provenance.worker_pid)));

  // The runner carries on with a fresh worker.
  MeasureResult bad = runner.measure([] {
    MeasureRequest q = request();
    q.program = "input A: f32[4]\nB[i] = A[i] +* 2\n";
    return q;
  }());
  EXPECT_EQ(bad.error, MeasureError::kInstantiation);
  EXPECT_NE(bad.provenance.worker_pid, r.provenance.worker_pid);
}

// Needs the LLVM backend.
TEST(WorkerIsolationTest, ExitInRunIsRuntimeCrashWithTheWorkersStderr) {
  Runner runner(runner_options());
  MeasureResult r = runner.measure(request(TestFault::kExitInRun));
  ASSERT_EQ(r.error, MeasureError::kRuntimeCrash) << r.error_message;
  EXPECT_CONTAINS(r.error_message, "exited with status 3");
  EXPECT_CONTAINS(r.error_message, "worker stderr");
  EXPECT_CONTAINS(r.error_message, "EXIT_IN_RUN");
  EXPECT_EQ(runner.measure(request()).error, MeasureError::kOk);
}

// Needs the LLVM backend.
TEST(WorkerIsolationTest, CorruptOutputIsWrongAnswerThenRecovers) {
  Runner runner(runner_options());
  MeasureResult r = runner.measure(request(TestFault::kCorruptOutput));
  ASSERT_EQ(r.error, MeasureError::kWrongAnswer) << r.error_message;
  EXPECT_FALSE(r.correct);
  EXPECT_TRUE(r.runtime.samples_s.empty());  // nothing was timed
  EXPECT_CONTAINS(r.error_message, "expected");
  EXPECT_CONTAINS(r.error_message, "got");
  // A wrong answer does not kill the worker: the same one measures the next job.
  MeasureResult next = runner.measure(request());
  ASSERT_EQ(next.error, MeasureError::kOk) << next.error_message;
  EXPECT_EQ(next.provenance.worker_pid, r.provenance.worker_pid);
}

TEST(WorkerIsolationTest, CrashInCompileIsACompileErrorWithTheSignal) {
  Runner runner(runner_options());
  MeasureResult r = runner.measure(request(TestFault::kCrashInCompile));
  ASSERT_EQ(r.error, MeasureError::kCompile) << r.error_message;
  EXPECT_CONTAINS(r.error_message, "SIGSEGV");
  EXPECT_CONTAINS(r.error_message, "while compiling");
  EXPECT_TRUE(process_gone(pid_t(r.provenance.worker_pid)));
}

TEST(WorkerIsolationTest, BadProgramIsInstantiationWithLineAndColumn) {
  Runner runner(runner_options());
  MeasureRequest q = request();
  q.program = "input A: f32[4]\nB[i] = A[i] +* 2\n";
  MeasureResult r = runner.measure(q);
  ASSERT_EQ(r.error, MeasureError::kInstantiation) << r.error_message;
  EXPECT_CONTAINS(r.error_message, "program:2:14: expected an expression");
  EXPECT_GT(r.provenance.worker_pid, 0);
  EXPECT_NE(r.provenance.worker_pid, int64_t(getpid()));
  EXPECT_EQ(r.provenance.tensorgym_version, TENSORGYM_VERSION);
  EXPECT_FALSE(r.provenance.hostname.empty());
  EXPECT_NE(r.job_id, 0u);
}

TEST(WorkerIsolationTest, InvalidSettingsNeverReachAWorker) {
  Runner runner(runner_options());
  MeasureRequest q = request();
  q.settings.run_timeout_s = -1;
  MeasureResult r = runner.measure(q);
  EXPECT_EQ(r.error, MeasureError::kInstantiation);
  EXPECT_CONTAINS(r.error_message, "run_timeout_s");
  EXPECT_TRUE(runner.worker_pids().empty());
}

// ---- the pool ----------------------------------------------------------------------------

TEST(WorkerIsolationTest, WorkersAreRecycledAfterMaxJobs) {
  RunnerOptions o = runner_options();
  o.max_jobs_per_worker = 2;
  Runner runner(o);
  MeasureRequest q = request();
  q.program = "input A: f32[4]\nB[i] = A[i] +* 2\n";  // cheap: an instantiation error
  std::vector<int64_t> pids;
  for (int i = 0; i < 5; ++i) pids.push_back(runner.measure(q).provenance.worker_pid);
  EXPECT_EQ(pids[0], pids[1]);
  EXPECT_NE(pids[1], pids[2]);
  EXPECT_EQ(pids[2], pids[3]);
  EXPECT_NE(pids[3], pids[4]);
  EXPECT_TRUE(process_gone(pid_t(pids[0])));
  EXPECT_EQ(runner.stats().workers_recycled, 2);
  EXPECT_EQ(runner.stats().workers_started, 3);
  EXPECT_EQ(runner.stats().jobs, 5);
}

TEST(WorkerIsolationTest, WorkersAreRecycledPastTheirMemoryLimit) {
  RunnerOptions o = runner_options();
  o.max_worker_rss_bytes = 1;  // every worker is over it after its first job
  Runner runner(o);
  MeasureRequest q = request();
  q.program = "input A: f32[4]\nB[i] = A[i] +* 2\n";
  const int64_t a = runner.measure(q).provenance.worker_pid;
  const int64_t b = runner.measure(q).provenance.worker_pid;
  EXPECT_NE(a, b);
  EXPECT_EQ(runner.stats().workers_recycled, 2);
}

TEST(WorkerIsolationTest, AWorkerThatDiedWhileIdleIsReplaced) {
  Runner runner(runner_options());
  MeasureRequest q = request();
  q.program = "input A: f32[4]\nB[i] = A[i] +* 2\n";
  const int64_t first = runner.measure(q).provenance.worker_pid;
  ASSERT_EQ(::kill(pid_t(first), SIGKILL), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  MeasureResult r = runner.measure(q);
  EXPECT_EQ(r.error, MeasureError::kInstantiation) << r.error_message;
  EXPECT_NE(r.provenance.worker_pid, first);
  EXPECT_EQ(runner.stats().workers_lost, 1);
}

// Two calls at once hold two workers at once (the runner's busy count says so, no
// timing needed); cancelled, each reports it was cancelled while compiling.
TEST(WorkerIsolationTest, ConcurrentCallsUseDifferentWorkers) {
  Runner runner(runner_options(2));
  ASSERT_TRUE(runner.start_workers().ok());
  ASSERT_EQ(runner.worker_pids().size(), 2u);
  MeasureResult a, b;
  std::thread ta([&] { a = runner.measure(long_hang(TestFault::kHangInCompile, 1)); });
  std::thread tb([&] { b = runner.measure(long_hang(TestFault::kHangInCompile, 2)); });
  const bool side_by_side = wait_until([&] { return runner.stats().busy_workers == 2; }, 30);
  EXPECT_TRUE(runner.cancel(1));
  EXPECT_TRUE(runner.cancel(2));
  ta.join();
  tb.join();
  EXPECT_TRUE(side_by_side) << "the two calls never held two workers at once";
  EXPECT_EQ(a.error, MeasureError::kTimeout);
  EXPECT_EQ(b.error, MeasureError::kTimeout);
  EXPECT_CONTAINS(a.error_message, "cancelled by the caller");
  EXPECT_CONTAINS(b.error_message, "cancelled by the caller");
  EXPECT_NE(a.provenance.worker_pid, b.provenance.worker_pid);
  EXPECT_EQ(runner.stats().busy_workers, 0);
}

// Needs the LLVM backend. With serialize_runs, run phases take turns across workers:
// two 0.4 s runs take 0.8 s at least. Without, both are in their run phase at once.
TEST(WorkerIsolationTest, SerializedRunPhasesTakeTurns) {
  {
    RunnerOptions o = runner_options(2);
    o.serialize_runs = true;
    Runner runner(o);
    ASSERT_TRUE(runner.start_workers().ok());
    MeasureRequest hang = request(TestFault::kHangInRun);
    hang.settings.run_timeout_s = 0.4;
    MeasureResult a, b;
    const double t0 = now_s();
    std::thread ta([&] { a = runner.measure(hang); });
    std::thread tb([&] { b = runner.measure(hang); });
    ta.join();
    tb.join();
    const double elapsed = now_s() - t0;
    ASSERT_EQ(a.error, MeasureError::kTimeout) << a.error_message;
    ASSERT_EQ(b.error, MeasureError::kTimeout) << b.error_message;
    EXPECT_CONTAINS(a.error_message, "the run passed its deadline");
    EXPECT_CONTAINS(b.error_message, "the run passed its deadline");
    EXPECT_GE(elapsed, 0.8) << "two 0.4 s run phases overlapped";
  }
  {
    RunnerOptions o = runner_options(2);
    o.serialize_runs = false;
    Runner runner(o);
    ASSERT_TRUE(runner.start_workers().ok());
    MeasureResult a, b;
    std::thread ta([&] { a = runner.measure(long_hang(TestFault::kHangInRun, 1)); });
    std::thread tb([&] { b = runner.measure(long_hang(TestFault::kHangInRun, 2)); });
    const bool overlapped = wait_until([&] { return runner.stats().runs_in_progress == 2; }, 60);
    EXPECT_TRUE(runner.cancel(1));
    EXPECT_TRUE(runner.cancel(2));
    ta.join();
    tb.join();
    EXPECT_TRUE(overlapped) << "run phases did not overlap";
    EXPECT_EQ(a.error, MeasureError::kTimeout);
    EXPECT_EQ(b.error, MeasureError::kTimeout);
    if (overlapped) {
      EXPECT_CONTAINS(a.error_message, "cancelled by the caller while running");
      EXPECT_CONTAINS(b.error_message, "cancelled by the caller while running");
    }
    EXPECT_EQ(runner.stats().runs_in_progress, 0);
  }
}

TEST(WorkerIsolationTest, CancellingAJobInFlightKillsItsWorker) {
  Runner runner(runner_options());
  MeasureRequest hang = request(TestFault::kHangInCompile, /*job_id=*/77);
  hang.settings.compile_timeout_s = 30;
  MeasureResult r;
  double returned_at = 0;
  std::thread t([&] {
    r = runner.measure(hang);
    returned_at = now_s();
  });
  // Wait for the job to reach its worker.
  for (int i = 0; i < 500 && runner.worker_pids().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const double cancelled_at = now_s();
  EXPECT_TRUE(runner.cancel(77));
  t.join();
  // The cancel ended it (its compile deadline is 30 s away); how soon is reported.
  EXPECT_EQ(r.error, MeasureError::kTimeout);
  EXPECT_CONTAINS(r.error_message, "cancelled by the caller");
  EXPECT_GE(returned_at, cancelled_at);
  RecordProperty("cancel_latency_ms", std::to_string((returned_at - cancelled_at) * 1e3));
  EXPECT_TRUE(process_gone(pid_t(r.provenance.worker_pid)));
  EXPECT_FALSE(runner.cancel(77));  // no longer in flight

  MeasureRequest q = request();
  q.program = "input A: f32[4]\nB[i] = A[i] +* 2\n";
  EXPECT_EQ(runner.measure(q).error, MeasureError::kInstantiation);
}

TEST(WorkerIsolationTest, ShutdownLeavesNoChildProcesses) {
  std::vector<pid_t> pids;
  {
    Runner runner(runner_options(2));
    MeasureRequest q = request();
    q.program = "input A: f32[4]\nB[i] = A[i] +* 2\n";
    std::thread other([&] { runner.measure(q); });
    runner.measure(q);
    other.join();
    pids = runner.worker_pids();
    ASSERT_FALSE(pids.empty());
    for (pid_t p : pids) EXPECT_FALSE(process_gone(p));
    EXPECT_FALSE(children_of(getpid(), kCli).empty());
    runner.shutdown();
    MeasureResult after = runner.measure(q);
    EXPECT_EQ(after.error, MeasureError::kWorkerLost);
    EXPECT_CONTAINS(after.error_message, "shut down");
  }
  // Reaped, not zombies: the /proc entries are gone altogether.
  for (pid_t p : pids) EXPECT_NE(::kill(p, 0), 0) << "worker " << p << " survived shutdown";
  EXPECT_TRUE(children_of(getpid()).empty());
}

TEST(WorkerIsolationTest, ShutdownKillsAJobInFlight) {
  auto runner = std::make_unique<Runner>(runner_options());
  MeasureRequest hang = request(TestFault::kHangInCompile);
  hang.settings.compile_timeout_s = 30;
  MeasureResult r;
  std::thread t([&] { r = runner->measure(hang); });
  for (int i = 0; i < 500 && runner->worker_pids().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const double t0 = now_s();
  runner.reset();  // the destructor shuts down
  t.join();
  RecordProperty("shutdown_ms", std::to_string((now_s() - t0) * 1e3));
  // The shutdown ended it (its compile deadline is 30 s away).
  EXPECT_EQ(r.error, MeasureError::kTimeout);
  EXPECT_CONTAINS(r.error_message, "cancelled");
  EXPECT_TRUE(children_of(getpid()).empty());
}

// ---- workers that are not workers ---------------------------------------------------------

TEST(WorkerIsolationTest, AWorkerThatDoesNotStartIsWorkerLost) {
  RunnerOptions o = runner_options();
  o.worker_binary = "/bin/true";
  Runner runner(o);
  MeasureResult r = runner.measure(request());
  EXPECT_EQ(r.error, MeasureError::kWorkerLost);
  EXPECT_CONTAINS(r.error_message, "did not start");

  RunnerOptions missing = runner_options();
  missing.worker_binary = "/nonexistent/tensorgym";
  Runner nobody(missing);
  MeasureResult m = nobody.measure(request());
  EXPECT_EQ(m.error, MeasureError::kWorkerLost);
  EXPECT_CONTAINS(m.error_message, "/nonexistent/tensorgym");
}

TEST(WorkerIsolationTest, AWorkerThatBreaksTheProtocolIsWorkerLost) {
  // Says hello properly, reads the request's header, then answers with garbage.
  const std::string script = write_temp("liar.sh",
                                        "#!/bin/sh\n"
                                        "printf 'TG\\001\\001\\000\\000\\000\\000' >&3\n"
                                        "head -c 8 <&3 >/dev/null\n"
                                        "printf 'garbage!' >&3\n"
                                        "echo 'about to lie' >&2\n"
                                        "exec sleep 60\n",
                                        /*executable=*/true);
  RunnerOptions o = runner_options();
  o.worker_binary = script;
  Runner runner(o);
  const double t0 = now_s();
  MeasureResult r = runner.measure(request());
  EXPECT_EQ(r.error, MeasureError::kWorkerLost) << r.error_message;
  EXPECT_CONTAINS(r.error_message, "bad frame magic");
  EXPECT_LT(now_s() - t0, 30.0);  // a safety bound: not the script's 60 s sleep
  runner.shutdown();
  std::filesystem::remove(script);
  EXPECT_TRUE(children_of(getpid()).empty());
}

// ---- workers die with their parent --------------------------------------------------------

TEST(WorkerIsolationTest, KillingTheParentKillsItsWorker) {
  const std::string program = write_temp("gemm32.tg", kGemm32);
  std::vector<std::string> args = {
      kCli, "eval", "--program", program, "--test-fault", "hang-in-compile", "--compile-timeout", "60"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t parent = -1;
  ASSERT_EQ(posix_spawn(&parent, kCli, nullptr, nullptr, argv.data(), environ), 0);

  std::vector<pid_t> workers;
  for (int i = 0; i < 500 && workers.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    workers = children_of(parent, kCli);
  }
  ASSERT_EQ(workers.size(), 1u) << "the eval process never started its worker";
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let it get to the hang

  ASSERT_EQ(::kill(parent, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(parent, &status, 0), parent);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_TRUE(wait_until_gone(workers[0], 3.0)) << "worker " << workers[0] << " outlived its parent";
  std::filesystem::remove(program);
}

// ---- tensorgym eval ---------------------------------------------------------------------

google::protobuf::Struct parse_json(const std::string& text) {
  google::protobuf::Struct s;
  const auto status = google::protobuf::util::JsonStringToMessage(text, &s);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << text;
  return s;
}

// Needs the LLVM backend for "correct": true.
TEST(EvalCommandTest, JsonOutputParsesAndHasTheKeys) {
  const std::string program = write_temp("eval.tg", kGemm32);
  std::string out;
  const int rc = run_capture({kCli, "eval", "--program", program, "--schedule", "split(C.j, 8, jo, ji)", "--json",
                              "--repeat", "3", "--min-repeat-ms", "2", "--threads", "1", "--seed", "5"},
                             &out);
  google::protobuf::Struct j = parse_json(out);
  const auto& f = j.fields();
  for (const char* key : {"runtime_s", "gflops", "compile_ms", "correct", "threads", "error", "error_message",
                          "provenance", "checked_points"}) {
    EXPECT_TRUE(f.count(key)) << "missing key " << key << " in " << out;
  }
  ASSERT_EQ(rc, 0) << out;
  ASSERT_TRUE(f.count("runtime_s") && f.at("runtime_s").has_struct_value()) << out;
  const auto& rt = f.at("runtime_s").struct_value().fields();
  for (const char* key : {"median", "min", "max", "cv"}) EXPECT_TRUE(rt.count(key)) << key;
  EXPECT_GT(rt.at("median").number_value(), 0);
  EXPECT_LE(rt.at("min").number_value(), rt.at("median").number_value());
  EXPECT_EQ(rt.at("repeat").number_value(), 3);
  EXPECT_GT(f.at("gflops").number_value(), 0);
  EXPECT_TRUE(f.at("correct").bool_value());
  EXPECT_EQ(f.at("threads").number_value(), 1);
  EXPECT_EQ(f.at("error").kind_case(), google::protobuf::Value::kNullValue);
  const auto& prov = f.at("provenance").struct_value().fields();
  EXPECT_EQ(prov.at("tensorgym_version").string_value(), TENSORGYM_VERSION);
  EXPECT_EQ(prov.at("settings").struct_value().fields().at("seed").string_value(), "5");
  std::filesystem::remove(program);
}

TEST(EvalCommandTest, JsonNamesTheErrorClassAndExitsNonZero) {
  const std::string program = write_temp("eval_bad.tg", "input A: f32[4]\nB[i] = A[i] +* 2\n");
  std::string out;
  const int rc = run_capture({kCli, "eval", "--program", program, "--json"}, &out);
  EXPECT_NE(rc, 0);
  google::protobuf::Struct j = parse_json(out);
  const auto& f = j.fields();
  ASSERT_TRUE(f.count("error"));
  EXPECT_EQ(f.at("error").string_value(), "INSTANTIATION");
  EXPECT_CONTAINS(f.at("error_message").string_value(), program + ":2:14:");
  EXPECT_FALSE(f.at("correct").bool_value());
  EXPECT_EQ(f.at("runtime_s").kind_case(), google::protobuf::Value::kNullValue);
  std::filesystem::remove(program);
}

// Needs the LLVM backend.
TEST(EvalCommandTest, WrongAnswerIsReportedAndExitsNonZero) {
  const std::string program = write_temp("eval_wrong.tg", kGemm32);
  std::string out;
  const int rc = run_capture({kCli, "eval", "--program", program, "--json", "--test-fault", "corrupt-output"}, &out);
  EXPECT_NE(rc, 0);
  google::protobuf::Struct j = parse_json(out);
  ASSERT_TRUE(j.fields().count("error"));
  EXPECT_EQ(j.fields().at("error").string_value(), "WRONG_ANSWER");
  EXPECT_FALSE(j.fields().at("correct").bool_value());
  std::filesystem::remove(program);
}

// Needs the LLVM backend.
TEST(EvalCommandTest, EmitLlvmPrintsTheModule) {
  const std::string program = write_temp("eval_ir.tg", kGemm32);
  std::string out;
  const int rc = run_capture({kCli, "eval", "--program", program, "--emit", "llvm"}, &out);
  EXPECT_EQ(rc, 0);
  EXPECT_CONTAINS(out, "define");
  std::filesystem::remove(program);
}

TEST(EvalCommandTest, WorkerHasHelp) {
  std::string out;
  EXPECT_EQ(run_capture({kCli, "worker", "--help"}, &out), 0);
  EXPECT_CONTAINS(out, "--fd");
  EXPECT_CONTAINS(out, "--parent-pid");
}

}  // namespace
}  // namespace tensorgym
