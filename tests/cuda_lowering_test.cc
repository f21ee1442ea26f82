// The cuda target without a GPU: its registration, lowering with bound loops, each
// legality rule of its checks (codegen/lower/gpu_checks.h) with the error it gives,
// and GPU schedules run by the reference interpreter against the unscheduled program.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "codegen/backend/registry.h"
#include "codegen/interp/compare.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/interp/interpreter.h"
#include "codegen/ir/ir_equality.h"
#include "codegen/ir/ir_printer.h"
#include "codegen/lower/gpu_checks.h"
#include "codegen/lower/gpu_launch.h"
#include "codegen/lower/lower.h"
#include "codegen/measure/measure_job.h"
#include "codegen/schedule/schedule.h"
#include "support/random.h"
#include "tests/cuda_test_support.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

using namespace ir_build;
using namespace cuda_test;

// Lowering for cuda fails with FAILED_PRECONDITION and a message containing `part`.
void expect_rejected(const std::string& program, const std::string& trace, const std::string& part) {
  Expected<LoopNest> nest = lower(scheduled(program, trace), cuda_backend().lowering());
  ASSERT_FALSE(nest.ok()) << trace << " lowered:\n" << to_string(nest->body);
  EXPECT_EQ(nest.status().code(), StatusCode::kFailedPrecondition) << nest.status().to_string();
  EXPECT_CONTAINS(nest.status().message(), part);
}

// The cuda-lowered nest computes what the unscheduled program computes.
void expect_matches(const Schedule& s) {
  Expected<LoopNest> ref = lower(Schedule(s.program_ptr()));
  Expected<LoopNest> got = lower(s, cuda_backend().lowering());
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  ASSERT_TRUE(got.ok()) << s.trace().to_string() << ": " << got.status().to_string();
  EXPECT_EQ(got->target, "cuda");
  std::vector<HostBuffer> in = make_random_inputs(s.program(), 11);
  std::vector<HostBuffer> expected = make_output_buffers(*ref), actual = make_output_buffers(*got);
  ASSERT_TRUE(interpret(*ref, const_pointers(in), pointers(expected)).ok());
  Status st = interpret(*got, const_pointers(in), pointers(actual));
  ASSERT_TRUE(st.ok()) << st.to_string();
  for (size_t i = 0; i < expected.size(); ++i) {
    Comparison c = compare_buffers(expected[i], actual[i], Tolerance{1e-4, 1e-5});
    EXPECT_TRUE(c.match) << s.trace().to_string() << ": " << c.describe() << "\n" << to_string(got->body);
  }
}

// ---- the target ----------------------------------------------------------------------

TEST(CudaTarget, IsRegisteredAndSaysWhatItCannotDoYet) {
  const TargetInfo& t = cuda_backend().target();
  EXPECT_EQ(t.name, "cuda");
  EXPECT_EQ(t.triple, "nvptx64-nvidia-cuda");
  EXPECT_EQ(t.device, "sm_90");
  EXPECT_FALSE(t.compiler_version.empty());
  EXPECT_FALSE(t.fingerprint.empty());
  EXPECT_NE(t.fingerprint, host_backend().target().fingerprint);
  // It runs where the driver loads and a GPU exists; elsewhere it says there is none.
  EXPECT_EQ(t.can_run, t.run_unavailable.empty());
  if (!t.can_run) EXPECT_CONTAINS(t.run_unavailable, "no GPU on this machine: ");
  EXPECT_FALSE(t.has_cost_model);
  EXPECT_EQ(cuda_backend().machine_model(), nullptr);
  EXPECT_TRUE(cuda_backend().lowering().thread_binding);
  EXPECT_FALSE(host_backend().lowering().thread_binding);
  const std::vector<std::string> names = backend_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "cuda"), names.end());
}

TEST(CudaTarget, CompilesANestLoweredForItAndNoOther) {
  Expected<LoopNest> nest = lower(scheduled(kGemm, kGpuGemm), cuda_backend().lowering());
  ASSERT_TRUE(nest.ok()) << nest.status().to_string();
  auto compiled = cuda_backend().compile(*nest);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  EXPECT_EQ((*compiled)->kernels().size(), 1u);
  // A nest not lowered for it is refused.
  Expected<LoopNest> generic = lower(scheduled(kGemm, ""));
  ASSERT_TRUE(generic.ok());
  EXPECT_EQ(cuda_backend().compile(*generic).status().code(), StatusCode::kFailedPrecondition);
}

TEST(CudaTarget, AMeasurementIsACompileErrorAndABrokenRuleAnInstantiationError) {
  MeasureRequest request;
  request.program = kGemm;
  request.schedule = kGpuGemm;
  request.target = "cuda";
  if (cuda_backend().target().can_run) GTEST_SKIP() << "a GPU runs the kernels here (tests/cuda_runner_test.cc)";
  MeasureResult r = run_measure_job(request);
  EXPECT_EQ(r.error, MeasureError::kCompile) << r.error_message;
  EXPECT_CONTAINS(r.error_message, "the cuda target cannot be measured here (no GPU on this machine: ");
  EXPECT_CONTAINS(r.error_message, "): its code was generated");
  EXPECT_EQ(r.target, "cuda");
  EXPECT_EQ(r.provenance.device, "sm_90");
  request.schedule = "";
  r = run_measure_job(request);
  EXPECT_EQ(r.error, MeasureError::kInstantiation) << r.error_message;
  EXPECT_CONTAINS(r.error_message, "stage C runs outside any GPU kernel");
}

TEST(CudaTarget, ListsItsPassesAfterTheGenericOnes) {
  const std::vector<std::string> names = lowering_pass_names(cuda_backend().lowering());
  const std::vector<std::string> expected = {
      "build_loop_nest",   "auto_unroll",      "simplify",         "limit_code_size",    "check_gpu_loops",
      "check_gpu_scopes",  "check_gpu_kernels", "check_gpu_stores", "insert_gpu_barriers"};
  EXPECT_EQ(names, expected);
  // The lowering log reports each of them.
  std::vector<std::string> logged;
  LowerOptions options;
  options.after_pass = [&](std::string_view pass, const LoopNest&) { logged.emplace_back(pass); };
  ASSERT_TRUE(lower(scheduled(kGemm, kGpuGemm), cuda_backend().lowering(), options).ok());
  EXPECT_EQ(logged, expected);
}

// ---- lowering a GPU schedule ---------------------------------------------------------

TEST(CudaLowering, TheNestShowsEachBoundLoopWithItsTag) {
  Expected<LoopNest> nest = lower(scheduled(kGemm, kGpuGemm), cuda_backend().lowering());
  ASSERT_TRUE(nest.ok()) << nest.status().to_string();
  const std::string text = to_string(nest->body);
  EXPECT_CONTAINS(text, "for C.io in 0..4 bound to blockIdx.y");
  EXPECT_CONTAINS(text, "for C.jo in 0..5 bound to blockIdx.x");
  EXPECT_CONTAINS(text, "for C.ii in 0..16 bound to threadIdx.y");
  EXPECT_CONTAINS(text, "for C.ji in 0..8 bound to threadIdx.x");
  EXPECT_CONTAINS(text, "for C.k in 0..48 {");
  // One kernel: 5 x 4 blocks of 8 x 16 threads.
  int kernels = 0;
  for_each_kernel(nest->body, [&](const For* kernel) {
    ++kernels;
    const GpuLaunch launch = launch_of(kernel);
    EXPECT_EQ(launch.describe(), "blocks 5 x 4 x 1, threads 8 x 16 x 1");
    EXPECT_EQ(launch.threads_per_block(), 128);
  });
  EXPECT_EQ(kernels, 1);
}

TEST(CudaLowering, TheGpuGemmMatchesTheUnscheduledProgram) { expect_matches(scheduled(kGemm, kGpuGemm)); }

TEST(CudaLowering, PartialTilesAndALocalAccumulatorMatch) {
  // 64 / 12 and 40 / 16 leave partial tiles (guards); CL is each thread's accumulator.
  expect_matches(scheduled(kGemm,
                           "split(C.i, 12, io, ii)\nsplit(C.j, 16, jo, ji)\nreorder(C, io, jo, ii, ji)\n"
                           "bind(C.io, blockIdx.x)\nbind(C.jo, blockIdx.y)\nbind(C.ii, threadIdx.y)\n"
                           "bind(C.ji, threadIdx.x)\ncache_write(C, CL)\ncompute_at(CL, C.ji)"));
}

TEST(CudaLowering, AProducerComputedPerBlockRunsInEveryThreadAndMatches) {
  // B is computed inside the block loop, outside the thread loop: each thread computes
  // the block's rows of B itself (a private buffer), then its own outputs.
  expect_matches(scheduled(kTwoStages,
                           "split(C.i, 8, io, ii)\nbind(C.io, blockIdx.x)\nbind(C.ii, threadIdx.x)\n"
                           "compute_at(B, C.io)"));
}

TEST(CudaLowering, ProducersAtRootAreKernelsOfTheirOwn) {
  const Schedule s = scheduled(kTwoStages,
                               "bind(B.i, blockIdx.x)\nbind(B.j, threadIdx.x)\n"
                               "bind(C.i, blockIdx.x)\nbind(C.j, threadIdx.x)");
  Expected<LoopNest> nest = lower(s, cuda_backend().lowering());
  ASSERT_TRUE(nest.ok()) << nest.status().to_string();
  int kernels = 0;
  for_each_kernel(nest->body, [&](const For*) { ++kernels; });
  EXPECT_EQ(kernels, 2);
  expect_matches(s);
}

// Random GPU tilings of the GEMM: tile sizes that divide or not, block and thread
// axes either way round, the reduction split or not, a local accumulator or not.
TEST(CudaLowering, RandomGpuTilingsMatchTheUnscheduledProgram) {
  Rng rng(2024);
  const int64_t factors[] = {1, 2, 3, 4, 5, 8, 12, 16, 32};
  for (int trial = 0; trial < 24; ++trial) {
    const int64_t fi = factors[rng.range(0, 8)], fj = factors[rng.range(0, 8)];
    const bool swap = rng.range(0, 1) == 1, split_k = rng.range(0, 1) == 1, local = rng.range(0, 1) == 1;
    std::string t = fmt::format("split(C.i, {}, io, ii)\nsplit(C.j, {}, jo, ji)\n", fi, fj);
    t += split_k ? "split(C.k, 4, ko, ki)\nreorder(C, io, jo, ii, ji, ko, ki)\n" : "reorder(C, io, jo, ii, ji, k)\n";
    t += fmt::format("bind(C.io, blockIdx.{})\nbind(C.jo, blockIdx.{})\n", swap ? "y" : "x", swap ? "x" : "y");
    t += fmt::format("bind(C.ii, threadIdx.{})\nbind(C.ji, threadIdx.{})", swap ? "y" : "x", swap ? "x" : "y");
    if (local) t += "\ncache_write(C, CL)\ncompute_at(CL, C.ji)";
    SCOPED_TRACE(t);
    expect_matches(scheduled(kGemm, t));
  }
}

TEST(CudaLowering, TheCpuTargetStillRejectsABoundLoop) {
  Expected<LoopNest> nest = lower(scheduled(kGemm, kGpuGemm), host_backend().lowering());
  ASSERT_FALSE(nest.ok());
  EXPECT_EQ(nest.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_CONTAINS(nest.status().message(), "does not support thread binding");
  // Also when the nest was lowered with binding allowed, then given to the cpu's passes.
  LowerOptions gpu;
  gpu.allow_thread_binding = true;
  Expected<LoopNest> generic = lower(scheduled(kGemm, kGpuGemm), gpu);
  ASSERT_TRUE(generic.ok());
  Expected<LoopNest> cpu = lower_for_target(*generic, host_backend().lowering());
  ASSERT_FALSE(cpu.ok());
  EXPECT_CONTAINS(cpu.status().message(), "loop C.io is bound to blockIdx.y; the cpu target does not support");
}

// ---- what a GPU cannot run -----------------------------------------------------------

TEST(CudaChecks, AtMost1024ThreadsPerBlock) {
  // 32 x 40 = 1280 threads.
  expect_rejected(kGemm,
                  "split(C.i, 32, io, ii)\nreorder(C, io, ii, j, k)\nbind(C.io, blockIdx.x)\n"
                  "bind(C.ii, threadIdx.y)\nbind(C.j, threadIdx.x)",
                  "has 1280 threads per block (threadIdx.x 40 x .y 32 x .z 1); a block has at most 1024");
  // 16 x 40 = 640 is fine.
  EXPECT_TRUE(lower(scheduled(kGemm,
                              "split(C.i, 16, io, ii)\nreorder(C, io, ii, j, k)\nbind(C.io, blockIdx.x)\n"
                              "bind(C.ii, threadIdx.y)\nbind(C.j, threadIdx.x)"),
                    cuda_backend().lowering())
                  .ok());
}

TEST(CudaChecks, EachDimensionWithinCudasLimit) {
  expect_rejected("input A: f32[128]\nB[i] = A[i] + 1.0\n", "bind(B.i, threadIdx.z)",
                  "launches 128 threads along threadIdx.z; CUDA allows at most 64");
}

TEST(CudaChecks, BlockLoopsGoOutsideThreadLoops) {
  expect_rejected(kGemm, "bind(C.i, threadIdx.x)\nbind(C.j, blockIdx.x)",
                  "loop C.j is bound to blockIdx.x inside loop C.i, bound to threadIdx.x: blocks hold threads");
}

TEST(CudaChecks, ATagIsNotBoundInsideALoopBoundToIt) {
  // B is computed inside C's thread loop and binds the same dimension again.
  expect_rejected(kTwoStages,
                  "split(C.i, 8, io, ii)\nbind(C.io, blockIdx.x)\nbind(C.ii, threadIdx.x)\n"
                  "compute_at(B, C.ii)\nbind(B.j, threadIdx.x)",
                  "loop B.j is bound to threadIdx.x inside loop C.ii, already bound to threadIdx.x");
}

TEST(CudaChecks, AParallelLoopShouldBeBoundInstead) {
  expect_rejected(kGemm, "split(C.i, 16, io, ii)\nbind(C.ii, threadIdx.x)\nparallel(C.io)",
                  "loop C.io is parallel; the cuda target has no CPU threads to run it on: bind it to "
                  "blockIdx/threadIdx instead");
}

TEST(CudaChecks, AVectorizedLoopIsInnermost) {
  // Checked on the nest: a vectorize primitive never leaves a loop inside its loop,
  // but the target's rule does not depend on that.
  const Stmt body =
      ir_build::Loop("C.i", 4,
                     ir_build::Loop("C.j", 4, ir_build::Loop("C.k", 2, St("C", V("C.i") * I(4) + V("C.j"), F(1))),
                                    ForKind::kVectorized));
  const Stmt kernel = For::make("C.b", I(0), I(2), ForKind::kSerial, body, "blockIdx.x");
  Status st = check_gpu_loops(kernel);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_CONTAINS(st.message(),
                  "loop C.k is inside vectorized loop C.j; on the cuda target a vectorized loop "
                  "must be innermost");
  // Innermost, it passes.
  const Stmt inner = For::make(
      "C.b", I(0), I(2), ForKind::kSerial,
      ir_build::Loop("C.i", 4,
                     ir_build::Loop("C.j", 4, St("C", V("C.i") * I(4) + V("C.j"), F(1)), ForKind::kVectorized)),
      "blockIdx.x");
  EXPECT_TRUE(check_gpu_loops(inner).ok());
}

TEST(CudaChecks, AStageWithNoBoundLoopWouldRunOnOneThread) {
  expect_rejected(kGemm, "",
                  "stage C runs outside any GPU kernel: none of the loops around its store (C.i, C.j) is bound to "
                  "blockIdx or threadIdx, so it would run on a single GPU thread; bind it");
  // One stage bound, the other not.
  expect_rejected(kTwoStages, "bind(C.i, blockIdx.x)\nbind(C.j, threadIdx.x)", "stage B runs outside any GPU kernel");
}

TEST(CudaChecks, AReductionLoopCannotBeBound) {
  Schedule s = scheduled(kGemm, "");
  Status st = s.apply_text("bind(C.k, threadIdx.x)");
  ASSERT_FALSE(st.ok());
  EXPECT_CONTAINS(st.message(), "cannot bind reduction loop C.k");
}

TEST(CudaChecks, AReductionAcrossThreadsIsARace) {
  // Built by hand (bind() refuses reduction loops): every thread adds into C[b].
  const Stmt body =
      For::make("C.b", I(0), I(4), ForKind::kSerial,
                For::make("C.t", I(0), I(32), ForKind::kSerial,
                          St("C", V("C.b"), Ld("C", V("C.b")) + Ld("A", V("C.b") * I(32) + V("C.t"))), "threadIdx.x"),
                "blockIdx.x");
  Status st = check_gpu_stores(body);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_CONTAINS(st.message(),
                  "stage C accumulates into one element from several GPU threads (its index does not "
                  "depend on loop C.t, bound to threadIdx.x): a reduction across threads would race");
}

TEST(CudaChecks, AStoreEveryThreadMakesIsARace) {
  // X is written per thread; C[b] by every thread of the block.
  const Stmt body = For::make(
      "C.b", I(0), I(4), ForKind::kSerial,
      Seq({For::make("X.t", I(0), I(8), ForKind::kSerial, St("X", V("C.b") * I(8) + V("X.t"), F(1)), "threadIdx.x"),
           St("C", V("C.b"), F(2))}),
      "blockIdx.x");
  Status st = check_gpu_stores(body);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_CONTAINS(st.message(),
                  "every GPU thread along threadIdx.x writes the same elements of C (it is inside no "
                  "loop bound to threadIdx.x, which the kernel launches 8 times)");
}

TEST(CudaChecks, ABufferPrivateToAThreadIsNotFilledByManyThreads) {
  expect_rejected(kTwoStages,
                  "split(C.i, 8, io, ii)\nbind(C.io, blockIdx.x)\nbind(C.ii, threadIdx.x)\n"
                  "compute_at(B, C.io)\nbind(B.j, threadIdx.x)",
                  "stage B is split across GPU threads (loop B.j is bound to threadIdx.x) but its buffer is allocated "
                  "inside the kernel");
}

// gpu_tile is the split, reorder and binds it stands for: the same nest, the same
// results; too many threads a block is refused before anything is applied.
TEST(CudaLowering, GpuTileIsItsSplitsReorderAndBinds) {
  const Schedule sugar = scheduled(kGemm, "gpu_tile(C.j, C.i, 8, 16, jo, io, ji, ii)");
  const Schedule spelled = scheduled(kGemm,
                                     "split(C.j, 8, jo, ji); split(C.i, 16, io, ii); reorder(C, io, jo, ii, ji)\n"
                                     "bind(C.jo, blockIdx.x); bind(C.io, blockIdx.y); bind(C.ji, threadIdx.x); "
                                     "bind(C.ii, threadIdx.y)");
  Expected<LoopNest> a = lower(sugar, cuda_backend().lowering()), b = lower(spelled, cuda_backend().lowering());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(to_string(a->body), to_string(b->body));
  expect_matches(sugar);
  Expected<Program> p = parse_program(kGemm);
  ASSERT_TRUE(p.ok());
  Expected<Schedule> big =
      Schedule::from_text(std::make_shared<const Program>(std::move(*p)), "gpu_tile(C.j, C.i, 64, 32, jo, io, ji, ii)");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(big.status().message(), "64 x 32 = 2048 threads a block; a block has at most 1024");
}

// storage_align pads a shared tile's rows (bank conflicts: rows of 16 floats start 17
// apart: 16 x 17 elements), and the nest still computes the product.
TEST(CudaLowering, StorageAlignPadsASharedTile) {
  const std::string tiles =
      "split(C.i, 16, io, ii); split(C.j, 8, jo, ji); split(C.k, 16, ko, ki)\n"
      "reorder(C, io, jo, ko, ii, ji, ki)\n"
      "bind(C.io, blockIdx.y); bind(C.jo, blockIdx.x); bind(C.ii, threadIdx.y); bind(C.ji, threadIdx.x)\n"
      "cache_read(A, C, AS, shared); compute_at(AS, C.ko)\n"
      "split(AS.ax1, 8, o, t); reorder(AS, o, ax0, t); bind(AS.ax0, threadIdx.y); bind(AS.t, threadIdx.x)\n";
  Expected<LoopNest> plain = lower(scheduled(kGemm, tiles), cuda_backend().lowering());
  Expected<LoopNest> padded = lower(scheduled(kGemm, tiles + "storage_align(AS.ax0, 16, 1)"), cuda_backend().lowering());
  ASSERT_TRUE(plain.ok() && padded.ok()) << plain.status().to_string() << padded.status().to_string();
  EXPECT_CONTAINS(to_string(plain->body), "allocate AS: f32[256] in shared");
  EXPECT_CONTAINS(to_string(padded->body), "allocate AS: f32[272] in shared");
  expect_matches(scheduled(kGemm, tiles + "storage_align(AS.ax0, 16, 1)"));
}

TEST(CudaLowering, TheTagIsPartOfALoop) {
  const Stmt body = St("C", V("t"), F(1));
  const Stmt bound = For::make("t", I(0), I(8), ForKind::kSerial, body, "threadIdx.x");
  const Stmt other = For::make("t", I(0), I(8), ForKind::kSerial, body, "threadIdx.y");
  const Stmt plain = For::make("t", I(0), I(8), ForKind::kSerial, body);
  EXPECT_FALSE(structural_equal(bound, other));
  EXPECT_FALSE(structural_equal(bound, plain));
  EXPECT_TRUE(structural_equal(bound, For::make("t", I(0), I(8), ForKind::kSerial, body, "threadIdx.x")));
  EXPECT_NE(structural_hash(bound), structural_hash(plain));
  EXPECT_NE(structural_hash(bound), structural_hash(other));
  EXPECT_EQ(to_string(bound), "for t in 0..8 bound to threadIdx.x {\n  C[t] = 1.0\n}\n");
}

TEST(CudaChecks, LaunchTagsParseAndHaveCudasLimits) {
  EXPECT_EQ(parse_gpu_tag("blockIdx.y").dim, GpuDim::kBlock);
  EXPECT_EQ(parse_gpu_tag("blockIdx.y").axis, 1);
  EXPECT_EQ(parse_gpu_tag("threadIdx.z").axis, 2);
  EXPECT_EQ(parse_gpu_tag("vthread").dim, GpuDim::kVirtual);
  EXPECT_EQ(parse_gpu_tag("threadIdx.w").dim, GpuDim::kNone);
  EXPECT_EQ(parse_gpu_tag("").dim, GpuDim::kNone);
  EXPECT_EQ(max_gpu_extent(parse_gpu_tag("threadIdx.x")), 1024);
  EXPECT_EQ(max_gpu_extent(parse_gpu_tag("threadIdx.z")), 64);
  EXPECT_EQ(max_gpu_extent(parse_gpu_tag("blockIdx.y")), 65535);
}

}  // namespace
}  // namespace tensorgym
