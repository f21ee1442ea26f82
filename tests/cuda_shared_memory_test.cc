// Memory scopes on the cuda target: set_scope and cache_read / cache_write's scope,
// shared-memory tiles filled by a block's threads together, the barriers lowering
// places between their writes and reads, what a GPU cannot run (with the reason),
// the PTX (__shared__ arrays, bar.sync), and the GPU model's view of shared memory.
// Every schedule that lowers is also run by the reference interpreter.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "codegen/cuda/ptxas.h"
#include "codegen/ir/ir_printer.h"
#include "codegen/lower/lower.h"
#include "codegen/schedule/schedule.h"
#include "tests/cuda_test_support.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

using cuda_test::parsed_program;

using namespace cuda_test;

const char* kSmallGemm =
    "input A: f32[64, 48]\n"
    "input B: f32[48, 96]\n"
    "C[i, j] += A[i, k] * B[k, j]\n";

// Blocks of 32 x 32 outputs, 8 x 8 threads of 4 x 4 each; k in tiles of 8 loaded into
// shared memory by the block's 64 threads (A's tile 32 x 8, B's 8 x 32: four rounds
// each, eight neighbouring floats along threadIdx.x).
const std::string kSharedTiles =
    "split(C.i, 32, io, ii); split(C.ii, 4, ty, yi)\n"
    "split(C.j, 32, jo, ji); split(C.ji, 4, tx, xi)\n"
    "split(C.k, 8, ko, ki)\n"
    "reorder(C, io, jo, ko, ty, tx, ki, yi, xi)\n"
    "bind(C.io, blockIdx.y); bind(C.jo, blockIdx.x); bind(C.ty, threadIdx.y); bind(C.tx, threadIdx.x)\n"
    "cache_read(A, C, AS, shared); compute_at(AS, C.ko)\n"
    "cache_read(B, C, BS); compute_at(BS, C.ko); set_scope(BS, shared)\n"
    "split(AS.ax0, 8, o, ty); bind(AS.ty, threadIdx.y); bind(AS.ax1, threadIdx.x)\n"
    "split(BS.ax1, 8, o, tx); reorder(BS, o, ax0, tx); bind(BS.ax0, threadIdx.y); bind(BS.tx, threadIdx.x)\n"
    "unroll(C.yi); unroll(C.xi)";

Expected<LoopNest> lower_cuda(const std::string& program, const std::string& trace) {
  return lower(scheduled(program, trace), cuda_backend().lowering());
}


std::vector<std::string> lines_with(const std::string& text, const std::vector<std::string>& parts) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    for (const std::string& p : parts)
      if (line.find(p) != std::string::npos) {
        out.push_back(line.substr(line.find_first_not_of(' ')));
        break;
      }
    start = end + 1;
  }
  return out;
}

TEST(CudaSharedMemory, TilesLoadedTogetherWithBarriersComputeTheGemm) {
  Expected<LoopNest> nest = lower_cuda(kSmallGemm, kSharedTiles);
  ASSERT_TRUE(nest.ok()) << nest.status().to_string();
  const std::string text = to_string(nest->body);
  // One barrier before the tiles are loaded again (the last k tile's reads), one
  // between the loads and the reads; none inside a thread loop.
  EXPECT_EQ(lines_with(text, {"sync_threads", "for C.ko", "for AS.o", "for BS.o", "for C.ty", "allocate"}),
            (std::vector<std::string>{"for C.ty in 0..8 bound to threadIdx.y {", "for C.ko in 0..6 {",
                                      "allocate AS: f32[256] in shared {", "sync_threads()", "for AS.o in 0..4 {",
                                      "allocate BS: f32[256] in shared {", "for BS.o in 0..4 {", "sync_threads()",
                                      "for C.ty in 0..8 bound to threadIdx.y {"}))
      << text;
  EXPECT_EQ(interpreter_mismatch(*parsed_program(kSmallGemm), *nest), "");

  CompileOptions options;
  options.keep_code_text = true;
  auto exe = cuda_backend().compile(*nest, options);
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  const std::string& ptx = (*exe)->code_text();
  EXPECT_CONTAINS(ptx, ".shared .align 16 .b8 tg_kernel_0_$_AS[1024]");
  EXPECT_CONTAINS(ptx, ".shared .align 16 .b8 tg_kernel_0_$_BS[1024]");
  EXPECT_CONTAINS(ptx, "st.shared.f32");
  EXPECT_CONTAINS(ptx, "ld.shared.f32");
  EXPECT_CONTAINS(ptx, "bar.sync");
  if (!cuda::find_ptxas().empty()) {
    ASSERT_EQ((*exe)->kernels().size(), 1u);
    const DeviceKernel& k = (*exe)->kernels()[0];
    EXPECT_TRUE(k.assembled);
    EXPECT_EQ(k.shared_bytes, 2 * 1024);
    EXPECT_EQ(k.spill_store_bytes, 0);
  }
}

// A per-thread accumulator in local memory beside the shared tiles, and the scope's
// three spellings in the trace.
TEST(CudaSharedMemory, ScopesByTheirThreeSpellingsMatchTheInterpreter) {
  const std::string local = std::string(kGpuGemm) + "\ncache_write(C, CL, local); compute_at(CL, C.ji)";
  Expected<LoopNest> nest = lower_cuda(kSmallGemm, local);
  ASSERT_TRUE(nest.ok()) << nest.status().to_string();
  EXPECT_CONTAINS(to_string(nest->body), "allocate CL: f32[1] in local");
  EXPECT_EQ(interpreter_mismatch(*parsed_program(kSmallGemm), *nest), "");
  // The trace keeps each spelling: the scope word comes back as it went in.
  Schedule s = scheduled(kSmallGemm, kSharedTiles);
  const std::string trace = s.trace().to_string();
  EXPECT_CONTAINS(trace, "cache_read(A, C, AS, shared)");
  EXPECT_CONTAINS(trace, "cache_read(B, C, BS)");
  EXPECT_CONTAINS(trace, "set_scope(BS, shared)");
}

struct Refused {
  std::string trace;
  std::string says;
};

TEST(CudaSharedMemory, WhatAGpuCannotRunIsRefusedWithTheReason) {
  const std::string tiles = kSharedTiles.substr(0, kSharedTiles.find("cache_read"));
  const std::vector<Refused> cases = {
      // At the root: outside every kernel.
      {tiles + "cache_read(A, C, AS, shared)", "stage AS is in shared memory, which exists only while a block runs"},
      // Inside the thread loops: every thread would fill the block's tile alone.
      {tiles + "cache_read(A, C, AS, shared); compute_at(AS, C.tx)",
       "stage AS is in shared memory but is computed inside loop C.tx, bound to threadIdx.x"},
      // Unbound: every thread of the block writes the whole tile.
      {tiles + "cache_read(A, C, AS, shared); compute_at(AS, C.ko)",
       "every GPU thread along threadIdx.x writes the same elements of AS"},
      // Global inside a kernel; local outside every kernel.
      {tiles + "cache_read(A, C, AS, global); compute_at(AS, C.ko)", "stage AS is in global memory, which the host"},
      {"split(C.i, 32, io, ii); bind(C.io, blockIdx.x); bind(C.ii, threadIdx.x); cache_read(A, C, AS, local)",
       "stage AS is local (private to each GPU thread) but is computed outside every GPU kernel"},
  };
  for (const Refused& c : cases) {
    Expected<LoopNest> nest = lower_cuda(kSmallGemm, c.trace);
    ASSERT_FALSE(nest.ok()) << c.trace;
    EXPECT_EQ(nest.status().code(), StatusCode::kFailedPrecondition) << c.trace;
    EXPECT_CONTAINS(nest.status().message(), c.says);
  }
  // More shared memory than a block has: a tile of 256 x 64 floats (64 KiB).
  const char* big = "input A: f32[512, 64]\ninput B: f32[64, 256]\nC[i, j] += A[i, k] * B[k, j]\n";
  Expected<LoopNest> nest = lower_cuda(big,
                                       "split(C.i, 256, io, ii); split(C.j, 128, jo, ji)\n"
                                       "reorder(C, io, jo, k, ii, ji)\n"
                                       "bind(C.io, blockIdx.y); bind(C.jo, blockIdx.x); bind(C.ji, threadIdx.x)\n"
                                       "cache_read(A, C, AS, shared); compute_at(AS, C.jo)\n"
                                       "bind(AS.ax0, threadIdx.x)");
  ASSERT_FALSE(nest.ok());
  EXPECT_CONTAINS(nest.status().message(), "needs 65536 bytes of shared memory per block (AS 65536)");
}

TEST(CudaSharedMemory, ScopesAreTheGpusAndOutputsStayGlobal) {
  // The cpu has one memory.
  Schedule s = scheduled(kSmallGemm, "cache_read(A, C, AS); set_scope(AS, shared)");
  Expected<LoopNest> cpu = lower(s);
  ASSERT_FALSE(cpu.ok());
  EXPECT_CONTAINS(cpu.status().message(), "stage AS is placed in shared memory (set_scope); the CPU target");
  // An output lives where the host reads it; an inlined stage has no buffer.
  Expected<Program> p = parse_program(kTwoStages);
  ASSERT_TRUE(p.ok());
  auto program = std::make_shared<const Program>(std::move(*p));
  Expected<Schedule> out = Schedule::from_text(program, "set_scope(C, shared)");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_CONTAINS(out.status().message(), "stage C is an output");
  EXPECT_TRUE(Schedule::from_text(program, "set_scope(C, global)").ok());
  Expected<Schedule> inlined = Schedule::from_text(program, "compute_inline(B); set_scope(B, local)");
  ASSERT_FALSE(inlined.ok());
  EXPECT_CONTAINS(inlined.status().message(), "stage B is inlined");
  Expected<Schedule> word = Schedule::from_text(program, "set_scope(B, texture)");
  ASSERT_FALSE(word.ok());
  EXPECT_EQ(word.status().code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(word.status().message(), "global, shared, local");
}

// The model takes shared memory as the SM's: a kernel's blocks hold their tiles, which
// bound how many blocks an SM runs at once (228 KiB each), and reading a tile costs no
// L2 or DRAM traffic: the tiled GEMM fetches from L2 what its loads of A and B do.
TEST(CudaSharedMemory, TheModelSeesTheTilesOnTheSm) {
  const char* gemm = "input A: f32[512, 512]\ninput B: f32[512, 512]\nC[i, j] += A[i, k] * B[k, j]\n";
  auto estimate = [&](const std::string& trace) {
    Expected<LoopNest> nest = lower(scheduled(gemm, trace), LowerOptions{.allow_thread_binding = true});
    EXPECT_TRUE(nest.ok()) << nest.status().to_string();
    Expected<RuntimeEstimate> e = cuda_backend().estimate_runtime(*nest);
    EXPECT_TRUE(e.ok()) << e.status().to_string();
    return *e;
  };
  const RuntimeEstimate tiled = estimate(kSharedTiles);
  ASSERT_EQ(tiled.kernels.size(), 1u);
  EXPECT_EQ(tiled.kernels[0].shared_bytes, 2 * 1024);
  // Tiles of 256 x 32 floats for A (32 KiB): at most 7 blocks per SM.
  const std::string big =
      "split(C.i, 256, io, ii); split(C.ii, 8, ty, yi); split(C.j, 8, jo, ji); split(C.k, 32, ko, ki)\n"
      "reorder(C, io, jo, ko, ty, ji, ki, yi)\n"
      "bind(C.io, blockIdx.y); bind(C.jo, blockIdx.x); bind(C.ty, threadIdx.y); bind(C.ji, threadIdx.x)\n"
      "cache_read(A, C, AS, shared); compute_at(AS, C.ko)\n"
      "split(AS.ax0, 32, o, t); bind(AS.t, threadIdx.y); bind(AS.ax1, threadIdx.x)";
  const RuntimeEstimate large = estimate(big);
  ASSERT_EQ(large.kernels.size(), 1u);
  EXPECT_EQ(large.kernels[0].shared_bytes, 256 * 32 * 4);
  EXPECT_LE(large.kernels[0].blocks_per_sm, (228 << 10) / (256 * 32 * 4));
  // Reading the tiles adds nothing beyond L1: A's and B's own loads, as plain loads
  // of the same schedule would fetch them.
  const std::string plain = kSharedTiles.substr(0, kSharedTiles.find("cache_read")) + "unroll(C.yi); unroll(C.xi)";
  EXPECT_NEAR(tiled.kernels[0].l2_bytes, estimate(plain).kernels[0].l2_bytes, 1.0);
  EXPECT_GT(tiled.kernels[0].l1_bytes, 0.0);
}

// A warp reading a column of a shared tile hits one bank 32 times; padding the rows
// by one float (storage_align) spreads the column over the 32 banks, and the model
// sees the difference.
TEST(CudaSharedMemory, TheModelSeesBankConflictsAndThePaddingThatRemovesThem) {
  const char* gemm = "input A: f32[64, 32]\ninput B: f32[32, 64]\nC[i, j] += A[i, k] * B[k, j]\n";
  const std::string tiles =
      "split(C.i, 32, io, ii); split(C.j, 8, jo, ji); reorder(C, io, jo, ji, ii, k)\n"
      "bind(C.io, blockIdx.y); bind(C.jo, blockIdx.x); bind(C.ii, threadIdx.x); bind(C.ji, threadIdx.y)\n"
      "cache_read(A, C, AS, shared); compute_at(AS, C.jo)\n"
      "split(AS.ax0, 8, o, ty); bind(AS.ty, threadIdx.y); bind(AS.ax1, threadIdx.x)\n";
  auto estimate = [&](const std::string& trace) {
    Expected<LoopNest> nest = lower(scheduled(gemm, trace), LowerOptions{.allow_thread_binding = true});
    EXPECT_TRUE(nest.ok()) << nest.status().to_string();
    Expected<RuntimeEstimate> e = cuda_backend().estimate_runtime(*nest);
    EXPECT_TRUE(e.ok()) << e.status().to_string();
    return e->kernels.at(0);
  };
  const KernelEstimate conflicted = estimate(tiles), padded = estimate(tiles + "storage_align(AS.ax0, 32, 1)");
  EXPECT_GT(conflicted.l1_bytes, 4 * padded.l1_bytes);
  EXPECT_LE(padded.seconds, conflicted.seconds);
  Expected<LoopNest> nest = lower_cuda(gemm, tiles + "storage_align(AS.ax0, 32, 1)");
  ASSERT_TRUE(nest.ok()) << nest.status().to_string();
  EXPECT_EQ(interpreter_mismatch(*parsed_program(gemm), *nest), "");
}

// A vectorized loop is four neighbouring floats per thread: the tiles load and store
// as ld.global.nc.v4 / st.shared.v4 (buffers are 16-byte aligned), and still compute
// the product.
TEST(CudaSharedMemory, VectorizedTileLoadsAreVectorAccesses) {
  const std::string vectorized =
      kSharedTiles.substr(0, kSharedTiles.find("cache_read")) +
      "cache_read(A, C, AS, shared); compute_at(AS, C.ko)\n"
      "split(AS.ax0, 8, o, ty); split(AS.ax1, 4, t, v); reorder(AS, o, ty, t, v)\n"
      "bind(AS.ty, threadIdx.y); bind(AS.t, threadIdx.x); vectorize(AS.v)\n"
      "cache_read(B, C, BS, shared); compute_at(BS, C.ko)\n"
      "split(BS.ax1, 4, tx, v); bind(BS.ax0, threadIdx.y); bind(BS.tx, threadIdx.x); vectorize(BS.v)\n"
      "unroll(C.yi); unroll(C.xi)";
  Expected<LoopNest> nest = lower_cuda(kSmallGemm, vectorized);
  ASSERT_TRUE(nest.ok()) << nest.status().to_string();
  EXPECT_EQ(interpreter_mismatch(*parsed_program(kSmallGemm), *nest), "");
  CompileOptions options;
  options.keep_code_text = true;
  auto exe = cuda_backend().compile(*nest, options);
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  EXPECT_CONTAINS((*exe)->code_text(), "ld.global.nc.v4.f32");
  EXPECT_CONTAINS((*exe)->code_text(), "st.shared.v4.f32");
}

// A local buffer computed at a block loop, its loops bound to threads: the nest holds
// the block's outputs, each thread keeps its own 4 x 4 in registers (the PTX has no
// local memory), and the interpreter's block-wide run computes the same GEMM.
TEST(CudaSharedMemory, AccumulatorsComputedOutsideTheThreadLoopsAreEachThreadsOwn) {
  const std::string outputs =
      "split(C.i, 32, io, ii); split(C.ii, 4, ty, yi)\n"
      "split(C.j, 32, jo, ji); split(C.ji, 8, xi, tx)\n"
      "reorder(C, io, jo, ty, tx, yi, xi)\n"
      "bind(C.io, blockIdx.y); bind(C.jo, blockIdx.x); bind(C.ty, threadIdx.y); bind(C.tx, threadIdx.x)\n"
      "cache_write(C, CL, local); compute_at(CL, C.jo)\n"
      "split(CL.i, 4, ty, yi); split(CL.k, 8, ko, ki)\n";
  const std::string rest =
      "reorder(CL, ko, ty, tx, ki, yi, xi)\n"
      "bind(CL.ty, threadIdx.y); bind(CL.tx, threadIdx.x)\n"
      "cache_read(A, CL, AS, shared); compute_at(AS, CL.ko)\n"
      "split(AS.ax0, 8, o, ty); bind(AS.ty, threadIdx.y); bind(AS.ax1, threadIdx.x)\n"
      "unroll(CL.yi); unroll(CL.xi)";
  Expected<LoopNest> nest = lower_cuda(kSmallGemm, outputs + "split(CL.j, 8, xi, tx)\n" + rest);
  ASSERT_TRUE(nest.ok()) << nest.status().to_string();
  EXPECT_CONTAINS(to_string(nest->body), "allocate CL: f32[1024] in local");
  EXPECT_EQ(interpreter_mismatch(*parsed_program(kSmallGemm), *nest), "");
  CompileOptions options;
  options.keep_code_text = true;
  auto exe = cuda_backend().compile(*nest, options);
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  EXPECT_EQ((*exe)->code_text().find(".local"), std::string::npos);
  if (!cuda::find_ptxas().empty()) EXPECT_EQ((*exe)->kernels()[0].stack_bytes, 0);
  // The model values it (the threads' parts as registers).
  Expected<RuntimeEstimate> e = cuda_backend().estimate_runtime(*nest);
  ASSERT_TRUE(e.ok()) << e.status().to_string();

  // CL's columns split the other way from C's: thread (ty, tx) would read outputs another
  // thread accumulated in its own registers.
  Expected<LoopNest> crossed = lower_cuda(kSmallGemm, outputs + "split(CL.j, 4, tx, xi)\n" + rest);
  ASSERT_FALSE(crossed.ok());
  EXPECT_CONTAINS(crossed.status().message(), "its threads' parts cannot be told apart (its accesses index it by "
                                              "different threads)");
}

std::string read_file(const std::string& relative) {
  std::ifstream in(std::string(TENSORGYM_SOURCE_DIR) + "/" + relative);
  EXPECT_TRUE(in) << relative;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// datasets/ops/*.cuda.sched: the expert GPU schedules. Each computes its program (the
// interpreter runs it on a smaller instance of the same program: the schedule's tiles
// need only the names and enough extent) and, at full size, assembles without spills.
TEST(CudaSharedMemory, TheExpertGpuSchedulesAreCorrect) {
  struct Expert {
    std::string program, small;
  };
  const std::vector<Expert> experts = {
      {"gemm_1024",
       "input A: f32[128, 32]\ninput B: f32[32, 192]\nC[i, j] += A[i, k] * B[k, j]\n"},
      {"gemm_4096",
       "input A: f32[256, 16]\ninput B: f32[16, 256]\nC[i, j] += A[i, k] * B[k, j]\n"},
      {"conv2d_resnet_3x3",
       "input X: f32[1, 4, 6, 56]\ninput W: f32[32, 4, 3, 3]\n"
       "P[n, c, h, w] = select(h >= 1 && h <= 6 && w >= 1 && w <= 56, X[n, c, h - 1, w - 1], 0.0) where h in 0..8, "
       "w in 0..58\n"
       "Y[n, f, y, x] += P[n, c, y + r, x + s] * W[f, c, r, s] where y in 0..6, x in 0..56\n"
       "R[n, f, y, x] = max(Y[n, f, y, x], 0.0)\n"}};
  for (const Expert& e : experts) {
    const std::string trace = read_file("datasets/ops/" + e.program + ".cuda.sched");
    Expected<LoopNest> small = lower_cuda(e.small, trace);
    ASSERT_TRUE(small.ok()) << e.program << ": " << small.status().to_string();
    EXPECT_EQ(interpreter_mismatch(*parsed_program(e.small), *small), "") << e.program;
    Expected<LoopNest> full = lower_cuda(read_file("datasets/ops/" + e.program + ".tg"), trace);
    ASSERT_TRUE(full.ok()) << e.program << ": " << full.status().to_string();
    EXPECT_CONTAINS(to_string(full->body), "in shared");
    auto exe = cuda_backend().compile(*full);
    ASSERT_TRUE(exe.ok()) << e.program << ": " << exe.status().to_string();
    if (cuda::find_ptxas().empty()) continue;
    for (const DeviceKernel& k : (*exe)->kernels()) {
      EXPECT_TRUE(k.assembled) << e.program;
      EXPECT_GT(k.shared_bytes, 0) << e.program;
      EXPECT_EQ(k.spill_store_bytes + k.spill_load_bytes, 0) << e.program;
      // The accumulators are registers: no local memory at all.
      EXPECT_EQ(k.stack_bytes, 0) << e.program;
    }
  }
}

}  // namespace
}  // namespace tensorgym
