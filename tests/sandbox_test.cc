// What a job may take: the lowered program's buffers against the total cap before
// anything compiles.

#include <gtest/gtest.h>

#include <string>

#include "codegen/measure/measure_job.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

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

}  // namespace
}  // namespace tensorgym
