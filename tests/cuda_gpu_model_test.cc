// The cuda target's GPU model (est_gpu_time): what it ranks, and that it is exact and
// deterministic. Its agreement with measured runtimes needs a GPU (docs/gpu.md).
#include <gtest/gtest.h>

#include <string>

#include "codegen/cuda/gpu_model.h"
#include "codegen/lower/lower.h"
#include "tests/cuda_test_support.h"

namespace tensorgym {
namespace {

using cuda::estimate_gpu_time;
using cuda::GpuSpec;
using cuda_test::scheduled;

const char* kGemm1024 =
    "input A: f32[1024, 1024]\n"
    "input B: f32[1024, 1024]\n"
    "C[i, j] += A[i, k] * B[k, j]\n";

// Blocks of 16 x 32 outputs, one thread each; threadIdx.x runs along `x_loop`.
std::string tiled(const std::string& x_loop, const std::string& y_loop) {
  return "split(C.i, 16, io, ii); split(C.j, 32, jo, ji); reorder(C, io, jo, ii, ji, k); "
         "bind(C.io, blockIdx.y); bind(C.jo, blockIdx.x); bind(C." + y_loop + ", threadIdx.y); bind(C." + x_loop +
         ", threadIdx.x)";
}

RuntimeEstimate estimate(const std::string& program, const std::string& trace, const GpuSpec& gpu = GpuSpec::h100_sxm()) {
  Schedule s = scheduled(program, trace);
  Expected<LoopNest> nest = lower(s, LowerOptions{.allow_thread_binding = true});
  EXPECT_TRUE(nest.ok()) << nest.status().to_string();
  return nest.ok() ? estimate_gpu_time(*nest, gpu) : RuntimeEstimate{};
}

TEST(GpuModel, TheKernelIsTheLaunchTheScheduleBinds) {
  RuntimeEstimate e = estimate(kGemm1024, tiled("ji", "ii"));
  ASSERT_EQ(e.kernels.size(), 1u);
  const KernelEstimate& k = e.kernels[0];
  EXPECT_EQ(k.stage, "C");
  EXPECT_FALSE(k.single_thread);
  EXPECT_EQ(k.blocks, 64 * 32);
  EXPECT_EQ(k.threads_per_block, 16 * 32);
  EXPECT_EQ(k.launches, 1);
  EXPECT_DOUBLE_EQ(k.flops, 2.0 * 1024 * 1024 * 1024);
  EXPECT_GT(k.occupancy, 0);
  EXPECT_LE(k.occupancy, 1);
  EXPECT_GT(e.seconds, 0);
  EXPECT_DOUBLE_EQ(e.seconds, k.seconds);
}

TEST(GpuModel, WorkNoLoopIsBoundToRunsAsOneSlowThread) {
  RuntimeEstimate unbound = estimate(kGemm1024, "");
  ASSERT_EQ(unbound.kernels.size(), 1u);
  EXPECT_TRUE(unbound.kernels[0].single_thread);
  EXPECT_EQ(unbound.kernels[0].threads_per_block, 1);
  RuntimeEstimate bound = estimate(kGemm1024, tiled("ji", "ii"));
  EXPECT_GT(unbound.seconds, 100 * bound.seconds);
}

TEST(GpuModel, CoalescedAccessesBeatStridedOnes) {
  // threadIdx.x along j: B and C are read and written in contiguous runs per warp;
  // along i: every lane touches its own row.
  const double coalesced = estimate(kGemm1024, tiled("ji", "ii")).seconds;
  const double strided = estimate(kGemm1024, tiled("ii", "ji")).seconds;
  EXPECT_LT(coalesced * 2, strided) << coalesced << " vs " << strided;
}

TEST(GpuModel, AFewBlocksLeaveMostSmsIdle) {
  // The same 1024 x 1024 outputs, threadIdx.x along j either way: 4 blocks of 256
  // threads that loop over the rest, or one block per 256 outputs.
  const double few = estimate(kGemm1024,
                              "split(C.i, 256, io, ii); split(C.j, 256, jo, ji); reorder(C, io, ji, ii, jo, k); "
                              "bind(C.io, blockIdx.x); bind(C.ji, threadIdx.x)")
                         .seconds;
  const double many = estimate(kGemm1024,
                               "split(C.j, 256, jo, ji); bind(C.i, blockIdx.y); bind(C.jo, blockIdx.x); "
                               "bind(C.ji, threadIdx.x)")
                          .seconds;
  EXPECT_LT(many * 4, few) << many << " vs " << few;
}

TEST(GpuModel, LoopsAroundAKernelLaunchItAgain) {
  // i stays a host loop: the kernel over j launches once per row.
  RuntimeEstimate e = estimate(kGemm1024, "split(C.j, 128, jo, ji); bind(C.jo, blockIdx.x); bind(C.ji, threadIdx.x)");
  ASSERT_EQ(e.kernels.size(), 1u);
  EXPECT_EQ(e.kernels[0].launches, 1024);
  EXPECT_EQ(e.kernels[0].blocks, 8);
  EXPECT_GE(e.seconds, 1024 * GpuSpec::h100_sxm().launch_overhead_s);
}

TEST(GpuModel, AnAccumulatorStaysInARegisterAcrossTheReduction) {
  // Per warp and k: A[i, k] is one sector (every lane the same address), B[k, j] four
  // (32 lanes x 4 bytes). C[i, j] does not move with k: it is read and written once per
  // thread, not once per k (else it would add 8 bytes per multiply-add), after the
  // store that sets it to zero.
  RuntimeEstimate e = estimate(kGemm1024, tiled("ji", "ii"));
  ASSERT_EQ(e.kernels.size(), 1u);
  const double n3 = 1024.0 * 1024 * 1024, n2 = 1024.0 * 1024;
  EXPECT_DOUBLE_EQ(e.kernels[0].l1_bytes, n3 / 32 * (32 + 128) + 3 * n2 / 32 * 128);
}

TEST(GpuModel, IsDeterministicAndFasterMemoryOnlyHelps) {
  const std::string trace = tiled("ji", "ii");
  RuntimeEstimate a = estimate(kGemm1024, trace);
  RuntimeEstimate b = estimate(kGemm1024, trace);
  EXPECT_EQ(a.seconds, b.seconds);  // bit-exact
  // An H200 is an H100 with faster HBM: never slower.
  EXPECT_LE(estimate(kGemm1024, trace, GpuSpec::h200_sxm()).seconds, a.seconds);
  EXPECT_LE(estimate(kGemm1024, "", GpuSpec::h200_sxm()).seconds, estimate(kGemm1024, "").seconds);
}

TEST(GpuModel, EveryStageIsAKernelOfItsOwn) {
  RuntimeEstimate e = estimate(cuda_test::kTwoStages,
                           "split(B.i, 8, io, ii); bind(B.io, blockIdx.x); bind(B.ii, threadIdx.x); "
                           "split(C.i, 8, io, ii); bind(C.io, blockIdx.x); bind(C.ii, threadIdx.x)");
  ASSERT_EQ(e.kernels.size(), 2u);
  EXPECT_EQ(e.kernels[0].stage, "B");
  EXPECT_EQ(e.kernels[1].stage, "C");
  EXPECT_DOUBLE_EQ(e.seconds, e.kernels[0].seconds + e.kernels[1].seconds);
}

}  // namespace
}  // namespace tensorgym
