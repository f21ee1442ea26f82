// PTX code generation for the cuda target: GPU schedules become one PTX .entry per
// kernel, with the launch's special registers, guards and loops, and (where ptxas is
// installed) assemble for sm_90. Nothing runs here: the GPU-lowered nests' results
// are the interpreter's to check (cuda_lowering_test.cc), not these tests'.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "codegen/backend/registry.h"
#include "codegen/cuda/libdevice.h"
#include "codegen/cuda/ptxas.h"
#include "codegen/lower/lower.h"
#include "codegen/measure/runner.h"
#include "codegen/schedule/schedule.h"
#include "datasets/registry.h"
#include "tests/cuda_test_support.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

using namespace ir_build;
using namespace cuda_test;

std::shared_ptr<const Executable> compile(const LoopNest& nest, const std::string& device = "") {
  CompileOptions options;
  options.keep_code_text = true;
  options.device = device;
  auto exe = cuda_backend().compile(nest, options);
  EXPECT_TRUE(exe.ok()) << exe.status().to_string();
  return exe.ok() ? *exe : nullptr;
}

std::shared_ptr<const Executable> compile(const Schedule& s, const std::string& device = "") {
  Expected<LoopNest> nest = lower(s, cuda_backend().lowering());
  EXPECT_TRUE(nest.ok()) << nest.status().to_string();
  if (!nest.ok()) return nullptr;
  return compile(*nest, device);
}

int count(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

bool have_ptxas() { return !cuda::find_ptxas().empty(); }

// Each kernel assembled with no spills (only where ptxas is installed).
void expect_assembled_without_spills(const Executable& exe) {
  for (const DeviceKernel& k : exe.kernels()) {
    EXPECT_TRUE(k.assembled) << k.name;
    EXPECT_GT(k.registers, 0) << k.name;
    EXPECT_EQ(k.spill_store_bytes, 0) << k.name;
    EXPECT_EQ(k.spill_load_bytes, 0) << k.name;
  }
}

TEST(CudaCodegen, TheGpuGemmIsOneKernelReadingBlockAndThreadIndices) {
  auto exe = compile(scheduled(kGemm, kGpuGemm));
  ASSERT_TRUE(exe);
  const std::string& ptx = exe->code_text();
  EXPECT_CONTAINS(ptx, ".target sm_90");
  EXPECT_EQ(count(ptx, ".entry "), 1) << ptx;
  EXPECT_CONTAINS(ptx, ".entry tg_kernel_0(");
  for (const char* reg : {"%ctaid.x", "%ctaid.y", "%tid.x", "%tid.y"}) EXPECT_CONTAINS(ptx, reg);
  EXPECT_EQ(count(ptx, "%ctaid.z") + count(ptx, "%tid.z"), 0);
  // The buffers are global memory; the input reads may take the read-only path.
  EXPECT_CONTAINS(ptx, "ld.global");
  EXPECT_CONTAINS(ptx, "st.global.f32");
  // a*b + c contracts to one FMA.
  EXPECT_CONTAINS(ptx, "fma.rn.f32");

  ASSERT_EQ(exe->kernels().size(), 1u);
  const DeviceKernel& k = exe->kernels()[0];
  EXPECT_EQ(k.name, "tg_kernel_0");
  EXPECT_EQ(k.stage, "C");
  EXPECT_EQ(std::vector<int64_t>(k.blocks, k.blocks + 3), (std::vector<int64_t>{5, 4, 1}));
  EXPECT_EQ(std::vector<int64_t>(k.threads, k.threads + 3), (std::vector<int64_t>{8, 16, 1}));
  EXPECT_EQ(k.params, (std::vector<std::string>{"A", "B", "C"}));
  if (!have_ptxas()) GTEST_SKIP() << "no ptxas: the PTX was not assembled";
  expect_assembled_without_spills(*exe);
}

TEST(CudaCodegen, PartialTilesAreGuarded) {
  // 64 / 12 and 40 / 16 leave partial tiles: the threads past the edge store nothing.
  const std::string partial =
      "split(C.i, 12, io, ii)\nsplit(C.j, 16, jo, ji)\nreorder(C, io, jo, ii, ji)\n"
      "bind(C.io, blockIdx.x)\nbind(C.jo, blockIdx.y)\nbind(C.ii, threadIdx.y)\nbind(C.ji, threadIdx.x)";
  const std::string exact =
      "split(C.i, 16, io, ii)\nsplit(C.j, 8, jo, ji)\nreorder(C, io, jo, ii, ji)\n"
      "bind(C.io, blockIdx.x)\nbind(C.jo, blockIdx.y)\nbind(C.ii, threadIdx.y)\nbind(C.ji, threadIdx.x)";
  auto guarded = compile(scheduled(kGemm, partial));
  auto whole = compile(scheduled(kGemm, exact));
  ASSERT_TRUE(guarded && whole);
  // The guard compares an index with the edge and branches around the stores.
  EXPECT_GT(count(guarded->code_text(), "setp."), count(whole->code_text(), "setp.")) << guarded->code_text();
  EXPECT_EQ(std::vector<int64_t>(guarded->kernels()[0].blocks, guarded->kernels()[0].blocks + 2),
            (std::vector<int64_t>{6, 3}));
  if (!have_ptxas()) GTEST_SKIP() << "no ptxas: the PTX was not assembled";
  expect_assembled_without_spills(*guarded);
}

TEST(CudaCodegen, ALoopNarrowerThanItsLaunchDimensionIsGuarded) {
  // Two loops bound to threadIdx.x in one kernel, 32 and 20 wide: the launch has 32
  // threads, and the second loop's body runs on the first 20 only.
  LoopNest nest;
  nest.inputs = std::vector<BufferArg>{Arg("A", {4, 32})};
  nest.outputs = std::vector<BufferArg>{Arg("B", {4, 32}), Arg("C", {4, 20})};
  const Stmt b = For::make("B.j", I(0), I(32), ForKind::kSerial,
                           St("B", V("K.i") * I(32) + V("B.j"), Ld("A", V("K.i") * I(32) + V("B.j"))), "threadIdx.x");
  const Stmt c = For::make("C.j", I(0), I(20), ForKind::kSerial,
                           St("C", V("K.i") * I(20) + V("C.j"), Ld("A", V("K.i") * I(32) + V("C.j"))), "threadIdx.x");
  nest.body = For::make("K.i", I(0), I(4), ForKind::kSerial, Seq({b, c}), "blockIdx.x");
  nest.target = "cuda";
  auto exe = compile(nest);
  ASSERT_TRUE(exe);
  EXPECT_EQ(exe->kernels()[0].threads[0], 32);
  // One comparison of %tid.x with 20 (as < 20, or > 19), none with 32.
  const std::regex guard(R"(setp\.[a-z]+\.[us]32\s+%p\d+, %r\d+, (19|20);)");
  EXPECT_TRUE(std::regex_search(exe->code_text(), guard)) << exe->code_text();
  if (!have_ptxas()) GTEST_SKIP() << "no ptxas: the PTX was not assembled";
  expect_assembled_without_spills(*exe);
}

TEST(CudaCodegen, APerThreadAccumulatorIsALocalVariable) {
  const std::string t = std::string(kGpuGemm) + "\ncache_write(C, CL)\ncompute_at(CL, C.ji)";
  auto exe = compile(scheduled(kGemm, t));
  ASSERT_TRUE(exe);
  ASSERT_EQ(exe->kernels().size(), 1u);
  // The one-element accumulator lives in a register: no local memory, no stack.
  EXPECT_EQ(count(exe->code_text(), ".local"), 0) << exe->code_text();
  if (!have_ptxas()) GTEST_SKIP() << "no ptxas: the PTX was not assembled";
  expect_assembled_without_spills(*exe);
  EXPECT_EQ(exe->kernels()[0].stack_bytes, 0);
}

TEST(CudaCodegen, ProducersAtRootAreKernelsOfTheirOwnWithAGlobalBufferBetween) {
  auto exe = compile(scheduled(kTwoStages,
                               "bind(B.i, blockIdx.x)\nbind(B.j, threadIdx.x)\n"
                               "bind(C.i, blockIdx.x)\nbind(C.j, threadIdx.x)"));
  ASSERT_TRUE(exe);
  const std::string& ptx = exe->code_text();
  EXPECT_EQ(count(ptx, ".entry "), 2) << ptx;
  EXPECT_CONTAINS(ptx, ".entry tg_kernel_0(");
  EXPECT_CONTAINS(ptx, ".entry tg_kernel_1(");
  ASSERT_EQ(exe->kernels().size(), 2u);
  EXPECT_EQ(exe->kernels()[0].stage, "B");
  EXPECT_EQ(exe->kernels()[1].stage, "C");
  // B is allocated on the host, so both kernels take it as a parameter.
  EXPECT_EQ(exe->kernels()[0].params, (std::vector<std::string>{"A", "C", "B"}));
  EXPECT_EQ(exe->kernels()[1].params, (std::vector<std::string>{"A", "C", "B"}));
  EXPECT_EQ(exe->kernels()[0].blocks[0], 64);
  EXPECT_EQ(exe->kernels()[0].threads[0], 32);
  if (!have_ptxas()) GTEST_SKIP() << "no ptxas: the PTX was not assembled";
  expect_assembled_without_spills(*exe);
}

TEST(CudaCodegen, AHostLoopAroundAKernelIsAParameter) {
  // The reduction outside the bound loops: a kernel that initializes C, then one
  // launch of the update per step of k, k a parameter.
  auto exe = compile(scheduled(kGemm, "reorder(C, k, i, j)\nbind(C.i, blockIdx.x)\nbind(C.j, threadIdx.x)"));
  ASSERT_TRUE(exe);
  ASSERT_EQ(exe->kernels().size(), 2u);
  EXPECT_EQ(exe->kernels()[0].params, (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_EQ(exe->kernels()[1].params, (std::vector<std::string>{"A", "B", "C", "C.k"}));
  EXPECT_CONTAINS(exe->code_text(), ".param .u32 tg_kernel_1_param_3");
  if (!have_ptxas()) GTEST_SKIP() << "no ptxas: the PTX was not assembled";
  expect_assembled_without_spills(*exe);
}

TEST(CudaCodegen, AnotherArchitectureOnRequestAndAnUnknownOneIsAnError) {
  Expected<LoopNest> nest = lower(scheduled(kGemm, kGpuGemm), cuda_backend().lowering());
  ASSERT_TRUE(nest.ok());
  auto exe = compile(*nest, "sm_80");
  ASSERT_TRUE(exe);
  EXPECT_CONTAINS(exe->code_text(), ".target sm_80");
  CompileOptions options;
  options.device = "sm_1";
  auto bad = cuda_backend().compile(*nest, options);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(bad.status().message(), "unknown GPU architecture 'sm_1'");
  // The code text is kept only when asked for; the kernels always are.
  auto quiet = cuda_backend().compile(*nest);
  ASSERT_TRUE(quiet.ok());
  EXPECT_TRUE((*quiet)->code_text().empty());
  EXPECT_EQ((*quiet)->kernels().size(), 1u);
}

TEST(CudaCodegen, APtxasErrorIsACompileErrorWithItsText) {
  // A stand-in assembler that rejects everything, as ptxas does PTX it cannot take.
  const std::string fake = ::testing::TempDir() + "/cuda_codegen_test_ptxas_" + std::to_string(::getpid());
  {
    std::ofstream f(fake);
    f << "#!/bin/sh\necho 'ptxas fatal   : Unresolved extern function' >&2\nexit 255\n";
  }
  ::chmod(fake.c_str(), 0755);
  ::setenv("TENSORGYM_PTXAS", fake.c_str(), 1);
  Expected<LoopNest> nest = lower(scheduled(kGemm, kGpuGemm), cuda_backend().lowering());
  ASSERT_TRUE(nest.ok());
  auto exe = cuda_backend().compile(*nest);
  ::unsetenv("TENSORGYM_PTXAS");
  std::remove(fake.c_str());
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(exe.status().message(), "ptxas rejected the PTX for sm_90");
  EXPECT_CONTAINS(exe.status().message(), "Unresolved extern function");
}

TEST(CudaCodegen, ASandboxedMeasurementCompilesThenSaysItCannotRun) {
  // The worker may not start ptxas (its sandbox forbids exec): the PTX is generated all
  // the same, and the error is the target's, not the assembler's.
  RunnerOptions options;
  options.num_workers = 1;
  options.worker_binary = std::string(TENSORGYM_BINARY_DIR) + "/bin/tensorgym";
  Runner runner(options);
  MeasureRequest request;
  request.program = kGemm;
  request.schedule = kGpuGemm;
  request.target = "cuda";
  request.emit_code_text = true;
  const MeasureResult r = runner.measure(request);
  runner.shutdown();
  if (cuda_backend().target().can_run) {
    // With a GPU, the sandboxed worker initializes CUDA itself and runs the kernels.
    EXPECT_EQ(r.error, MeasureError::kOk) << r.error_message;
    EXPECT_TRUE(r.correct);
    EXPECT_GT(r.runtime.median_s, 0);
    EXPECT_CONTAINS(r.code_text, ".entry tg_kernel_0(");
    return;
  }
  EXPECT_EQ(r.error, MeasureError::kCompile) << r.error_message;
  EXPECT_CONTAINS(r.error_message, "the cuda target cannot be measured here (no GPU on this machine: ");
  EXPECT_CONTAINS(r.error_message, "): its code was generated");
  EXPECT_CONTAINS(r.code_text, ".entry tg_kernel_0(");
}

// exp, log and tanh in f32 (B) and f64 (C), a kernel each.
const char* kMath =
    "input A: f32[256]\n"
    "input D: f64[256]\n"
    "B[i] = exp(A[i]) + log(abs(A[i]) + 1.0) * tanh(A[i])\n"
    "C[i] = exp(D[i]) + log(abs(D[i]) + 1.0) * tanh(D[i])\n";
const char* kMathGpu =
    "split(B.i, 32, io, ii)\nbind(B.io, blockIdx.x)\nbind(B.ii, threadIdx.x)\n"
    "split(C.i, 32, io, ii)\nbind(C.io, blockIdx.x)\nbind(C.ii, threadIdx.x)";

std::shared_ptr<const Executable> compile_math() {
  Expected<LoopNest> nest = lower(scheduled(kMath, kMathGpu), cuda_backend().lowering());
  EXPECT_TRUE(nest.ok()) << nest.status().to_string();
  if (!nest.ok()) return nullptr;
  EXPECT_EQ(interpreter_mismatch(*parsed_program(kMath), *nest), "");
  CompileOptions options;
  options.keep_code_text = true;
  options.keep_remarks = true;
  auto exe = cuda_backend().compile(*nest, options);
  EXPECT_TRUE(exe.ok()) << exe.status().to_string();
  return exe.ok() ? *exe : nullptr;
}

TEST(CudaCodegen, ExpLogAndTanhAreLibdevicesWhereItIsFound) {
  if (cuda::find_libdevice().empty()) GTEST_SKIP() << "no libdevice (CUDA toolkit) on this machine";
  auto exe = compile_math();
  ASSERT_TRUE(exe);
  const std::string& ptx = exe->code_text();
  EXPECT_EQ(count(ptx, ".entry "), 2) << ptx;
  // Inlined and resolved: no reflection or call left for ptxas, and none of the
  // approximate path's ex2 / lg2 (libdevice's expf itself ends in ex2.approx.ftz on
  // its reduced argument).
  for (const char* absent : {"__nvvm_reflect", "__nv_", "call", "lg2.approx", "ex2.approx.f32"})
    EXPECT_EQ(count(ptx, absent), 0) << absent << "\n" << ptx;
  EXPECT_CONTAINS(ptx, ".f64");
  ASSERT_EQ(exe->remarks().size(), 1u);
  EXPECT_CONTAINS(exe->remarks()[0], "math: exp / log / tanh from libdevice ");
  if (!have_ptxas()) GTEST_SKIP() << "no ptxas: the PTX was not assembled";
  for (const DeviceKernel& k : exe->kernels()) EXPECT_TRUE(k.assembled) << k.name;
}

TEST(CudaCodegen, WithoutLibdeviceExpLogAndTanhAreApproximate) {
  // A TENSORGYM_LIBDEVICE that does not load (missing, or not bitcode) means none:
  // the approximate math.
  const std::string junk = ::testing::TempDir() + "/cuda_codegen_test_libdevice_" + std::to_string(::getpid());
  std::ofstream(junk) << "not bitcode";
  ::setenv("TENSORGYM_LIBDEVICE", junk.c_str(), 1);
  EXPECT_EQ(cuda::find_libdevice(), "");
  std::remove(junk.c_str());
  ::setenv("TENSORGYM_LIBDEVICE", "/nonexistent/libdevice.10.bc", 1);
  EXPECT_EQ(cuda::find_libdevice(), "");
  auto exe = compile_math();
  ::unsetenv("TENSORGYM_LIBDEVICE");
  ASSERT_TRUE(exe);
  const std::string& ptx = exe->code_text();
  EXPECT_CONTAINS(ptx, "ex2.approx.f32");
  EXPECT_CONTAINS(ptx, "lg2.approx.f32");
  EXPECT_EQ(count(ptx, "__nv_"), 0);
  ASSERT_EQ(exe->remarks().size(), 1u);
  EXPECT_CONTAINS(exe->remarks()[0], "approximate (ex2.approx / lg2.approx in f32): no libdevice found");
  if (!have_ptxas()) GTEST_SKIP() << "no ptxas: the PTX was not assembled";
  for (const DeviceKernel& k : exe->kernels()) EXPECT_TRUE(k.assembled) << k.name;
}

// A simple GPU tiling of every stage: its first spatial loop over blocks, its last
// split into 32-wide thread rows (a stage with one spatial loop: both from the split).
std::string simple_gpu_tiling(const Program& p) {
  std::string t;
  for (const StageDef& s : p.stages) {
    if (s.axes.empty()) continue;  // a scalar: a kernel of one thread
    const IterVar& last = s.axes.back();
    const int64_t width = std::min<int64_t>(32, last.extent);
    t += fmt::format("split({}.{}, {}, {}_o, {}_i)\n", s.name, last.name, width, last.name, last.name);
    if (s.axes.size() == 1) {
      t += fmt::format("bind({}.{}_o, blockIdx.x)\n", s.name, last.name);
    } else {
      t += fmt::format("bind({}.{}, blockIdx.x)\n", s.name, s.axes.front().name);
    }
    t += fmt::format("bind({}.{}_i, threadIdx.x)\n", s.name, last.name);
  }
  return t;
}

// Every ops-v0 family with the simple tiling: PTX with a kernel per stage, which ptxas
// accepts for sm_90. The norm at batch 1 reduces everything to one value, which needs a
// reduction across threads (not available yet); at batch 16 each thread has its own.
TEST(CudaCodegen, EveryOpsFamilyWithASimpleTilingAssembles) {
  for (const char* name :
       {"gmm-1", "c1d-1", "c2d-1", "c3d-1", "grp-1", "dil-1", "dep-1", "t2d-1", "cap-1", "nrm-1-b16"}) {
    const std::string uri = fmt::format("benchmark://ops-v0/{}", name);
    SCOPED_TRACE(uri);
    Expected<Benchmark> b = DatasetRegistry::global().resolve(uri);
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    const std::string trace = simple_gpu_tiling(*b->program);
    Expected<Schedule> s = Schedule::from_text(b->program, trace);
    ASSERT_TRUE(s.ok()) << trace << s.status().to_string();
    auto exe = compile(*s);
    ASSERT_TRUE(exe) << trace;
    EXPECT_EQ(int(exe->kernels().size()), count(exe->code_text(), ".entry ")) << trace;
    EXPECT_EQ(exe->kernels().size(), b->program->stages.size()) << trace;
    EXPECT_CONTAINS(exe->code_text(), "%tid.x");
    if (have_ptxas()) {
      for (const DeviceKernel& k : exe->kernels()) EXPECT_TRUE(k.assembled) << k.name;
    }
  }
}

TEST(CudaCodegen, TheNormAtBatchOneIsNotCoveredByASimpleTiling) {
  Expected<Benchmark> b = DatasetRegistry::global().resolve("benchmark://ops-v0/nrm-1");
  ASSERT_TRUE(b.ok());
  Expected<Schedule> s = Schedule::from_text(b->program, simple_gpu_tiling(*b->program));
  ASSERT_TRUE(s.ok());
  Expected<LoopNest> nest = lower(*s, cuda_backend().lowering());
  ASSERT_FALSE(nest.ok());
  EXPECT_CONTAINS(nest.status().message(), "stage S runs outside any GPU kernel");
}

}  // namespace
}  // namespace tensorgym
