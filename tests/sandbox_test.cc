// What a job may take: the lowered program's buffers against the total cap before
// anything compiles, in-process and with real worker processes (the built
// `tensorgym worker`).

#include <gtest/gtest.h>

#include <string>

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

proto::MeasureRequest request(const std::string& program, const std::string& schedule) {
  proto::MeasureRequest r;
  r.set_program(program);
  r.set_schedule(schedule);
  proto::RunnerSettings* s = r.mutable_settings();
  s->set_repeat(2);
  s->set_min_repeat_ms(1);
  s->set_threads(1);
  s->set_compile_timeout_s(60);
  s->set_run_timeout_s(60);
  return r;
}

proto::MeasureRequest gemm() { return request(kGemm32, "split(C.j, 8, jo, ji)\nvectorize(C.ji)"); }

RunnerOptions runner_options() {
  RunnerOptions o;
  o.worker_binary = kCli;
  return o;
}

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
  proto::MeasureResult r = run_measure_job(request(kBomb, kBombSchedule));
  ASSERT_EQ(r.error(), proto::RESOURCE_EXHAUSTED) << r.error_message();
  EXPECT_CONTAINS(r.error_message(), "max_total_bytes");
  EXPECT_EQ(r.compile_ms(), 0);
}

TEST(MemoryCapTest, TheCacheBombIsResourceExhaustedThroughTheRunner) {
  Runner runner(runner_options());
  proto::MeasureResult r = runner.measure(request(kBomb, kBombSchedule));
  ASSERT_EQ(r.error(), proto::RESOURCE_EXHAUSTED) << r.error_message();
  EXPECT_CONTAINS(r.error_message(), "max_total_bytes");
  EXPECT_EQ(r.compile_ms(), 0);
  proto::MeasureResult next = runner.measure(gemm());
  EXPECT_EQ(next.error(), proto::MEASURE_OK) << next.error_message();
}

}  // namespace
}  // namespace tensorgym
