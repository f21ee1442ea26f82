// What a job may take and what a worker may do, with real worker processes (the
// built `tensorgym worker`): the lowered program's buffers against the total cap
// before anything compiles, the worker's hard memory limit, and the sandbox (user,
// capabilities, no_new_privs, seccomp) seen from /proc and from a kernel's run phase.
#include "codegen/measure/sandbox.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "codegen/ir/program.h"
#include "codegen/measure/measure_job.h"
#include "codegen/measure/runner.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

const char* const kCli = TENSORGYM_BINARY_DIR "/bin/tensorgym";

// The reproduction: four 1 GiB tensors (the parser's 4 GiB total, exactly at
// the cap) and six top-level cache stages, each another 1 GiB copy.
const char* kBomb =
    "input A: f32[16384, 16384]\n"
    "B[i, j] = A[i, j] * 2.0\n"
    "C[i, j] = B[i, j] + 1.0\n"
    "D[i, j] = C[i, j] * 3.0\n";
const char* kBombSchedule =
    "cache_read(A, B, A_r)\n"
    "cache_write(B, B_w)\n"
    "cache_read(B, C, B_r)\n"
    "cache_write(C, C_w)\n"
    "cache_read(C, D, C_r)\n"
    "cache_write(D, D_w)\n";

const char* kGemm32 =
    "input A: f32[32, 32]\n"
    "input B: f32[32, 32]\n"
    "C[i, j] += A[i, k] * B[k, j]\n";

MeasureRequest request(const std::string& program, const std::string& schedule,
                              TestFault fault = TestFault::kNone) {
  MeasureRequest r;
  r.program = program;
  r.schedule = schedule;
  r.test_fault = fault;
  RunnerSettings* s = &r.settings;
  s->repeat = 2;
  s->min_repeat_ms = 1;
  s->threads = 1;
  s->compile_timeout_s = 60;
  s->run_timeout_s = 60;
  return r;
}

MeasureRequest gemm(TestFault fault = TestFault::kNone) {
  return request(kGemm32, "split(C.j, 8, jo, ji)\nvectorize(C.ji)", fault);
}

RunnerOptions runner_options() {
  RunnerOptions o;
  o.worker_binary = kCli;
  return o;
}

// "Key:\tvalue" lines of /proc/PID/status.
std::map<std::string, std::string> proc_status(pid_t pid) {
  std::map<std::string, std::string> out;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t value = line.find_first_not_of(" \t", colon + 1);
    out[line.substr(0, colon)] = value == std::string::npos ? "" : line.substr(value);
  }
  return out;
}

bool built_with_seccomp(const std::string& sandbox) { return sandbox.find("no seccomp filter") == std::string::npos; }

// ---- the lowered program's buffers against max_total_bytes ---------------------------

TEST(MemoryCapTest, TheCacheBombIsRefusedWhenLowering) {
  // Without the cache stages the program is at the cap, and lowers.
  Expected<InstantiatedJob> plain = instantiate_job(kBomb, "");
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();

  Expected<InstantiatedJob> bomb = instantiate_job(kBomb, kBombSchedule);
  ASSERT_FALSE(bomb.ok());
  EXPECT_EQ(bomb.status().code(), StatusCode::kResourceExhausted);
  EXPECT_CONTAINS(bomb.status().message(), "lowering: ");
  EXPECT_CONTAINS(bomb.status().message(), "10737418240 bytes together");
  EXPECT_CONTAINS(bomb.status().message(), "over the limit of 4294967296 bytes (max_total_bytes)");
  EXPECT_CONTAINS(bomb.status().message(), "A (input, 1073741824 bytes)");
}

TEST(MemoryCapTest, EachCacheStageCountsTowardsTheTotal) {
  // One cache stage more than the cap allows: 4 GiB of program tensors plus a copy.
  Expected<InstantiatedJob> job = instantiate_job(kBomb, "cache_read(A, B, A_r)");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), StatusCode::kResourceExhausted);
  EXPECT_CONTAINS(job.status().message(), "A_r (allocated, 1073741824 bytes)");
}

TEST(MemoryCapTest, TheCacheBombIsResourceExhaustedInProcessBeforeCompiling) {
  MeasureResult r = run_measure_job(request(kBomb, kBombSchedule));
  ASSERT_EQ(r.error, MeasureError::kResourceExhausted) << r.error_message;
  EXPECT_CONTAINS(r.error_message, "max_total_bytes");
  EXPECT_EQ(r.compile_ms, 0);
}

TEST(MemoryCapTest, TheCacheBombIsResourceExhaustedThroughTheRunner) {
  Runner runner(runner_options());
  MeasureResult r = runner.measure(request(kBomb, kBombSchedule));
  ASSERT_EQ(r.error, MeasureError::kResourceExhausted) << r.error_message;
  EXPECT_CONTAINS(r.error_message, "max_total_bytes");
  EXPECT_EQ(r.compile_ms, 0);
  // Nothing was allocated: the same worker measures the next job.
  MeasureResult next = runner.measure(gemm());
  EXPECT_EQ(next.error, MeasureError::kOk) << next.error_message;
  EXPECT_EQ(next.provenance.worker_pid, r.provenance.worker_pid);
}

// ---- the worker's hard memory limit --------------------------------------------------

TEST(WorkerMemoryLimitTest, AJobPastTheLimitIsResourceExhaustedAndTheNextRunsOnAFreshWorker) {
  if (!memory_limit_supported()) GTEST_SKIP() << "a sanitizer build: workers run without a memory limit";
  Runner runner(runner_options());
  ASSERT_GT(runner.options().worker_memory_limit_bytes, ProgramLimits{}.max_total_bytes);
  MeasureResult bomb = runner.measure(gemm(TestFault::kAllocateInRun));
  ASSERT_EQ(bomb.error, MeasureError::kResourceExhausted) << bomb.error_message;
  EXPECT_CONTAINS(bomb.error_message, "the job passed the worker's memory limit while running");
  EXPECT_CONTAINS(bomb.error_message,
                  "limit of " + std::to_string(runner.options().worker_memory_limit_bytes) + " bytes (RLIMIT_DATA)");
  EXPECT_EQ(runner.stats().workers_lost, 1);

  MeasureResult next = runner.measure(gemm());
  ASSERT_EQ(next.error, MeasureError::kOk) << next.error_message;
  EXPECT_NE(next.provenance.worker_pid, bomb.provenance.worker_pid);
}

TEST(WorkerMemoryLimitTest, TheWorkerRunsUnderTheLimitItWasGiven) {
  if (!memory_limit_supported()) GTEST_SKIP() << "a sanitizer build: workers run without a memory limit";
  RunnerOptions options = runner_options();
  options.worker_memory_limit_bytes = int64_t(6) << 30;
  Runner runner(options);
  ASSERT_TRUE(runner.start_workers().ok());
  EXPECT_CONTAINS(runner.worker_sandbox(), "memory limit 6442450944 bytes (RLIMIT_DATA)");
  const pid_t pid = runner.worker_pids().at(0);
  // prlimit() on another process needs CAP_SYS_RESOURCE; /proc/PID/limits does not.
  std::ifstream limits("/proc/" + std::to_string(pid) + "/limits");
  std::string data;
  for (std::string line; std::getline(limits, line);)
    if (line.rfind("Max data size", 0) == 0) data = line;
  std::istringstream fields(data.substr(std::string("Max data size").size()));
  std::string soft, hard;
  fields >> soft >> hard;
  EXPECT_EQ(soft, "6442450944") << data;
  EXPECT_EQ(hard, "6442450944") << data;
  // A parallel kernel still runs: the runtime's threads fit under it.
  MeasureRequest parallel = gemm();
  parallel.schedule = "parallel(C.i)";
  parallel.settings.threads = 4;
  MeasureResult r = runner.measure(parallel);
  EXPECT_EQ(r.error, MeasureError::kOk) << r.error_message;
}

// ---- the sandbox ---------------------------------------------------------------------

TEST(SandboxTest, ALiveWorkerHasNoPrivilegesAndSaysWhatItRunsUnder) {
  Runner runner(runner_options());
  ASSERT_EQ(runner.measure(gemm()).error, MeasureError::kOk);  // sandboxed, LLVM initialized, threads started
  const std::string sandbox = runner.worker_sandbox();
  EXPECT_CONTAINS(sandbox, "no capabilities, no_new_privs");
  const pid_t pid = runner.worker_pids().at(0);
  std::map<std::string, std::string> status = proc_status(pid);
  EXPECT_EQ(status["NoNewPrivs"], "1");
  EXPECT_EQ(status["CapEff"], "0000000000000000");
  EXPECT_EQ(status["CapPrm"], "0000000000000000");
  EXPECT_EQ(status["CapAmb"], "0000000000000000");
  if (built_with_seccomp(sandbox)) {
    EXPECT_EQ(status["Seccomp"], "2");  // SECCOMP_MODE_FILTER
  } else {
    ADD_FAILURE() << "built without libseccomp: " << sandbox;
  }
  if (geteuid() == 0) {
    std::istringstream uids(status["Uid"]);
    int real = -1, effective = -1;
    uids >> real >> effective;
    EXPECT_NE(real, 0);
    EXPECT_NE(effective, 0);
    EXPECT_CONTAINS(sandbox, "user nobody");
  }
}

TEST(SandboxTest, ExecAndSocketFromTheRunPhaseAreDenied) {
  Runner runner(runner_options());
  MeasureResult r = runner.measure(gemm(TestFault::kExecInRun));
  if (!built_with_seccomp(runner.worker_sandbox())) GTEST_SKIP() << runner.worker_sandbox();
  ASSERT_EQ(r.error, MeasureError::kRuntimeCrash) << r.error_message;
  EXPECT_CONTAINS(r.error_message, "execve: Operation not permitted; socket: Operation not permitted");
  // The worker reported it and carries on.
  MeasureResult next = runner.measure(gemm());
  ASSERT_EQ(next.error, MeasureError::kOk) << next.error_message;
  EXPECT_EQ(next.provenance.worker_pid, r.provenance.worker_pid);
}

}  // namespace
}  // namespace tensorgym
