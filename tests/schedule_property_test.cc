// Property test: any legal schedule computes what the unscheduled program computes.
// For each operator, random sequences of primitives are applied, lowered, run in the
// reference interpreter on seeded inputs and compared with the unscheduled program
// (exact for integers, a tolerance for reordered float sums). Each trace must also
// print and parse back to the same trace and the same loop nest.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "codegen/interp/compare.h"
#include "codegen/interp/evaluator.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/interp/interpreter.h"
#include "codegen/ir/ir_equality.h"
#include "codegen/ir/ir_printer.h"
#include "codegen/lower/lower.h"
#include "codegen/schedule/random_schedule.h"

namespace tensorgym {
namespace {

struct Operator {
  const char* name;
  const char* text;
};

const Operator kOperators[] = {
    {"gemm",
     "input A: f32[13, 17]\n"
     "input B: f32[17, 11]\n"
     "C[i, j] += A[i, k] * B[k, j]\n"},
    {"gemm_i8",
     "input A: i8[9, 20]\n"
     "input B: i8[20, 7]\n"
     "C[i, j] += i32(A[i, k]) * i32(B[k, j])\n"},
    {"conv2d",
     "input X: f32[1, 3, 7, 7]\n"
     "input W: f32[4, 3, 3, 3]\n"
     "P[n, c, h, w] = select(h >= 1 && h <= 7 && w >= 1 && w <= 7, X[n, c, h - 1, w - 1], 0.0) where h in 0..9, w in 0..9\n"
     "Y[n, f, y, x] += P[n, c, y + r, x + s] * W[f, c, r, s] where y in 0..7, x in 0..7\n"
     "R[n, f, y, x] = max(Y[n, f, y, x], 0.0)\n"},
    {"depthwise",
     "input X: f32[1, 4, 9, 9]\n"
     "input W: f32[4, 3, 3]\n"
     "P[n, c, h, w] = select(h >= 1 && h <= 9 && w >= 1 && w <= 9, X[n, c, h - 1, w - 1], 0.0) where h in 0..11, w in 0..11\n"
     "D[n, c, y, x] += P[n, c, y * 2 + r, x * 2 + s] * W[c, r, s] where y in 0..5, x in 0..5\n"},
    {"softmax",
     "input X: f32[6, 10]\n"
     "M[i] max= X[i, j]\n"
     "E[i, j] = exp(X[i, j] - M[i])\n"
     "S[i] += E[i, j]\n"
     "O[i, j] = E[i, j] / S[i]\n"},
    {"elementwise",
     "input A: f32[5, 12]\n"
     "input B: f32[5, 12]\n"
     "T1[i, j] = A[i, j] * B[i, j]\n"
     "T2[i, j] = T1[i, j] + 1.0\n"
     "T3[i, j] = max(T2[i, j], 0.0)\n"
     "T4[i, j] = tanh(T3[i, j]) * A[i, j]\n"},
};

constexpr int kTracesPerOperator = 200;

class SchedulePropertyTest : public ::testing::TestWithParam<Operator> {};

TEST_P(SchedulePropertyTest, RandomSchedulesComputeTheSameOutput) {
  const Operator& op = GetParam();
  Expected<Program> parsed = parse_program(op.text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  ProgramPtr program = std::make_shared<const Program>(std::move(*parsed));

  Expected<LoopNest> reference = lower(Schedule(program));
  ASSERT_TRUE(reference.ok()) << reference.status().to_string();
  std::vector<HostBuffer> inputs = make_random_inputs(*program, 7);
  std::vector<HostBuffer> expected = make_output_buffers(*reference);
  ASSERT_TRUE(interpret(*reference, const_pointers(inputs), pointers(expected)).ok());

  int total_primitives = 0;
  for (int t = 0; t < kTracesPerOperator; ++t) {
    Rng rng(uint64_t(t) * 7919 + 13);
    Schedule schedule(program);
    total_primitives += apply_random_primitives(schedule, rng, int(rng.range(1, 10)));
    std::string trace = schedule.trace().to_string();
    SCOPED_TRACE(std::string(op.name) + " trace " + std::to_string(t) + ":\n" + trace);

    Expected<LoopNest> nest = lower(schedule);
    ASSERT_TRUE(nest.ok()) << nest.status().to_string();
    std::vector<HostBuffer> actual = make_output_buffers(*nest);
    Status run = interpret(*nest, const_pointers(inputs), pointers(actual));
    ASSERT_TRUE(run.ok()) << run.to_string() << "\n" << to_string(nest->body);
    for (size_t i = 0; i < expected.size(); ++i) {
      Comparison c = compare_buffers(expected[i], actual[i], Tolerance{1e-4, 1e-5});
      ASSERT_TRUE(c.match) << nest->outputs[i].name << ": " << c.describe() << "\n" << to_string(nest->body);
    }

    // The trace's text form replays to the same schedule and the same loop nest.
    Expected<Schedule> replayed = Schedule::from_text(program, trace);
    ASSERT_TRUE(replayed.ok()) << replayed.status().to_string();
    EXPECT_EQ(replayed->trace(), schedule.trace());
    Expected<LoopNest> renest = lower(*replayed);
    ASSERT_TRUE(renest.ok());
    EXPECT_TRUE(structural_equal(renest->body, nest->body));
  }
  // The generator must actually explore: on average several primitives per trace.
  EXPECT_GT(total_primitives, kTracesPerOperator * 2);
}

// lower_reusing, chained as an environment chains its steps (each lowering reuses the
// one before), gives the nest a fresh lowering gives, and reuses where it may.
TEST_P(SchedulePropertyTest, ReusedLoweringsEqualFreshOnes) {
  const Operator& op = GetParam();
  Expected<Program> parsed = parse_program(op.text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  ProgramPtr program = std::make_shared<const Program>(std::move(*parsed));
  int reused = 0;
  for (int t = 0; t < kTracesPerOperator / 4; ++t) {
    Rng rng(uint64_t(t) * 104729 + 7);
    Schedule schedule(program);
    std::shared_ptr<const LoweredNest> previous;
    for (int step = 0; step < 12; ++step) {
      if (apply_random_primitives(schedule, rng, 1) == 0) break;
      SCOPED_TRACE(std::string(op.name) + " trace " + std::to_string(t) + ":\n" + schedule.trace().to_string());
      auto snapshot = std::make_shared<const Schedule>(schedule);
      std::shared_ptr<const ScheduleState> state(snapshot, &snapshot->state());
      Expected<std::shared_ptr<const LoweredNest>> lowered = lower_reusing(state, previous);
      Expected<LoopNest> fresh = lower(*state);
      ASSERT_EQ(lowered.ok(), fresh.ok());
      if (!fresh.ok()) {
        EXPECT_EQ(lowered.status().to_string(), fresh.status().to_string());
        continue;  // the next step reuses the last good lowering
      }
      const LoopNest& nest = (*lowered)->nest;
      ASSERT_EQ(to_string(nest.body), to_string(fresh->body));
      EXPECT_TRUE(structural_equal(nest.body, fresh->body));
      ASSERT_EQ(nest.args().size(), fresh->args().size());
      for (size_t i = 0; i < nest.args().size(); ++i) EXPECT_EQ(nest.args()[i].name, fresh->args()[i].name);
      reused += (*lowered)->reused;
      previous = *lowered;
    }
  }
  // vectorize, parallel and unroll are common among random primitives.
  EXPECT_GT(reused, 0);
}

// Lowers each prefix of `trace` (one primitive a line) as an environment does,
// reusing the lowering before; checks each against a fresh lowering and returns which
// were reused.
std::vector<bool> reuse_along(const char* program_text, const std::vector<std::string>& trace) {
  Expected<Program> parsed = parse_program(program_text);
  EXPECT_TRUE(parsed.ok()) << parsed.status().to_string();
  if (!parsed.ok()) return {};
  ProgramPtr program = std::make_shared<const Program>(std::move(*parsed));
  std::vector<bool> reused;
  std::shared_ptr<const LoweredNest> previous;
  std::string text;
  for (size_t i = 0; i <= trace.size(); ++i) {
    if (i > 0) text += trace[i - 1] + "\n";
    Expected<Schedule> schedule = Schedule::from_text(program, text);
    EXPECT_TRUE(schedule.ok()) << text << schedule.status().to_string();
    if (!schedule.ok()) return {};
    auto snapshot = std::make_shared<const Schedule>(std::move(*schedule));
    std::shared_ptr<const ScheduleState> state(snapshot, &snapshot->state());
    Expected<std::shared_ptr<const LoweredNest>> lowered = lower_reusing(state, previous);
    Expected<LoopNest> fresh = lower(*state);
    EXPECT_TRUE(lowered.ok() && fresh.ok()) << text;
    if (!lowered.ok() || !fresh.ok()) return {};
    EXPECT_EQ(to_string((*lowered)->nest.body), to_string(fresh->body)) << text;
    EXPECT_TRUE(structural_equal((*lowered)->nest.body, fresh->body)) << text;
    if (i > 0) reused.push_back((*lowered)->reused);
    previous = *lowered;
  }
  return reused;
}

// A split by a dividing factor and a reorder before the reduction loop are rewritten
// into the last nest; what could lower differently (a tail guard, a guard on the
// permuted loops, a loop variable in a value, a fused loop, a reduction loop moved
// out) is lowered afresh.
TEST(LowerReusing, RewritesOneSplitOrReorderWhereAFreshLoweringWouldAgree) {
  // gemm: k over 17, so a split by 2 has a tail guard.
  const char* gemm = kOperators[0].text;
  EXPECT_EQ(reuse_along(gemm, {"split(C.k, 2, ko, ki)"}), std::vector<bool>{false});
  const char* square =
      "input A: f32[16, 12]\n"
      "input B: f32[12, 8]\n"
      "C[i, j] += A[i, k] * B[k, j]\n";
  EXPECT_EQ(reuse_along(square, {"split(C.i, 4, io, ii)", "split(C.j, 2, jo, ji)", "reorder(C, io, jo, ii, ji)",
                                 "split(C.k, 3, ko, ki)", "vectorize(C.ji)", "reorder(C, jo, io)"}),
            (std::vector<bool>{true, true, true, true, true, true}));
  // io of one iteration (the simplifier unwraps it); the reduction loop moved out.
  EXPECT_EQ(reuse_along(square, {"split(C.i, 16, io, ii)"}), std::vector<bool>{false});
  EXPECT_EQ(reuse_along(square, {"reorder(C, k, j)"}), std::vector<bool>{false});
  // A fused loop's variable may reach the indices as a plain term (here f = k): a
  // fresh lowering orders the terms of its quotient and remainder differently.
  EXPECT_EQ(reuse_along(square, {"split(C.k, 2, ko, ki)", "fuse(C.ko, C.ki, f)", "split(C.f, 4, fo, fi)"}),
            (std::vector<bool>{true, false, false}));
  // P's h appears in its select: a fresh lowering simplifies the condition anew.
  const char* conv = kOperators[2].text;
  EXPECT_EQ(reuse_along(conv, {"split(P.h, 3, ho, hi)"}), std::vector<bool>{false});
  // The tail guard of w's split depends on the loops being reordered.
  EXPECT_EQ(reuse_along(conv, {"split(P.w, 8, o0, i0)", "reorder(P, i0, c)"}), (std::vector<bool>{false, false}));
}

// ---- the check of reordered sums ---------------------------------------------------

// One 4096-term f32 dot product per output element, of inputs in [-1, 1): the sums
// cancel, so some elements are small next to their rounding.
const char* kLongDot =
    "input A: f32[1024, 4096]\n"
    "input B: f32[1024, 4096]\n"
    "S[i] += A[i, k] * B[i, k]\n";

// `text` with `schedule` applied, run in the interpreter on `inputs`: its output S.
HostBuffer interpreted_sum(const char* text, const std::string& schedule, const std::vector<HostBuffer>& inputs) {
  Expected<Program> parsed = parse_program(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status().to_string();
  if (!parsed.ok()) return HostBuffer(DataType::f32(), {1});
  Expected<Schedule> s = Schedule::from_text(std::make_shared<const Program>(std::move(*parsed)), schedule);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  Expected<LoopNest> nest = s.ok() ? lower(*s) : Expected<LoopNest>(s.status());
  EXPECT_TRUE(nest.ok()) << nest.status().to_string();
  if (!nest.ok()) return HostBuffer(DataType::f32(), {1});
  std::vector<HostBuffer> out = make_output_buffers(*nest);
  Status st = interpret(*nest, const_pointers(inputs), pointers(out));
  EXPECT_TRUE(st.ok()) << st.to_string();
  return std::move(out.back());
}

// Legal reorderings of the long sums pass the check; under the fixed rtol of 1e-4 and
// atol of 1e-5 that `interp` used before, they did not.
TEST(ReorderedSums, ALegalReorderingOfALongF32SumMatches) {
  Expected<Program> p = parse_program(kLongDot);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(summed_terms(*p, "S"), 4096);
  const std::vector<HostBuffer> inputs = make_random_inputs(*p, 1);
  const HostBuffer expected = interpreted_sum(kLongDot, "", inputs);
  ProgramEvaluator evaluator(*p, const_pointers(inputs));
  const Tolerance tolerance = tolerance_for(*p, "S", 1e-4, 1e-5);
  EXPECT_NEAR(tolerance.sum_allowance, 16 * std::ldexp(1.0, -24) * 64, 1e-15);
  for (const std::string schedule :
       {"split(S.k, 64, ko, ki)\nreorder(S, i, ki, ko)", "split(S.k, 8, ko, ki)\nrfactor(S.ki, SR)"}) {
    const HostBuffer actual = interpreted_sum(kLongDot, schedule, inputs);
    Comparison fixed = compare_buffers(expected, actual, Tolerance{1e-4, 1e-5});
    EXPECT_FALSE(fixed.match) << schedule << ": the fixed tolerance passes it too; the test proves nothing";
    Comparison c = compare_buffers(expected, actual, tolerance, evaluator_magnitudes(evaluator, "S"));
    EXPECT_TRUE(c.match) << schedule << ": " << c.describe();
  }
}

// Kernels that drop a term, add one twice or read one index off still fail.
TEST(ReorderedSums, AWrongLongSumStillMismatches) {
  Expected<Program> p = parse_program(kLongDot);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  const std::vector<HostBuffer> inputs = make_random_inputs(*p, 1);
  const HostBuffer expected = interpreted_sum(kLongDot, "", inputs);
  ProgramEvaluator evaluator(*p, const_pointers(inputs));
  const Tolerance tolerance = tolerance_for(*p, "S", 1e-4, 1e-5);
  const char* const wrong[] = {
      // The first term dropped.
      "input A: f32[1024, 4096]\n"
      "input B: f32[1024, 4096]\n"
      "S[i] += A[i, k + 1] * B[i, k + 1] where k in 0..4095\n",
      // The last term added twice.
      "input A: f32[1024, 4096]\n"
      "input B: f32[1024, 4096]\n"
      "T[i] += A[i, k] * B[i, k]\n"
      "S[i] = T[i] + A[i, 4095] * B[i, 4095]\n",
      // One operand read one index off.
      "input A: f32[1024, 4096]\n"
      "input B: f32[1024, 4096]\n"
      "S[i] += A[i, k + 1] * B[i, k + 0] where k in 0..4095\n",
  };
  for (const char* text : wrong) {
    const HostBuffer actual = interpreted_sum(text, "", inputs);
    Comparison c = compare_buffers(expected, actual, tolerance, evaluator_magnitudes(evaluator, "S"));
    EXPECT_FALSE(c.match) << text;
    EXPECT_TRUE(c.error.empty()) << c.error;
  }
}

INSTANTIATE_TEST_SUITE_P(Operators, SchedulePropertyTest, ::testing::ValuesIn(kOperators),
                         [](const ::testing::TestParamInfo<Operator>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tensorgym
