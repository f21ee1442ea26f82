// The GPU runner of the cuda target: the driver loaded at run time, the launch plan the
// host follows, and the kernels run on a GPU against the reference interpreter. The
// driver and plan tests run anywhere; the tests that run kernels skip without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "codegen/backend/registry.h"
#include "codegen/cuda/cuda_driver.h"
#include "codegen/cuda/launch_plan.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/interp/interpreter.h"
#include "codegen/lower/lower.h"
#include "codegen/measure/device_timing.h"
#include "tests/cuda_test_support.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

using namespace cuda_test;

struct Compiled {
  ProgramPtr program;
  LoopNest nest;
  std::shared_ptr<const Executable> exe;
};

Compiled compile(const std::string& program_text, const std::string& trace) {
  Schedule s = scheduled(program_text, trace);
  Expected<LoopNest> nest = lower(s, cuda_backend().lowering());
  EXPECT_TRUE(nest.ok()) << nest.status().to_string();
  if (!nest.ok()) return {};
  auto exe = cuda_backend().compile(*nest);
  EXPECT_TRUE(exe.ok()) << exe.status().to_string();
  return {std::make_shared<const Program>(s.program()), *nest, exe.ok() ? *exe : nullptr};
}

std::string plan_text(const Compiled& c) {
  Expected<cuda::LaunchPlan> plan = cuda::make_launch_plan(c.nest, c.exe->kernels());
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  return plan.ok() ? cuda::describe(*plan, c.exe->kernels()) : "";
}

bool have_gpu() { return cuda_backend().target().can_run; }

const char* kHostLoop = "reorder(C, k, i, j)\nbind(C.i, blockIdx.x)\nbind(C.j, threadIdx.x)";
const char* kTwoKernels =
    "bind(B.i, blockIdx.x)\nbind(B.j, threadIdx.x)\nbind(C.i, blockIdx.x)\nbind(C.j, threadIdx.x)";

// ---- the driver ---------------------------------------------------------------------

TEST(CudaDriver, AMissingDriverSaysThereIsNoGpu) {
  const Status s = cuda::probe_gpu("libtensorgym-no-such-driver.so.1");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_CONTAINS(s.message(), "no GPU on this machine: libtensorgym-no-such-driver.so.1 not found");
}

TEST(CudaDriver, WithoutAGpuLoadingFailsExplicitlyAndTheTargetCannotRun) {
  if (cuda::run_unavailable_reason().empty()) GTEST_SKIP() << "a GPU is present";
  Expected<const cuda::Driver*> driver = cuda::Driver::get();
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), StatusCode::kUnavailable);
  EXPECT_CONTAINS(driver.status().message(), "no GPU on this machine: ");
  const TargetInfo& t = cuda_backend().target();
  EXPECT_FALSE(t.can_run);
  EXPECT_EQ(t.run_unavailable, cuda::run_unavailable_reason());
}

TEST(CudaDriver, WithoutAGpuRunningIsAnErrorNotACrash) {
  if (have_gpu()) GTEST_SKIP() << "a GPU is present";
  Compiled c = compile(kGemm, kGpuGemm);
  ASSERT_TRUE(c.exe);
  std::vector<HostBuffer> inputs = make_random_inputs(*c.program, 1);
  std::vector<HostBuffer> outputs = make_output_buffers(c.nest);
  std::vector<void*> args{inputs[0].data(), inputs[1].data(), outputs[0].data()};
  const Status run = c.exe->run_checked(args.data(), 1);
  EXPECT_EQ(run.code(), StatusCode::kUnavailable);
  EXPECT_CONTAINS(run.message(), "no GPU on this machine: ");
  EXPECT_TRUE(c.exe->has_device_clock());
  EXPECT_EQ(c.exe->time_on_device(args.data(), 1, 1, 1).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(time_on_device(*c.exe, args.data(), {}).status().code(), StatusCode::kUnavailable);
}

// ---- the launch plan ----------------------------------------------------------------

TEST(CudaLaunchPlan, TheDocsGemmIsOneLaunchOverItsArguments) {
  Compiled c = compile(kGemm, kGpuGemm);
  ASSERT_TRUE(c.exe);
  EXPECT_EQ(plan_text(c),
            "buffer A f32[3072] input\n"
            "buffer B f32[1920] input\n"
            "buffer C f32[2560] output\n"
            "launch tg_kernel_0 (A, B, C)\n");
}

TEST(CudaLaunchPlan, TwoKernelsShareAGlobalBufferTheHostAllocates) {
  Compiled c = compile(kTwoStages, kTwoKernels);
  ASSERT_TRUE(c.exe);
  EXPECT_EQ(plan_text(c),
            "buffer A f32[2048] input\n"
            "buffer C f32[2048] output\n"
            "buffer B f32[2048] global\n"
            "launch tg_kernel_0 (A, C, B)\n"
            "launch tg_kernel_1 (A, C, B)\n");
}

TEST(CudaLaunchPlan, AHostLoopLaunchesItsKernelOncePerIterationWithItsValue) {
  Compiled c = compile(kGemm, kHostLoop);
  ASSERT_TRUE(c.exe);
  Expected<cuda::LaunchPlan> plan = cuda::make_launch_plan(c.nest, c.exe->kernels());
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  // C's initialization, then the update once per step of k (48).
  ASSERT_EQ(plan->launches.size(), 49u);
  EXPECT_EQ(plan->launches[0].kernel, 0);
  EXPECT_TRUE(plan->launches[0].loop_values.empty());
  for (int k = 0; k < 48; ++k) {
    EXPECT_EQ(plan->launches[size_t(k) + 1].kernel, 1);
    EXPECT_EQ(plan->launches[size_t(k) + 1].loop_values, std::vector<int32_t>{k});
  }
  const std::string text = cuda::describe(*plan, c.exe->kernels());
  EXPECT_CONTAINS(text,
                  "launch tg_kernel_0 (A, B, C)\nlaunch tg_kernel_1 (A, B, C, C.k=0)\n"
                  "launch tg_kernel_1 (A, B, C, C.k=1)\n");
  EXPECT_CONTAINS(text, "launch tg_kernel_1 (A, B, C, C.k=47)\n");
}

TEST(CudaLaunchPlan, TooManyLaunchesAndKernelsThatDisagreeAreErrors) {
  Compiled c = compile(kGemm, kHostLoop);
  ASSERT_TRUE(c.exe);
  Expected<cuda::LaunchPlan> capped = cuda::make_launch_plan(c.nest, c.exe->kernels(), 10);
  EXPECT_EQ(capped.status().code(), StatusCode::kResourceExhausted);
  EXPECT_CONTAINS(capped.status().message(), "more than 10 kernels per run");

  std::vector<DeviceKernel> wrong = c.exe->kernels();
  wrong[1].params.pop_back();
  Expected<cuda::LaunchPlan> bad = cuda::make_launch_plan(c.nest, wrong);
  EXPECT_EQ(bad.status().code(), StatusCode::kInternal);
  EXPECT_CONTAINS(bad.status().message(), "kernel tg_kernel_1 takes (A, B, C) but the host would pass (A, B, C, C.k)");
  wrong.pop_back();
  EXPECT_EQ(cuda::make_launch_plan(c.nest, wrong).status().code(), StatusCode::kInternal);
}

// ---- on a GPU -----------------------------------------------------------------------

// Runs the kernels and the interpreter on the same inputs; every output element agrees.
void expect_matches_interpreter(const std::string& program_text, const std::string& trace) {
  if (!have_gpu()) GTEST_SKIP() << cuda_backend().target().run_unavailable;
  Compiled c = compile(program_text, trace);
  ASSERT_TRUE(c.exe);
  std::vector<HostBuffer> inputs = make_random_inputs(*c.program, 7);
  std::vector<HostBuffer> outputs = make_output_buffers(c.nest), expected = make_output_buffers(c.nest);
  std::vector<void*> args;
  for (HostBuffer& b : inputs) args.push_back(b.data());
  for (HostBuffer& b : outputs) args.push_back(b.data());
  std::vector<HostBuffer*> expected_ptrs;
  for (HostBuffer& b : expected) expected_ptrs.push_back(&b);
  ASSERT_TRUE(interpret(c.nest, const_pointers(inputs), expected_ptrs).ok());
  const Status run = c.exe->run_checked(args.data(), 1);
  ASSERT_TRUE(run.ok()) << run.to_string();
  for (size_t o = 0; o < outputs.size(); ++o) {
    int mismatches = 0;
    for (int64_t i = 0; i < outputs[o].num_elements() && mismatches < 5; ++i) {
      const double want = expected[o].get_float(i), got = outputs[o].get_float(i);
      // FMA contraction and summation order differ from the interpreter's rounding.
      if (!(std::abs(got - want) <= 1e-4 + 1e-4 * std::abs(want))) {
        ADD_FAILURE() << "output " << o << " element " << i << ": GPU " << got << ", interpreter " << want;
        ++mismatches;
      }
    }
  }
  Expected<std::vector<double>> samples = c.exe->time_on_device(args.data(), 1, 3, 2);
  ASSERT_TRUE(samples.ok()) << samples.status().to_string();
  ASSERT_EQ(samples->size(), 2u);
  for (double s : *samples) EXPECT_GT(s, 0);
}

TEST(CudaRunner, TheDocsGemmMatchesTheInterpreter) { expect_matches_interpreter(kGemm, kGpuGemm); }

TEST(CudaRunner, PartialTilesMatchTheInterpreter) {
  expect_matches_interpreter(kGemm,
                             "split(C.i, 24, io, ii)\nsplit(C.j, 16, jo, ji)\nreorder(C, io, jo, ii, ji, k)\n"
                             "bind(C.io, blockIdx.y)\nbind(C.jo, blockIdx.x)\nbind(C.ii, threadIdx.y)\n"
                             "bind(C.ji, threadIdx.x)");
}

TEST(CudaRunner, TwoKernelsWithAGlobalBufferMatchTheInterpreter) {
  expect_matches_interpreter(kTwoStages, kTwoKernels);
}

TEST(CudaRunner, AHostLoopAroundAKernelMatchesTheInterpreter) { expect_matches_interpreter(kGemm, kHostLoop); }

TEST(CudaRunner, APerThreadAccumulatorMatchesTheInterpreter) {
  expect_matches_interpreter(kGemm, std::string(kGpuGemm) + "\ncache_write(C, CL)\ncompute_at(CL, C.ji)");
}

TEST(CudaRunner, TheDeviceTimingProtocolGivesPositiveSamples) {
  if (!have_gpu()) GTEST_SKIP() << cuda_backend().target().run_unavailable;
  Compiled c = compile(kGemm, kGpuGemm);
  ASSERT_TRUE(c.exe);
  std::vector<HostBuffer> inputs = make_random_inputs(*c.program, 1);
  std::vector<HostBuffer> outputs = make_output_buffers(c.nest);
  std::vector<void*> args{inputs[0].data(), inputs[1].data(), outputs[0].data()};
  TimingOptions options;
  options.repeat = 3;
  options.min_repeat_ms = 5;
  Expected<TimingStats> stats = time_on_device(*c.exe, args.data(), options);
  ASSERT_TRUE(stats.ok()) << stats.status().to_string();
  EXPECT_EQ(stats->repeat, 3);
  EXPECT_GE(stats->number, 1);
  EXPECT_GT(stats->median_s, 0);
}

}  // namespace
}  // namespace tensorgym
