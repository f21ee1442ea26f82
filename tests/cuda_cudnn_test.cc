// The cuda target's vendor baselines, cuDNN's convolution and cuBLAS SGEMM
// (Backend::library_conv2d, library_matmul): the shape checks and the errors without a
// GPU run anywhere, the entry points where cuDNN is installed; on a GPU with the
// library, its results against the reference evaluator.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/backend/registry.h"
#include "codegen/cuda/cuda_driver.h"
#include "codegen/cuda/cudnn_conv.h"
#include "codegen/interp/compare.h"
#include "codegen/interp/evaluator.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/ir/program.h"
#include "datasets/op_library.h"
#include "tests/cuda_test_support.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

using namespace cuda_test;

bool have_gpu() { return cuda_backend().target().can_run; }

// The ops-v0 convolution `spec` as the library takes it.
Conv2dParams params_of(const ConvSpec& spec) {
  Conv2dParams p;
  p.batch = spec.batch;
  p.in_channels = spec.in_channels;
  p.height = spec.input_size.at(0);
  p.width = spec.input_size.at(1);
  p.out_channels = spec.out_channels;
  p.kernel_h = p.kernel_w = spec.kernel;
  p.stride_h = p.stride_w = spec.stride;
  p.pad_h = p.pad_w = spec.pad;
  p.dilation_h = p.dilation_w = spec.dilation;
  p.groups = spec.groups;
  return p;
}

ConvSpec conv_spec(int64_t batch, int64_t in_channels, int64_t height, int64_t width, int64_t out_channels,
                   int64_t kernel, int64_t stride, int64_t pad, int64_t dilation, int64_t groups) {
  ConvSpec spec;
  spec.batch = batch;
  spec.in_channels = in_channels;
  spec.input_size = {height, width};
  spec.out_channels = out_channels;
  spec.kernel = kernel;
  spec.stride = stride;
  spec.pad = pad;
  spec.dilation = dilation;
  spec.groups = groups;
  return spec;
}

// 2 images of 3 x 11 x 9 (odd, not square), 5 filters of 3 x 3, stride 2, padding 1.
ConvSpec odd_conv() { return conv_spec(2, 3, 11, 9, 5, 3, 2, 1, 1, 1); }

// 4 -> 6 channels in 2 groups, 3 x 3 dilated by 2, padding 2, stride 1, on 7 x 10.
ConvSpec grouped_dilated_conv() { return conv_spec(1, 4, 7, 10, 6, 3, 1, 2, 2, 2); }

TEST(Conv2dParams, OutputSizesAndFlopsAreTheProgramsOwn) {
  for (const ConvSpec& spec : {odd_conv(), grouped_dilated_conv()}) {
    const Conv2dParams p = params_of(spec);
    const std::vector<int64_t> out = conv_output_size(spec);
    EXPECT_EQ(p.out_height(), out[0]);
    EXPECT_EQ(p.out_width(), out[1]);
  }
  EXPECT_EQ(params_of(odd_conv()).out_height(), 6);  // (11 + 2 - 3) / 2 + 1
  EXPECT_EQ(params_of(odd_conv()).out_width(), 5);   // (9 + 2 - 3) / 2 + 1
  // 2 images x 5 filters x 6 x 5 outputs, each 3 x 3 x 3 multiply-adds.
  EXPECT_DOUBLE_EQ(params_of(odd_conv()).flops(), 2.0 * 2 * 5 * 6 * 5 * 27);
  Conv2dParams just_fits = params_of(odd_conv());
  just_fits.kernel_h = 13;  // the padded height
  EXPECT_EQ(just_fits.out_height(), 1);
  just_fits.kernel_h = 14;
  EXPECT_EQ(just_fits.out_height(), 0);
}

TEST(CudnnConv, ShapesCuDnnCannotTakeAreInvalidArgumentsAnywhere) {
  Conv2dParams groups = params_of(odd_conv());
  groups.groups = 2;  // 3 input channels
  Conv2dParams empty = params_of(odd_conv());
  empty.kernel_h = 14;  // one row more than the padded 13: (13 - 14) / 2 would round to 0, not -1
  Conv2dParams huge = params_of(odd_conv());
  huge.batch = 1 << 20;
  huge.height = huge.width = 1 << 10;
  Conv2dParams negative = params_of(odd_conv());
  negative.pad_w = -1;
  for (const auto& [p, what] :
       std::vector<std::pair<Conv2dParams, std::string>>{{groups, "the groups do not divide both channel counts"},
                                                         {empty, "the output is empty"},
                                                         {huge, "a tensor has 2^31 elements or more"},
                                                         {negative, "a padding is negative"}}) {
    const auto exe = cuda_backend().library_conv2d(p);
    EXPECT_EQ(exe.status().code(), StatusCode::kInvalidArgument) << what;
    EXPECT_CONTAINS(exe.status().message(), "cuDNN convolution: " + what);
  }
}

TEST(CudnnConv, TargetsWithoutAVendorConvolutionSaySo) {
  Expected<const Backend*> cpu = find_backend("cpu");
  ASSERT_TRUE(cpu.ok());
  const auto exe = (*cpu)->library_conv2d(params_of(odd_conv()));
  EXPECT_EQ(exe.status().code(), StatusCode::kUnimplemented);
  EXPECT_CONTAINS(exe.status().message(), "target cpu has no vendor convolution");
}

TEST(CudnnConv, WithoutAGpuBothBaselinesSayWhyAndNothingChanges) {
  if (have_gpu()) GTEST_SKIP() << "a GPU is present";
  const TargetInfo before = cuda_backend().target();
  for (int attempt = 0; attempt < 2; ++attempt) {
    const auto conv = cuda_backend().library_conv2d(params_of(odd_conv()));
    EXPECT_EQ(conv.status().code(), StatusCode::kUnavailable);
    EXPECT_EQ(conv.status().message(), cuda::run_unavailable_reason());
    EXPECT_CONTAINS(conv.status().message(), "no GPU on this machine: ");
    const auto gemm = cuda_backend().library_matmul(8, 8, 8);
    EXPECT_EQ(gemm.status().code(), StatusCode::kUnavailable);
    EXPECT_CONTAINS(gemm.status().message(), "no GPU on this machine: ");
  }
  // The device was never initialized, and the target still says why it cannot run.
  EXPECT_FALSE(cuda::Driver::get().ok());
  EXPECT_FALSE(cuda_backend().target().can_run);
  EXPECT_EQ(cuda_backend().target().run_unavailable, before.run_unavailable);
}

TEST(CudnnConv, WhereCuDnnIsInstalledEveryEntryPointResolves) {
  const Expected<std::string> library = cuda::cudnn_library();
  if (!library.ok() && library.status().code() == StatusCode::kUnavailable) {
    EXPECT_CONTAINS(library.status().message(), "cuDNN not found: ");
    GTEST_SKIP() << library.status().message();
  }
  ASSERT_TRUE(library.ok()) << library.status().to_string();
  // "cuDNN 9.1.0 (libcudnn.so.9)": version 8 or later, from the library that loaded.
  EXPECT_CONTAINS(*library, "(libcudnn.so");
  ASSERT_EQ(library->rfind("cuDNN ", 0), 0u) << *library;
  EXPECT_GE(std::stoi(library->substr(6)), 8) << *library;
  const Expected<std::string> again = cuda::cudnn_library();  // loaded once, the same
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *library);
}

// ---- on a GPU with the library ---------------------------------------------------------

// The executable of `make` run on seeded random inputs, its one output compared in
// every element with the reference evaluator's `output` of `program_text`.
template <class Make>
void expect_library_matches_evaluator(const std::string& program_text, const std::string& output, Make make) {
  if (!have_gpu()) GTEST_SKIP() << cuda_backend().target().run_unavailable;
  Expected<std::shared_ptr<const Executable>> exe = make();
  if (!exe.ok() && exe.status().code() == StatusCode::kUnavailable) GTEST_SKIP() << exe.status().message();
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  Expected<Program> program = parse_program(program_text);
  ASSERT_TRUE(program.ok()) << program.status().to_string();
  std::vector<HostBuffer> inputs = make_random_inputs(*program, 11);
  const StageDef* out = program->find_stage(output);
  ASSERT_NE(out, nullptr);
  HostBuffer result(out->dtype, out->shape());
  std::vector<void*> args{inputs[0].data(), inputs[1].data(), result.data()};
  const Status run = (*exe)->run_checked(args.data(), 1);
  ASSERT_TRUE(run.ok()) << run.to_string();
  ProgramEvaluator evaluator(*program, const_pointers(inputs));
  const Comparison c = compare_with_evaluator(evaluator, output, result, tolerance_for(*program, output, 1e-5, 1e-6),
                                              result.num_elements(), 1);
  EXPECT_TRUE(c.match) << c.describe();
  EXPECT_EQ(c.checked, result.num_elements());
  Expected<std::vector<double>> samples = (*exe)->time_on_device(args.data(), 1, 2, 2);
  ASSERT_TRUE(samples.ok()) << samples.status().to_string();
  ASSERT_EQ(samples->size(), 2u);
  for (double s : *samples) EXPECT_GT(s, 0);
}

void expect_cudnn_matches_evaluator(const ConvSpec& spec) {
  const Conv2dParams params = params_of(spec);
  std::vector<std::string> remarks;
  expect_library_matches_evaluator(conv_program(spec), "Y", [&] {
    auto exe = cuda_backend().library_conv2d(params);
    if (exe.ok()) remarks = (*exe)->remarks();
    return exe;
  });
  if (remarks.empty()) return;  // skipped or failed above
  // The algorithm it kept, then every one cuDNN tried.
  EXPECT_CONTAINS(remarks[0], "CUDNN_CONVOLUTION_FWD_ALGO_");
  EXPECT_CONTAINS(remarks[0], "FMA math");
  EXPECT_GE(remarks.size(), 2u);
}

TEST(CudnnConv, AnOddStridedPaddedConvolutionMatchesTheReferenceEvaluator) {
  expect_cudnn_matches_evaluator(odd_conv());
}

TEST(CudnnConv, AGroupedDilatedConvolutionMatchesTheReferenceEvaluator) {
  expect_cudnn_matches_evaluator(grouped_dilated_conv());
}

TEST(CublasMatmul, AnOddGemmMatchesTheReferenceEvaluator) {
  expect_library_matches_evaluator("input A: f32[37, 19]\ninput B: f32[19, 23]\nC[i, j] += A[i, k] * B[k, j]\n", "C",
                                   [] { return cuda_backend().library_matmul(37, 23, 19); });
}

}  // namespace
}  // namespace tensorgym
