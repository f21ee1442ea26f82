// reverse_compute_at: a consumer moves under a loop of its producer. It applies only
// where it keeps the program's meaning, and every trace that uses it computes what
// the unscheduled program computes.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "codegen/interp/compare.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/interp/interpreter.h"
#include "codegen/ir/ir_printer.h"
#include "codegen/lower/lower.h"
#include "codegen/schedule/primitive_args.h"
#include "codegen/schedule/random_schedule.h"
#include "envs/schedule/cursor_actions.h"
#include "envs/schedule/primitive_actions.h"

namespace tensorgym {
namespace {

ProgramPtr parse(const char* text) {
  Expected<Program> p = parse_program(text);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return std::make_shared<const Program>(std::move(*p));
}

constexpr const char* kChain =
    "input A: f32[8, 12]\n"
    "T1[i, j] = A[i, j] * 2.0\n"
    "T2[a, b] = T1[a, b] + 1.0\n";
constexpr const char* kGemmRelu =
    "input A: f32[13, 17]\ninput B: f32[17, 11]\nC[i, j] += A[i, k] * B[k, j]\nR[i, j] = max(C[i, j], 0.0)\n";
constexpr const char* kSoftmax =
    "input X: f32[6, 10]\nM[i] max= X[i, j]\nE[i, j] = exp(X[i, j] - M[i])\nS[i] += E[i, j]\nO[i, j] = E[i, j] / S[i]\n";
constexpr const char* kTranspose =
    "input A: f32[6, 9]\nT[i, j] = A[i, j] + 1.0\nU[p, q] = T[q, p] * 3.0 where p in 0..9, q in 0..6\n";
constexpr const char* kConv =
    "input X: f32[1, 3, 7, 7]\ninput W: f32[4, 3, 3, 3]\n"
    "P[n, c, h, w] = select(h >= 1 && h <= 7 && w >= 1 && w <= 7, X[n, c, h - 1, w - 1], 0.0) where h in 0..9, w in "
    "0..9\nY[n, f, y, x] += P[n, c, y + r, x + s] * W[f, c, r, s] where y in 0..7, x in 0..7\n"
    "R[n, f, y, x] = max(Y[n, f, y, x], 0.0)\n";

// Lowers `s`, runs it and compares every output with the unscheduled program's.
void expect_same_output(const Schedule& s) {
  SCOPED_TRACE(s.trace().to_string());
  Expected<LoopNest> reference = lower(Schedule(s.program_ptr()));
  ASSERT_TRUE(reference.ok());
  std::vector<HostBuffer> inputs = make_random_inputs(s.program(), 3);
  std::vector<HostBuffer> expected = make_output_buffers(*reference);
  ASSERT_TRUE(interpret(*reference, const_pointers(inputs), pointers(expected)).ok());
  Expected<LoopNest> nest = lower(s);
  ASSERT_TRUE(nest.ok()) << nest.status().to_string();
  std::vector<HostBuffer> actual = make_output_buffers(*nest);
  Status run = interpret(*nest, const_pointers(inputs), pointers(actual));
  ASSERT_TRUE(run.ok()) << run.to_string() << "\n" << to_string(nest->body);
  for (size_t i = 0; i < expected.size(); ++i) {
    Comparison c = compare_buffers(expected[i], actual[i], Tolerance{1e-4, 1e-5});
    ASSERT_TRUE(c.match) << nest->outputs[i].name << ": " << c.describe() << "\n" << to_string(nest->body);
  }
}

std::string leaf_of(const Schedule& s, const char* stage) { return leaf_names(*s.state().find_stage(stage)); }

TEST(ReverseComputeAt, MovesTheConsumerUnderTheProducersTile) {
  Expected<Schedule> s = Schedule::from_text(parse(kChain),
                                             "split(T1.i, 4, io, ii); split(T1.j, 8, jo, ji)\n"
                                             "reorder(T1, io, jo, ii, ji)\n"
                                             "reverse_compute_at(T2, T1.jo)\n");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const StageSchedule& t1 = *s->state().find_stage("T1");
  EXPECT_EQ(t1.attach, AttachKind::kAt);
  EXPECT_EQ(t1.attach_stage, "T2");
  EXPECT_EQ(t1.attach_loop, "jo");
  EXPECT_EQ(leaf_of(*s, "T2"), "io, jo, ii, ji");
  EXPECT_EQ(s->trace().steps.back().to_string(), "reverse_compute_at(T2, T1.jo)");
  expect_same_output(*s);

  // The canonical text replays to the same schedule.
  Expected<Schedule> replayed = Schedule::from_text(s->program_ptr(), s->trace().to_string());
  ASSERT_TRUE(replayed.ok());
  EXPECT_EQ(replayed->trace(), s->trace());
  EXPECT_EQ(leaf_of(*replayed, "T2"), "io, jo, ii, ji");
}

TEST(ReverseComputeAt, AtAnUnsplitLoopItUsesTheConsumersAxis) {
  Expected<Schedule> s = Schedule::from_text(parse(kChain), "reverse_compute_at(T2, T1.i)");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->state().find_stage("T1")->attach_loop, "a");
  EXPECT_EQ(leaf_of(*s, "T2"), "a, b");
  expect_same_output(*s);
}

TEST(ReverseComputeAt, FollowsATransposedRead) {
  Expected<Schedule> s = Schedule::from_text(parse(kTranspose),
                                             "split(T.j, 3, jo, ji); reorder(T, jo, i, ji)\n"
                                             "reverse_compute_at(U, T.i)\n");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(leaf_of(*s, "U"), "jo, q, ji");
  EXPECT_EQ(s->state().find_stage("T")->attach_loop, "q");
  expect_same_output(*s);
}

TEST(ReverseComputeAt, UnderAReductionsSpatialLoop) {
  Expected<Schedule> s = Schedule::from_text(parse(kGemmRelu),
                                             "split(C.i, 4, io, ii); split(C.j, 4, jo, ji)\n"
                                             "reorder(C, io, jo, k, ii, ji)\n"
                                             "reverse_compute_at(R, C.jo)\n"
                                             "vectorize(R.ji)\n");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(leaf_of(*s, "R"), "io, jo, ii, ji");
  expect_same_output(*s);

  // M is read by E alone; E's other read (X) and its own readers do not matter.
  Expected<Schedule> softmax = Schedule::from_text(parse(kSoftmax), "reverse_compute_at(E, M.i)");
  ASSERT_TRUE(softmax.ok()) << softmax.status().to_string();
  EXPECT_EQ(leaf_of(*softmax, "E"), "i, j");
  expect_same_output(*softmax);
}

TEST(ReverseComputeAt, RejectsWhatWouldChangeMeaning) {
  auto error = [](const char* program, const char* trace) {
    Expected<Schedule> s = Schedule::from_text(parse(program), trace);
    EXPECT_FALSE(s.ok()) << trace;
    return s.ok() ? std::string() : s.status().to_string();
  };
  auto has = [](const std::string& text, const char* part) { return text.find(part) != std::string::npos; };
  EXPECT_TRUE(has(error(kChain, "reverse_compute_at(T1, T1.i)"), "a stage cannot be computed at its own loop"));
  EXPECT_TRUE(has(error(kChain, "reverse_compute_at(T1, T2.a)"), "stage T1 does not read T2"));
  EXPECT_TRUE(has(error(kChain, "split(T2.a, 2, ao, ai); reverse_compute_at(T2, T1.i)"),
                  "the loops of T2 were split or fused"));
  EXPECT_TRUE(has(error(kChain, "parallel(T2.a); reverse_compute_at(T2, T1.i)"), "loop T2.a is annotated"));
  EXPECT_TRUE(has(error(kGemmRelu, "reorder(C, k, i, j); reverse_compute_at(R, C.i)"),
                  "loop C.k is a reduction loop at or outside C.i"));
  EXPECT_TRUE(has(error(kConv, "reverse_compute_at(Y, P.n)"), "reverse_compute_at needs it read at Y's own axes"));
  EXPECT_TRUE(has(error(kSoftmax, "reverse_compute_at(O, E.i)"), "stage E has other readers than O"));
  EXPECT_TRUE(has(error(kChain, "compute_inline(T1); reverse_compute_at(T2, T1.i)"), "stage T1 is inlined"));
  EXPECT_TRUE(has(error(kChain, "reverse_compute_at(T2, T1.i); reverse_compute_at(T2, T1.j)"),
                  "stage T1 is computed at a loop of T2"));
  // An error leaves the schedule as it was.
  Schedule s(parse(kChain));
  ASSERT_TRUE(s.apply_text("split(T1.i, 2, io, ii)").ok());
  EXPECT_FALSE(s.apply_text("reverse_compute_at(T1, T1.io)").ok());
  EXPECT_EQ(s.trace().to_string(), "split(T1.i, 2, io, ii)\n");
}

TEST(ReverseComputeAt, IsACursorAction) {
  ProgramPtr program = parse(kChain);
  Schedule c(program);
  Cursor at{"T1", 1};
  Expected<int64_t> action = CursorActions::index_of("reverse_compute_at_here");
  ASSERT_TRUE(action.ok());
  EXPECT_EQ(CursorActions::mask(c.state(), at)[size_t(*action)], 1);
  Expected<CursorActions::Decision> d = CursorActions::decide(c.state(), at, *action);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(c.apply(d->primitive).ok());
  EXPECT_EQ(c.last_primitive()->to_string(), "reverse_compute_at(T2, T1.j)");
  expect_same_output(c);
}

// Random legal traces with reverse_compute_at in them compute what the program does.
TEST(ReverseComputeAt, RandomTracesComputeTheSameOutput) {
  int moved = 0;
  for (const char* text : {kChain, kGemmRelu, kTranspose, kConv}) {
    ProgramPtr program = parse(text);
    for (int t = 0; t < 40; ++t) {
      Rng rng(uint64_t(t) * 977 + 1);
      Schedule s(program);
      apply_random_primitives(s, rng, int(rng.range(0, 4)));
      // Every move reverse_compute_at may make here, then more random primitives.
      const ScheduleState& state = s.state();
      std::vector<BoundPrimitive> moves;
      for (int p = 0; p < int(state.stages().size()); ++p) {
        std::vector<std::string> readers = state.readers_of(state.stages()[size_t(p)].name());
        if (readers.size() != 1) continue;
        for (int l : state.stages()[size_t(p)].leaf)
          moves.push_back(BoundPrimitive{find_primitive("reverse_compute_at"),
                                         {PrimitiveArg::of_stage(state.stage_index(readers[0])),
                                          PrimitiveArg::of_loop(p, l)}});
      }
      for (const BoundPrimitive& m : moves) {
        Schedule next = s;
        PrimitiveResult r = next.apply(m);
        if (!r.ok()) continue;
        ++moved;
        apply_random_primitives(next, rng, int(rng.range(0, 4)));
        expect_same_output(next);
        if (HasFatalFailure()) return;
      }
    }
  }
  EXPECT_GT(moved, 100);
}

}  // namespace
}  // namespace tensorgym
