// The interpreter with sampled blocks (InterpreterOptions::sample_blocks) on GPU
// nests: exact at the points the sampled blocks write, the first and last blocks
// always among them, a wrong or silent block caught, and the default run unchanged.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "codegen/ir/program.h"
#include "codegen/lower/default_gpu_schedule.h"
#include "codegen/lower/random_gpu_schedule.h"
#include "tests/cuda_test_support.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

using cuda_test::cuda_backend;

LoopNest lowered(const Schedule& s) {
  Expected<LoopNest> nest = lower(s, cuda_backend().lowering());
  EXPECT_TRUE(nest.ok()) << nest.status().to_string();
  return std::move(*nest);
}

struct SampledRun {
  Status status;
  std::vector<HostBuffer> inputs, outputs;
};

SampledRun run_sampled(const Program& program, const LoopNest& nest, int64_t sample_blocks, uint64_t seed = 1) {
  SampledRun r;
  r.inputs = make_random_inputs(program, 7);
  r.outputs = make_output_buffers(nest);  // NaN-filled: unwritten points stay NaN
  InterpreterOptions options;
  options.sample_blocks = sample_blocks;
  options.sample_seed = seed;
  r.status = interpret(nest, const_pointers(r.inputs), pointers(r.outputs), options);
  return r;
}

Comparison compare_written(const Program& program, const SampledRun& r, int64_t* written) {
  ProgramEvaluator evaluator(program, const_pointers(r.inputs));
  const std::string name = program.outputs.front();
  return compare_written_with_evaluator(evaluator, name, r.outputs.front(), tolerance_for(program, name, 1e-5, 1e-6),
                                        1 << 20, 1, written);
}

// docs/gpu.md's GEMM at 64 x 40: 4 x 5 blocks of 16 x 8 threads.
TEST(SampledBlocks, GemmMatchesAtTheWrittenPointsOfTheCornerBlocks) {
  const Schedule s = cuda_test::scheduled(cuda_test::kGemm, cuda_test::kGpuGemm);
  const LoopNest nest = lowered(s);
  const Program& program = s.program();
  SampledRun r = run_sampled(program, nest, 2);
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  int64_t written = 0;
  const Comparison c = compare_written(program, r, &written);
  EXPECT_TRUE(c.match) << c.describe();
  EXPECT_EQ(written, 4 * 16 * 8);  // blocks (0, 0), (0, 4), (3, 0), (3, 4)
  const float* C = r.outputs[0].typed<float>();
  EXPECT_FALSE(std::isnan(C[0]));
  EXPECT_FALSE(std::isnan(C[64 * 40 - 1]));
  EXPECT_TRUE(std::isnan(C[16 * 40 + 8]));  // block (1, 1) did not run

  SampledRun three = run_sampled(program, nest, 3);
  ASSERT_TRUE(three.status.ok()) << three.status.to_string();
  EXPECT_TRUE(compare_written(program, three, &written).match);
  EXPECT_EQ(written, 9 * 16 * 8);
}

TEST(SampledBlocks, ConvolutionSchedulesMatchAtTheWrittenPoints) {
  ConvSpec spec{.batch = 1, .in_channels = 8, .out_channels = 16, .input_size = {18, 18}, .kernel = 3, .pad = 1};
  ProgramPtr program = cuda_test::parsed_program(conv_program(spec));
  const std::string out = program->outputs.front();
  const int64_t n = [&] {
    int64_t e = 1;
    for (int64_t d : program->shape_of(out)) e *= d;
    return e;
  }();
  // The default schedule: fused spatial loops over blockIdx.x and threadIdx.x.
  Expected<Schedule> d = default_gpu_schedule(program, cuda_backend().lowering());
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  SampledRun r = run_sampled(*program, lowered(*d), 4);
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  int64_t written = 0;
  Comparison c = compare_written(*program, r, &written);
  EXPECT_TRUE(c.match) << c.describe();
  EXPECT_GT(written, 0);
  EXPECT_LT(written, n);
  EXPECT_FALSE(std::isnan(r.outputs[0].typed<float>()[0]));
  EXPECT_FALSE(std::isnan(r.outputs[0].typed<float>()[n - 1]));
  for (int seed = 0; seed < 6; ++seed) {
    Rng rng(uint64_t(seed) * 7919 + 3);
    Expected<Schedule> s = random_gpu_schedule(program, cuda_backend().lowering(), rng);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    SCOPED_TRACE(s->trace().to_string());
    SampledRun rs = run_sampled(*program, lowered(*s), 3, uint64_t(seed));
    ASSERT_TRUE(rs.status.ok()) << rs.status.to_string();
    c = compare_written(*program, rs, &written);
    EXPECT_TRUE(c.match) << c.describe();
    EXPECT_GT(written, 0);
  }
}

TEST(SampledBlocks, AWrongWrittenPointIsCaught) {
  const Schedule s = cuda_test::scheduled(cuda_test::kGemm, cuda_test::kGpuGemm);
  const Program& program = s.program();
  SampledRun r = run_sampled(program, lowered(s), 2);
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  r.outputs[0].typed<float>()[64 * 40 - 1] += 1.0f;  // in the last block
  int64_t written = 0;
  const Comparison c = compare_written(program, r, &written);
  EXPECT_FALSE(c.match);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.worst_index, 64 * 40 - 1);
}

TEST(SampledBlocks, NothingWrittenIsAMismatch) {
  const Schedule s = cuda_test::scheduled(cuda_test::kGemm, cuda_test::kGpuGemm);
  SampledRun r;
  r.inputs = make_random_inputs(s.program(), 7);
  r.outputs = make_output_buffers(lowered(s));
  int64_t written = -1;
  EXPECT_FALSE(compare_written(s.program(), r, &written).match);
  EXPECT_EQ(written, 0);
}

// C[b * 2 + t] = 1 for blocks b < 3 of 4: the last block stores nothing.
LoopNest silent_last_block_nest() {
  using namespace ir_build;
  LoopNest nest;
  nest.outputs = {Arg("C", {8})};
  Stmt store = IfThenElse::make(LT::make(V("b"), I(3)), St("C", V("b") * I(2) + V("t"), F(1)));
  nest.body = For::make("b", I(0), I(4), ForKind::kSerial,
                        For::make("t", I(0), I(2), ForKind::kSerial, store, "threadIdx.x"), "blockIdx.x");
  return nest;
}

TEST(SampledBlocks, ABlockThatStoresNothingIsAnError) {
  const LoopNest nest = silent_last_block_nest();
  std::vector<HostBuffer> outputs = make_output_buffers(nest);
  EXPECT_TRUE(interpret(nest, {}, pointers(outputs)).ok());  // a whole run does not check
  InterpreterOptions options;
  options.sample_blocks = 2;
  const Status st = interpret(nest, {}, pointers(outputs), options);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.to_string();
  EXPECT_NE(st.message().find("blockIdx.x = 3"), std::string::npos) << st.to_string();
}

// A kernel whose output another kernel reads runs whole; only the reader is sampled.
TEST(SampledBlocks, AKernelWhoseOutputIsReadRunsWhole) {
  using namespace ir_build;
  LoopNest nest;
  nest.outputs = {Arg("B", {8}), Arg("C", {8})};
  Stmt first = For::make("b", I(0), I(4), ForKind::kSerial,
                         For::make("t", I(0), I(2), ForKind::kSerial, St("B", V("b") * I(2) + V("t"), F(2)),
                                   "threadIdx.x"),
                         "blockIdx.x");
  Stmt second = For::make(
      "c", I(0), I(4), ForKind::kSerial,
      For::make("u", I(0), I(2), ForKind::kSerial,
                St("C", V("c") * I(2) + V("u"), Ld("B", I(7) - V("c") * I(2) - V("u")) + F(1)), "threadIdx.x"),
      "blockIdx.x");
  nest.body = Seq({first, second});
  std::vector<HostBuffer> outputs = make_output_buffers(nest);
  InterpreterOptions options;
  options.sample_blocks = 2;
  ASSERT_TRUE(interpret(nest, {}, pointers(outputs), options).ok());
  const float* B = outputs[0].typed<float>();
  const float* C = outputs[1].typed<float>();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(B[i], 2.0f) << i;  // whole
  for (int i : {0, 1, 6, 7}) EXPECT_EQ(C[i], 3.0f) << i;    // blocks 0 and 3
  for (int i : {2, 3, 4, 5}) EXPECT_TRUE(std::isnan(C[i])) << i;
}

TEST(SampledBlocks, DefaultsAndLargeSamplesRunEveryBlock) {
  const Schedule s = cuda_test::scheduled(cuda_test::kGemm, cuda_test::kGpuGemm);
  const LoopNest nest = lowered(s);
  const Program& program = s.program();
  std::vector<HostBuffer> inputs = make_random_inputs(program, 7);
  std::vector<HostBuffer> whole = make_output_buffers(nest), large = make_output_buffers(nest);
  ASSERT_TRUE(interpret(nest, const_pointers(inputs), pointers(whole)).ok());
  InterpreterOptions options;
  options.sample_blocks = 5;  // every block of 4 x 5
  ASSERT_TRUE(interpret(nest, const_pointers(inputs), pointers(large), options).ok());
  EXPECT_EQ(std::memcmp(whole[0].data(), large[0].data(), size_t(whole[0].num_elements()) * 4), 0);
  EXPECT_EQ(cuda_test::interpreter_mismatch(program, nest), "");
  // Without sampling the compiled form is what it was: no sampling instructions.
  Expected<std::unique_ptr<CompiledNest>> plain = CompiledNest::compile(nest);
  Expected<std::unique_ptr<CompiledNest>> sampled = CompiledNest::compile(nest, options);
  ASSERT_TRUE(plain.ok() && sampled.ok());
  EXPECT_LT((*plain)->num_instructions(), (*sampled)->num_instructions());
}

}  // namespace
}  // namespace tensorgym
