// What the cuda target's tests share: the programs, docs/gpu.md's GPU GEMM schedule,
// the registered backend, and a parsed schedule.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "codegen/backend/registry.h"
#include "codegen/interp/compare.h"
#include "codegen/interp/evaluator.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/interp/interpreter.h"
#include "codegen/ir/program.h"
#include "codegen/schedule/schedule.h"
#include "datasets/op_library.h"

namespace tensorgym::cuda_test {

inline const char* kGemm =
    "input A: f32[64, 48]\n"
    "input B: f32[48, 40]\n"
    "C[i, j] += A[i, k] * B[k, j]\n";

// Two stages: a producer B the consumer C can compute where it likes.
inline const char* kTwoStages =
    "input A: f32[64, 32]\n"
    "B[i, j] = A[i, j] * 2.0\n"
    "C[i, j] = B[i, j] + 1.0\n";

// docs/gpu.md's GPU GEMM: tiles of 16 x 8 outputs, one block each, one thread per
// output, the reduction inside each thread.
inline const char* kGpuGemm =
    "split(C.i, 16, io, ii)\n"
    "split(C.j, 8, jo, ji)\n"
    "reorder(C, io, jo, ii, ji, k)\n"
    "bind(C.io, blockIdx.y)\n"
    "bind(C.jo, blockIdx.x)\n"
    "bind(C.ii, threadIdx.y)\n"
    "bind(C.ji, threadIdx.x)";

struct Family {
  std::string name;
  std::string program;
};

// One small instance of each ops-v0 family (datasets/ops_suite.cc's templates).
inline std::vector<Family> families() {
  ConvSpec c1d{.batch = 1, .in_channels = 4, .out_channels = 8, .input_size = {20}, .kernel = 3, .pad = 1};
  ConvSpec c2d{.batch = 1, .in_channels = 3, .out_channels = 8, .input_size = {10, 10}, .kernel = 3, .stride = 2,
               .pad = 1};
  ConvSpec c3d{.batch = 1, .in_channels = 2, .out_channels = 4, .input_size = {4, 6, 6}, .kernel = 3, .pad = 1};
  ConvSpec grp{.batch = 1, .in_channels = 8, .out_channels = 8, .input_size = {6, 6}, .kernel = 3, .pad = 1,
               .groups = 4};
  ConvSpec dil{.batch = 1, .in_channels = 4, .out_channels = 4, .input_size = {9, 9}, .kernel = 3, .pad = 2,
               .dilation = 2};
  DepthwiseSpec dep{.batch = 1, .channels = 8, .height = 10, .width = 10, .kernel = 3, .pad = 1};
  TransposedConvSpec t2d{.batch = 1, .in_channels = 4, .out_channels = 4, .height = 4, .width = 4, .kernel = 4,
                         .stride = 2, .pad = 1};
  CapsuleConvSpec cap{.batch = 1, .in_channels = 2, .out_channels = 2, .height = 4, .width = 4, .kernel = 3,
                      .pad = 1, .capsule = 4};
  return {{"gmm", matmul_program(0, 24, 40, 16)},
          {"gmm-b", matmul_program(2, 16, 24, 8)},
          {"c1d", conv_program(c1d)},
          {"c2d", conv_program(c2d)},
          {"c3d", conv_program(c3d)},
          {"grp", conv_program(grp)},
          {"dil", conv_program(dil)},
          {"dep", depthwise_conv2d_program(dep)},
          {"t2d", transposed_conv2d_program(t2d)},
          {"cap", capsule_conv2d_program(cap)},
          {"nrm-b", norm_program(4, 12, 20)}};
}

inline const Backend& cuda_backend() {
  Expected<const Backend*> b = find_backend("cuda");
  EXPECT_TRUE(b.ok()) << b.status().to_string();
  return **b;
}

inline ProgramPtr parsed_program(const std::string& text) {
  Expected<Program> p = parse_program(text);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return std::make_shared<const Program>(std::move(*p));
}

inline Schedule scheduled(const std::string& program_text, const std::string& trace) {
  Expected<Program> p = parse_program(program_text);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  Expected<Schedule> s = Schedule::from_text(std::make_shared<const Program>(std::move(*p)), trace);
  EXPECT_TRUE(s.ok()) << trace << ": " << s.status().to_string();
  return std::move(*s);
}

// The GPU nest's outputs against the reference evaluator, on seeded random inputs:
// empty when they match, what differs otherwise.
inline std::string interpreter_mismatch(const Program& program, const LoopNest& nest) {
  std::vector<HostBuffer> inputs = make_random_inputs(program, 7);
  std::vector<HostBuffer> outputs = make_output_buffers(nest);
  Status run = interpret(nest, const_pointers(inputs), pointers(outputs));
  if (!run.ok()) return run.to_string();
  ProgramEvaluator evaluator(program, const_pointers(inputs));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = nest.outputs[i].name;
    Comparison c = compare_with_evaluator(evaluator, name, outputs[i], tolerance_for(program, name, 1e-5, 1e-6),
                                          1 << 20, 1);
    if (!c.match) return name + ": " + c.describe();
  }
  return "";
}

}  // namespace tensorgym::cuda_test
