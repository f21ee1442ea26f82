// Constant inputs (`input W: ... const`) and their work: the parser keeps the mark, the
// lowering's split finds the root statements that read only constant inputs, and the
// CPU kernel does that work once in prepare(), not in the runs it times.
#include <gtest/gtest.h>

#include <string>

#include "codegen/analysis/constant_work.h"
#include "codegen/analysis/cost_model.h"
#include "codegen/analysis/features.h"
#include "codegen/cpu/cpu_backend.h"
#include "codegen/interp/compare.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/interp/interpreter.h"
#include "codegen/ir/ir_printer.h"
#include "codegen/lower/lower.h"
#include "codegen/schedule/schedule.h"

namespace tensorgym {
namespace {

ProgramPtr parse(const std::string& text) {
  Expected<Program> p = parse_program(text);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return std::make_shared<const Program>(std::move(*p));
}

// A padded 1-D convolution whose weights may be constant: P pads X, WP packs W.
std::string conv_text(bool constant) {
  return std::string("input X: f32[4, 30]\n") + "input W: f32[8, 4, 3]" + (constant ? " const" : "") +
         "\n"
         "P[c, h] = select(h >= 1 && h <= 30, X[c, h - 1], 0.0) where h in 0..32\n"
         "Y[f, y] += P[c, y + r] * W[f, c, r] where y in 0..30\n";
}
// W packed once at the root, [c][r][f]: the constant work; P stays per run.
const char* kPackedSchedule = "cache_read(W, Y, WP); reorder_storage(WP, ax1, ax2, ax0); vectorize(Y.y)";

LoopNest lower_for_cpu(const ProgramPtr& p, const std::string& schedule) {
  Expected<Schedule> s = Schedule::from_text(p, schedule);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  Expected<LoopNest> nest = lower(*s, cpu_backend().lowering());
  EXPECT_TRUE(nest.ok()) << nest.status().to_string();
  return *nest;
}

TEST(ConstantInputs, TheParserKeepsTheMarkAndPrintsIt) {
  ProgramPtr p = parse(conv_text(true));
  ASSERT_EQ(p->inputs.size(), 2u);
  EXPECT_FALSE(p->inputs[0].constant);
  EXPECT_TRUE(p->inputs[1].constant);
  EXPECT_NE(p->to_text().find("input W: f32[8, 4, 3] const\n"), std::string::npos) << p->to_text();
  ProgramPtr again = parse(p->to_text());
  EXPECT_TRUE(structural_equal(*p, *again));
  EXPECT_FALSE(structural_equal(*p, *parse(conv_text(false))));  // the mark is part of the program
  // Only after the dimensions, once.
  EXPECT_FALSE(parse_program("input W: const f32[3]\nY[i] = W[i]\n").ok());
  Expected<Program> twice = parse_program("input W: f32[3] const const\nY[i] = W[i]\n");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("after the end of the statement"), std::string::npos)
      << twice.status().message();
}

TEST(ConstantWork, RootPacksOfConstantInputsSplitOffAndNothingElse) {
  const LoopNest nest = lower_for_cpu(parse(conv_text(true)), kPackedSchedule);
  std::optional<ConstantWork> work = split_constant_work(nest);
  ASSERT_TRUE(work.has_value()) << to_string(nest.body);
  ASSERT_EQ(work->prepared.size(), 1u);
  EXPECT_EQ(work->prepared[0].name, "WP");
  EXPECT_EQ(work->prepared[0].shape, std::vector<int64_t>{8 * 4 * 3});
  const std::string prologue = to_string(work->prologue.body), main = to_string(work->main.body);
  EXPECT_NE(prologue.find("WP["), std::string::npos) << prologue;
  EXPECT_EQ(prologue.find("P["), prologue.find("WP[") + 1) << prologue;  // only WP's stores: no P
  EXPECT_EQ(main.find("allocate WP"), std::string::npos) << main;
  EXPECT_NE(main.find("allocate P"), std::string::npos) << main;
  EXPECT_EQ(main.find("W["), std::string::npos) << main;  // reads WP, never W
  ASSERT_EQ(work->main.inputs.size(), 3u);
  EXPECT_EQ(work->main.inputs[2].name, "WP");
  ASSERT_EQ(work->prologue.outputs.size(), 1u);
  EXPECT_EQ(work->main.outputs.size(), 1u);

  // Not constant: weights not marked; a pack of X; a buffer mixing W and X; work at
  // the convolution's own loops (a pack per output row).
  EXPECT_FALSE(split_constant_work(lower_for_cpu(parse(conv_text(false)), kPackedSchedule)).has_value());
  EXPECT_FALSE(split_constant_work(lower_for_cpu(parse(conv_text(true)), "cache_read(X, P, XP)")).has_value());
  ProgramPtr mixed = parse(
      "input X: f32[8]\ninput W: f32[8] const\n"
      "M[i] = W[i] + X[i]\n"
      "Y[i] = M[i] * 2.0\n");
  EXPECT_FALSE(split_constant_work(lower_for_cpu(mixed, "")).has_value());
  EXPECT_FALSE(split_constant_work(lower_for_cpu(parse(conv_text(true)), "cache_read(W, Y, WP); compute_at(WP, Y.f)"))
                   .has_value());
  // A chain of constant stages is constant work, in order.
  ProgramPtr chain = parse(
      "input X: f32[8]\ninput W: f32[8] const\n"
      "A[i] = W[i] * 2.0\n"
      "B[i] = A[i] + 1.0\n"
      "Y[i] = B[i] * X[i]\n");
  std::optional<ConstantWork> two = split_constant_work(lower_for_cpu(chain, ""));
  ASSERT_TRUE(two.has_value());
  ASSERT_EQ(two->prepared.size(), 2u);
  EXPECT_EQ(two->prepared[0].name, "A");
  EXPECT_EQ(two->prepared[1].name, "B");
}

// The features and the cost model describe what the runs repeat: the pack's stores are
// in the summary only where the weights are not constant.
TEST(ConstantWork, TheNestSummaryLeavesTheConstantWorkOut) {
  auto stores_to = [](const NestSummary& s, const std::string& name) {
    int n = 0;
    for (const NestStore& st : s.stores) n += st.node->name == name;
    return n;
  };
  // (A summary points into its nest's statements: the nests outlive them.)
  const LoopNest constant_nest = lower_for_cpu(parse(conv_text(true)), kPackedSchedule);
  const LoopNest plain_nest = lower_for_cpu(parse(conv_text(false)), kPackedSchedule);
  const NestSummary constant = summarize_nest(constant_nest);
  const NestSummary plain = summarize_nest(plain_nest);
  EXPECT_EQ(stores_to(constant, "WP"), 0);
  EXPECT_GT(stores_to(plain, "WP"), 0);
  EXPECT_EQ(stores_to(constant, "Y"), stores_to(plain, "Y"));
  EXPECT_EQ(stores_to(constant, "P"), stores_to(plain, "P"));
  EXPECT_LT(est_cycles(constant_nest), est_cycles(plain_nest));
}

// Runs `kernel` through prepare() and run_prepared(), or through run().
std::vector<HostBuffer> run_with(const CpuKernel& kernel, const PreparedConstants* prepared,
                                 std::vector<HostBuffer>& inputs, bool plain) {
  std::vector<HostBuffer> outputs = make_output_buffers(kernel.nest());
  std::vector<void*> args;
  for (HostBuffer& b : inputs) args.push_back(b.data());
  for (HostBuffer& b : outputs) args.push_back(b.data());
  if (plain)
    kernel.run(args.data(), 1);
  else
    kernel.run_prepared(prepared, args.data(), 1);
  return outputs;
}

TEST(ConstantWork, TheCpuKernelPacksOnceInPrepareAndComputesWhatTheInterpreterDoes) {
  ProgramPtr p = parse(conv_text(true));
  Expected<Schedule> s = Schedule::from_text(p, kPackedSchedule);
  ASSERT_TRUE(s.ok());
  Expected<LoopNest> generic = lower(*s);
  ASSERT_TRUE(generic.ok());
  const LoopNest nest = lower_for_cpu(p, kPackedSchedule);
  CpuCompileOptions keep;
  keep.keep_llvm_ir = true;
  Expected<std::shared_ptr<const CpuKernel>> kernel = compile_cpu_kernel(nest, keep);
  ASSERT_TRUE(kernel.ok()) << kernel.status().to_string();
  EXPECT_TRUE((*kernel)->has_constant_work());
  EXPECT_NE((*kernel)->llvm_ir().find("the constant work"), std::string::npos);

  std::vector<HostBuffer> inputs = make_random_inputs(*p, 3);
  std::vector<HostBuffer> expected = make_output_buffers(*generic);
  ASSERT_TRUE(interpret(*generic, const_pointers(inputs), pointers(expected)).ok());
  std::vector<void*> args;
  for (HostBuffer& b : inputs) args.push_back(b.data());
  Expected<std::shared_ptr<const PreparedConstants>> prepared = (*kernel)->prepare(args.data(), 1);
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  ASSERT_NE(prepared->get(), nullptr);
  for (bool plain : {true, false}) {
    std::vector<HostBuffer> got = run_with(**kernel, prepared->get(), inputs, plain);
    Comparison c = compare_buffers(expected[0], got[0], Tolerance{1e-5, 1e-6});
    EXPECT_TRUE(c.match) << (plain ? "run: " : "run_prepared: ") << c.describe();
  }
  // The prepared runs read the weights packed in prepare(): zeroing W changes run()'s
  // output, not theirs.
  std::vector<HostBuffer> before = run_with(**kernel, prepared->get(), inputs, false);
  for (int64_t i = 0; i < inputs[1].num_elements(); ++i) inputs[1].set_float(i, 0);
  std::vector<HostBuffer> still = run_with(**kernel, prepared->get(), inputs, false);
  EXPECT_TRUE(compare_buffers(before[0], still[0], Tolerance{0, 0}).match);
  std::vector<HostBuffer> zero = run_with(**kernel, nullptr, inputs, true);
  for (int64_t i = 0; i < zero[0].num_elements(); ++i) ASSERT_EQ(zero[0].get_float(i), 0.0) << i;

  // Without constant inputs nothing is prepared.
  const LoopNest plain_nest = lower_for_cpu(parse(conv_text(false)), kPackedSchedule);
  Expected<std::shared_ptr<const CpuKernel>> plain = compile_cpu_kernel(plain_nest);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE((*plain)->has_constant_work());
  Expected<std::shared_ptr<const PreparedConstants>> none = (*plain)->prepare(args.data(), 1);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->get(), nullptr);
}

}  // namespace
}  // namespace tensorgym
