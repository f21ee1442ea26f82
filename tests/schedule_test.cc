// Schedule primitives: what each one does to the loop nest, and every error path. An
// error must leave the schedule exactly as it was.
#include "codegen/schedule/schedule.h"

#include <gtest/gtest.h>

#include <optional>

#include "codegen/interp/compare.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/interp/interpreter.h"
#include "codegen/ir/ir_equality.h"
#include "codegen/ir/ir_printer.h"
#include "codegen/lower/lower.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

const char* kGemm =
    "input A: f32[64, 48]\n"
    "input B: f32[48, 40]\n"
    "C[i, j] += A[i, k] * B[k, j]\n";

const char* kConv =
    "input X: f32[1, 4, 8, 8]\n"
    "input W: f32[4, 4, 3, 3]\n"
    "P[n, c, h, w] = select(h >= 1 && h <= 8 && w >= 1 && w <= 8, X[n, c, h - 1, w - 1], 0.0) where h in 0..10, w in 0..10\n"
    "Y[n, f, y, x] += P[n, c, y + r, x + s] * W[f, c, r, s] where y in 0..8, x in 0..8\n"
    "R[n, f, y, x] = max(Y[n, f, y, x], 0.0)\n";

ProgramPtr parse(const char* text) {
  Expected<Program> p = parse_program(text);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return std::make_shared<const Program>(std::move(*p));
}

Schedule scheduled(const char* program, const char* trace) {
  Expected<Schedule> s = Schedule::from_text(parse(program), trace);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return std::move(*s);
}

std::string nest_text(const Schedule& s) {
  Expected<LoopNest> nest = lower(s);
  EXPECT_TRUE(nest.ok()) << nest.status().to_string();
  return nest.ok() ? to_string(nest->body) : "";
}

// The scheduled program computes what the unscheduled one does.
void expect_same_output(const Schedule& s) {
  Expected<LoopNest> ref = lower(Schedule(s.program_ptr()));
  Expected<LoopNest> got = lower(s);
  ASSERT_TRUE(ref.ok() && got.ok());
  std::vector<HostBuffer> in = make_random_inputs(s.program(), 3);
  std::vector<HostBuffer> a = make_output_buffers(*ref), b = make_output_buffers(*got);
  ASSERT_TRUE(interpret(*ref, const_pointers(in), pointers(a)).ok());
  Status st = interpret(*got, const_pointers(in), pointers(b));
  ASSERT_TRUE(st.ok()) << st.to_string() << "\n" << to_string(got->body);
  for (size_t i = 0; i < a.size(); ++i) {
    Comparison c = compare_buffers(a[i], b[i], Tolerance{1e-4, 1e-5});
    EXPECT_TRUE(c.match) << c.describe() << "\n" << to_string(got->body);
  }
}

// Applying `primitive` fails with `code` and a message containing `message`, and the
// schedule (trace and loop nest) is unchanged.
void expect_rejected(Schedule& s, const std::string& primitive, StatusCode code, const std::string& message) {
  Trace before = s.trace();
  std::string nest_before = nest_text(s);
  Status st = s.apply_text(primitive);
  ASSERT_FALSE(st.ok()) << primitive << " was accepted";
  EXPECT_EQ(st.code(), code) << st.to_string();
  EXPECT_NE(st.message().find(message), std::string::npos) << st.message();
  EXPECT_EQ(s.trace(), before);
  EXPECT_EQ(nest_text(s), nest_before);
}

TEST(Trace, PrintsAndParsesBack) {
  const char* text =
      "split(C.i, 32, io, ii); split(C.j, 32, jo, ji)\n"
      "reorder(C, io, jo, ii, ji)   # comment\n"
      "\n"
      "cache_write(C, CL)\n";
  Expected<Trace> t = parse_trace(text);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  ASSERT_EQ(t->steps.size(), 4u);
  EXPECT_EQ(t->steps[1].to_string(), "split(C.j, 32, jo, ji)");
  EXPECT_EQ(t->to_string(),
            "split(C.i, 32, io, ii)\nsplit(C.j, 32, jo, ji)\nreorder(C, io, jo, ii, ji)\ncache_write(C, CL)\n");
  Expected<Trace> again = parse_trace(t->to_string());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *t);
}

TEST(Trace, SyntaxErrorsHaveLineAndColumn) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"split(C.i, 32, io, ii", "1:22: expected ',' or ')'"},
      {"split C.i", "1:7: expected '('"},
      {"split(C.i, , io)", "1:12: expected an argument"},
      {"\n  (C.i)", "2:3: expected a primitive name"},
      {"split(C.i, 2, a, b) split(C.j, 2, c, d)", "1:21: expected ';' or a new line"},
  };
  for (const Case& c : cases) {
    Expected<Trace> t = parse_trace(c.text);
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_EQ(t.status().message().rfind(c.message, 0), 0u) << t.status().message();
  }
}

// A long action is quoted in a bounded excerpt that says how long it was.
TEST(Trace, ErrorsQuoteLongTextBounded) {
  const std::string name(6 << 10, 'y');
  Expected<Trace> t = parse_trace(name);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message().rfind("1:6145: expected '(' after yyy", 0), 0u) << t.status().message().substr(0, 200);
  EXPECT_CONTAINS(t.status().message(), "... (6144 bytes)");
  EXPECT_LT(t.status().message().size(), 300u);
  const std::string arg(6 << 10, 'x');
  Expected<Trace> two = parse_trace("split(C.i, 4, " + arg + ", ii) split(C.j, 2, a, b)");
  ASSERT_FALSE(two.ok());
  EXPECT_CONTAINS(two.status().message(), "expected ';' or a new line after split(C.i, 4, xxx");
  EXPECT_LT(two.status().message().size(), 300u);
  Schedule s(parse(kGemm));
  Status bad = s.apply_text("split(C.i, 4, " + arg + ", ii)");
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(bad.message(), "' (6144 bytes) is not a valid loop name");
  EXPECT_LT(bad.message().size(), 600u);
}

TEST(Schedule, IssueExampleLowersAndMatches) {
  Schedule s = scheduled(kGemm,
                         "split(C.i, 32, io, ii); split(C.j, 32, jo, ji)\n"
                         "reorder(C, io, jo, ii, ji)\n"
                         "cache_write(C, CL)\n"
                         "compute_at(CL, C.jo)\n"
                         "split(CL.j, 8, cjo, cji); vectorize(CL.cji); parallel(C.io)\n"
                         "cache_read(B, CL, BP); compute_at(BP, C.jo)\n"
                         "unroll(CL.cjo)\n");
  std::string nest = nest_text(s);
  EXPECT_NE(nest.find("parallel for C.io in 0..2"), std::string::npos) << nest;
  EXPECT_NE(nest.find("allocate BP: f32[1536]"), std::string::npos) << nest;  // 48 x 32 panel
  EXPECT_NE(nest.find("allocate CL: f32[1024]"), std::string::npos) << nest;  // 32 x 32 tile
  EXPECT_NE(nest.find("vectorized for CL.cji in 0..8"), std::string::npos) << nest;
  EXPECT_NE(nest.find("unrolled for CL.cjo in 0..4"), std::string::npos) << nest;
  // 40 = 32 + 8: the j tiles have a tail, guarded.
  EXPECT_NE(nest.find("if (C.jo * 32 + C.ji < 40)"), std::string::npos) << nest;
  expect_same_output(s);
}

TEST(Schedule, ComputeAtSizesTheProducerByBoundsInference) {
  Schedule s = scheduled(kConv, "compute_at(P, Y.y)");
  std::string nest = nest_text(s);
  // Three rows (y .. y + 2) of the padded input, 10 wide, for 4 channels.
  EXPECT_NE(nest.find("allocate P: f32[120]"), std::string::npos) << nest;
  expect_same_output(s);
}

TEST(Schedule, NonDividingSplitIsGuarded) {
  Schedule s = scheduled(kGemm, "split(C.i, 5, io, ii)");
  std::string nest = nest_text(s);
  EXPECT_NE(nest.find("for C.io in 0..13"), std::string::npos) << nest;
  EXPECT_NE(nest.find("if (C.io * 5 + C.ii < 64)"), std::string::npos) << nest;
  expect_same_output(s);
}

TEST(Schedule, ReductionInitSitsOutsideTheFirstReductionLoop) {
  Schedule s = scheduled(kGemm, "reorder(C, k, i)");
  std::string nest = nest_text(s);
  // k outermost: C is initialized by a separate nest before the reduction starts.
  size_t init = nest.find("C[C.i * 40 + C.j] = 0.0");
  size_t k = nest.find("for C.k in 0..48");
  ASSERT_NE(init, std::string::npos) << nest;
  EXPECT_LT(init, k) << nest;
  expect_same_output(s);
}

TEST(Schedule, RFactorMakesThePartialsSpatial) {
  Schedule s = scheduled(kGemm, "split(C.k, 8, ko, ki); rfactor(C.ki, CR); vectorize(CR.ki)");
  const StageSchedule* cr = s.state().find_stage("CR");
  ASSERT_NE(cr, nullptr);
  ASSERT_EQ(cr->def->axes.size(), 3u);
  EXPECT_EQ(cr->def->axes[0].name, "ki");
  ASSERT_EQ(cr->def->reduce_axes.size(), 1u);
  EXPECT_EQ(cr->def->reduce_axes[0].name, "ko");
  expect_same_output(s);
  // A non-dividing split: the tail of the reduction contributes zero.
  expect_same_output(scheduled(kGemm, "split(C.k, 5, ko, ki); rfactor(C.ko, CR)"));
}

TEST(Schedule, StorageAlignPadsTheStride) {
  Schedule s = scheduled(kGemm, "cache_read(B, C, BS); storage_align(BS.ax0, 16, 4)");
  std::string nest = nest_text(s);
  // Rows of 40 elements padded to a stride of 52 (52 % 16 == 4): 48 * 52 elements.
  EXPECT_NE(nest.find("allocate BS: f32[2496]"), std::string::npos) << nest;
  expect_same_output(s);
}

TEST(Schedule, ReorderStorageTransposesTheBuffer) {
  // B copied with its columns outermost: the copy is B transposed in memory.
  Schedule s = scheduled(kGemm, "cache_read(B, C, BT); reorder_storage(BT, ax1, ax0)");
  std::string nest = nest_text(s);
  EXPECT_NE(nest.find("BT[BT.ax0 + BT.ax1 * 48] = B[BT.ax0 * 40 + BT.ax1]"), std::string::npos) << nest;
  EXPECT_NE(nest.find("BT[C.k + C.j * 48]"), std::string::npos) << nest;
  expect_same_output(s);
  // Aligning the now-innermost dimension is refused; the other one can be padded.
  expect_rejected(s, "storage_align(BT.ax0, 16, 4)", StatusCode::kInvalidArgument, "innermost");
  ASSERT_TRUE(s.apply_text("storage_align(BT.ax1, 16, 4)").ok());
  EXPECT_NE(nest_text(s).find("allocate BT: f32[2080]"), std::string::npos) << nest_text(s);  // 40 rows of 52
  expect_same_output(s);
  // Going back to row-major would store the aligned dimension innermost: refused.
  expect_rejected(s, "reorder_storage(BT, ax0, ax1)", StatusCode::kFailedPrecondition, "stored innermost");
}

TEST(ScheduleErrors, ReorderStorage) {
  Schedule s = scheduled(kGemm, "cache_read(B, C, BT)");
  expect_rejected(s, "reorder_storage(BT, ax1)", StatusCode::kInvalidArgument, "lists every dimension");
  expect_rejected(s, "reorder_storage(BT, ax1, ax1)", StatusCode::kInvalidArgument, "listed twice");
  expect_rejected(s, "reorder_storage(BT, ax1, q)", StatusCode::kNotFound, "no dimension 'q'");
  expect_rejected(s, "reorder_storage(C, j, i)", StatusCode::kFailedPrecondition, "is an output");
  Expected<ApplyEffect> e = s.apply(Primitive{"reorder_storage", {"BT", "ax0", "ax1"}});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e, ApplyEffect::kNoEffect);
}

TEST(Schedule, ComputeInlineAndRoot) {
  Schedule s = scheduled(kConv, "compute_inline(P)");
  std::string nest = nest_text(s);
  EXPECT_EQ(nest.find("allocate P"), std::string::npos) << nest;
  EXPECT_NE(nest.find("select("), std::string::npos) << nest;
  expect_same_output(s);
  ASSERT_TRUE(s.apply_text("compute_root(P)").ok());
  EXPECT_NE(nest_text(s).find("allocate P"), std::string::npos);
  // compute_root of a stage already at root has no effect and is not recorded.
  Expected<ApplyEffect> e = s.apply(Primitive{"compute_root", {"P"}});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e, ApplyEffect::kNoEffect);
  EXPECT_EQ(s.trace().steps.size(), 2u);
}

TEST(Schedule, FuseAndTile) {
  Schedule s = scheduled(kGemm, "tile(C.i, C.j, 16, 8, io, jo, ii, ji); fuse(C.io, C.jo, t); parallel(C.t)");
  std::string nest = nest_text(s);
  EXPECT_NE(nest.find("parallel for C.t in 0..20"), std::string::npos) << nest;
  expect_same_output(s);
}

TEST(Schedule, AutoUnrollPragmaUnrollsSmallInnerLoops) {
  Schedule s = scheduled(kGemm, "split(C.k, 4, ko, ki); pragma(C.i, auto_unroll_max_step, 16)");
  std::string nest = nest_text(s);
  EXPECT_NE(nest.find("unrolled for C.ki in 0..4"), std::string::npos) << nest;
  EXPECT_NE(nest.find("for C.j in 0..40"), std::string::npos) << nest;
  EXPECT_EQ(nest.find("unrolled for C.j"), std::string::npos) << nest;
  expect_same_output(s);
}

TEST(Schedule, BindIsRecordedButRejectedByCpuLowering) {
  Schedule s = scheduled(kGemm, "bind(C.i, blockIdx.x)");
  Expected<LoopNest> nest = lower(s);
  ASSERT_FALSE(nest.ok());
  EXPECT_EQ(nest.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(nest.status().message().find("bound to blockIdx.x"), std::string::npos);
  LowerOptions gpu;
  gpu.allow_thread_binding = true;
  EXPECT_TRUE(lower(s, gpu).ok());
}

TEST(Schedule, ApplyTextIsAllOrNothing) {
  Schedule s(parse(kGemm));
  Status st = s.apply_text("split(C.i, 8, io, ii)\nsplit(C.nope, 8, a, b)");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("2:1: split(C.nope, 8, a, b): stage C has no loop 'nope'", 0), 0u) << st.message();
  EXPECT_TRUE(s.trace().steps.empty());
}

// A stage's definition is shared between a schedule and the copies made from it
// (copy on write): a primitive that rewrites it gives the copy its own, and the
// schedule it was applied to keeps its definition and its nest.
TEST(Schedule, RewritingADefinitionLeavesTheOriginalScheduleAlone) {
  const Schedule s = scheduled(kGemm, "split(C.i, 16, io, ii)");
  const std::string before = nest_text(s);
  const StageDef original = s.state().find_stage("C")->def;
  for (const char* rewrite : {"cache_write(C, CL)", "rfactor(C.k, CR)", "cache_read(A, C, AS)"}) {
    std::optional<Schedule> next;
    Expected<Trace> t = parse_trace(rewrite);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    PrimitiveResult r = s.apply_to_copy(t->steps[0], &next);
    ASSERT_TRUE(r.ok()) << rewrite << ": " << r.status().to_string();
    ASSERT_TRUE(next.has_value()) << rewrite;
    const CopyOnWrite<StageDef>& mine = s.state().find_stage("C")->def;
    const CopyOnWrite<StageDef>& theirs = next->state().find_stage("C")->def;
    EXPECT_FALSE(mine.shares_with(theirs)) << rewrite;
    EXPECT_FALSE(mine->body.same_as(theirs->body)) << rewrite;
    EXPECT_TRUE(mine->body.same_as(original.body)) << rewrite;
    EXPECT_EQ(mine->reduce, original.reduce) << rewrite;
    EXPECT_EQ(mine->reduce_axes.size(), original.reduce_axes.size()) << rewrite;
    EXPECT_EQ(nest_text(s), before) << rewrite;
    expect_same_output(*next);
  }
  // A primitive that leaves the definition alone shares it.
  std::optional<Schedule> next;
  Expected<Trace> t = parse_trace("split(C.j, 8, jo, ji)");
  ASSERT_TRUE(t.ok() && s.apply_to_copy(t->steps[0], &next).ok() && next.has_value());
  EXPECT_TRUE(s.state().find_stage("C")->def.shares_with(next->state().find_stage("C")->def));
}

TEST(ScheduleErrors, Arity) {
  Schedule s(parse(kGemm));
  expect_rejected(s, "split(C.i, 8)", StatusCode::kInvalidArgument, "usage: split(STAGE.loop, factor, outer, inner)");
  expect_rejected(s, "vectorize(C.i, C.j)", StatusCode::kInvalidArgument, "wrong number of arguments");
  expect_rejected(s, "frobnicate(C.i)", StatusCode::kInvalidArgument, "unknown primitive 'frobnicate'");
}

TEST(ScheduleErrors, LoopReferences) {
  Schedule s = scheduled(kGemm, "split(C.i, 8, io, ii)");
  expect_rejected(s, "split(Q.i, 8, a, b)", StatusCode::kNotFound, "unknown stage 'Q'");
  expect_rejected(s, "split(A.i, 8, a, b)", StatusCode::kInvalidArgument, "'A' is an input and has no loops");
  expect_rejected(s, "split(C.z, 8, a, b)", StatusCode::kNotFound, "stage C has no loop 'z' (its loops: io, ii, j, k)");
  expect_rejected(s, "split(C.i, 8, a, b)", StatusCode::kInvalidArgument, "was split or fused away");
  expect_rejected(s, "split(Ci, 8, a, b)", StatusCode::kInvalidArgument, "expected a loop as STAGE.loop");
}

TEST(ScheduleErrors, Split) {
  Schedule s = scheduled(kGemm, "vectorize(C.j)");
  expect_rejected(s, "split(C.i, 0, a, b)", StatusCode::kInvalidArgument, "split factor must be in 1..");
  expect_rejected(s, "split(C.i, x, a, b)", StatusCode::kInvalidArgument, "split factor must be an integer");
  expect_rejected(s, "split(C.i, 4, j, b)", StatusCode::kAlreadyExists, "already has a loop named 'j'");
  expect_rejected(s, "split(C.i, 4, a, a)", StatusCode::kInvalidArgument, "different names");
  expect_rejected(s, "split(C.i, 4, 1a, b)", StatusCode::kInvalidArgument, "not a valid loop name");
  expect_rejected(s, "split(C.j, 4, a, b)", StatusCode::kFailedPrecondition, "is annotated");
  Schedule t = scheduled(kConv, "compute_at(P, Y.y)");
  expect_rejected(t, "split(Y.y, 2, a, b)", StatusCode::kFailedPrecondition, "stage P is computed at Y.y");
}

TEST(ScheduleErrors, ReorderAndFuse) {
  Schedule s(parse(kGemm));
  expect_rejected(s, "reorder(C, i, i)", StatusCode::kInvalidArgument, "listed twice");
  expect_rejected(s, "reorder(C, i, q)", StatusCode::kNotFound, "no loop 'q'");
  expect_rejected(s, "fuse(C.i, C.k, f)", StatusCode::kInvalidArgument, "adjacent");
  expect_rejected(s, "fuse(C.j, C.k, f)", StatusCode::kInvalidArgument, "cannot fuse a reduction loop with a spatial loop");
  expect_rejected(s, "fuse(C.i, C.i, f)", StatusCode::kInvalidArgument, "with itself");
  expect_rejected(s, "fuse(C.i, C.j, k)", StatusCode::kAlreadyExists, "already has a loop named 'k'");
  // Reordering into the current order is valid but has no effect.
  Expected<ApplyEffect> e = s.apply(Primitive{"reorder", {"C", "i", "j"}});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e, ApplyEffect::kNoEffect);
}

TEST(ScheduleErrors, Annotations) {
  Schedule s(parse(kGemm));
  expect_rejected(s, "vectorize(C.k)", StatusCode::kInvalidArgument, "cannot vectorize reduction loop C.k");
  expect_rejected(s, "parallel(C.k)", StatusCode::kInvalidArgument, "cannot parallelize reduction loop C.k");
  Schedule big = scheduled("input A: f32[300]\nB[i] = A[i] * 2.0\n", "");
  expect_rejected(big, "vectorize(B.i)", StatusCode::kOutOfRange, "at most 64 lanes");
  expect_rejected(big, "unroll(B.i)", StatusCode::kOutOfRange, "at most 256");
  ASSERT_TRUE(s.apply_text("parallel(C.i)").ok());
  expect_rejected(s, "vectorize(C.i)", StatusCode::kFailedPrecondition, "already parallel");
  expect_rejected(s, "bind(C.i, threadIdx.x)", StatusCode::kFailedPrecondition, "already parallel");
  expect_rejected(s, "bind(C.j, warp.x)", StatusCode::kInvalidArgument, "unknown thread tag 'warp.x'");
  expect_rejected(s, "pragma(C.j, unroll_everything, 4)", StatusCode::kInvalidArgument, "unknown pragma");
  expect_rejected(s, "pragma(C.j, auto_unroll_max_step, -1)", StatusCode::kInvalidArgument, "must be in 0..4096");
  // Nothing parallel or computed inside a vectorized loop.
  Schedule v = scheduled(kGemm, "split(C.j, 8, jo, ji); reorder(C, i, jo, k, ji); vectorize(C.jo)");
  expect_rejected(v, "parallel(C.ji)", StatusCode::kFailedPrecondition, "inside vectorized loop C.jo");
  // Parallel on an already parallel loop has no effect.
  Expected<ApplyEffect> e = s.apply(Primitive{"parallel", {"C.i"}});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e, ApplyEffect::kNoEffect);
}

TEST(ScheduleErrors, CacheReadAndWrite) {
  Schedule s(parse(kConv));
  expect_rejected(s, "cache_read(Q, Y, QL)", StatusCode::kNotFound, "unknown tensor 'Q'");
  expect_rejected(s, "cache_read(X, Y, XL)", StatusCode::kInvalidArgument, "stage Y does not read X");
  expect_rejected(s, "cache_read(W, Y, P)", StatusCode::kAlreadyExists, "a tensor named 'P' already exists");
  expect_rejected(s, "cache_read(W, Q, WL)", StatusCode::kNotFound, "unknown stage 'Q'");
  expect_rejected(s, "cache_write(Q, QL)", StatusCode::kNotFound, "unknown stage 'Q'");
  expect_rejected(s, "cache_write(Y, 9x)", StatusCode::kInvalidArgument, "not a valid tensor name");
  ASSERT_TRUE(s.apply_text("compute_at(P, Y.y)").ok());
  expect_rejected(s, "cache_read(P, Y, PL)", StatusCode::kFailedPrecondition, "compute_root it before caching it");
  expect_rejected(s, "cache_write(Y, YL)", StatusCode::kFailedPrecondition, "stage P is computed at a loop of Y");
  Schedule t = scheduled(kConv, "compute_inline(P)");
  expect_rejected(t, "cache_read(P, Y, PL)", StatusCode::kFailedPrecondition, "stage P is inlined");
  expect_rejected(t, "cache_write(P, PL)", StatusCode::kFailedPrecondition, "stage P is inlined");
}

TEST(ScheduleErrors, ComputeAtAndInline) {
  Schedule s(parse(kConv));
  expect_rejected(s, "compute_at(R, Y.y)", StatusCode::kFailedPrecondition, "R is an output");
  expect_rejected(s, "compute_at(P, P.h)", StatusCode::kInvalidArgument, "its own loop");
  expect_rejected(s, "compute_at(P, R.y)", StatusCode::kFailedPrecondition, "stage Y reads P but does not run inside R.y");
  expect_rejected(s, "compute_inline(Y)", StatusCode::kFailedPrecondition, "is a reduction");
  expect_rejected(s, "compute_inline(R)", StatusCode::kFailedPrecondition, "is an output");
  ASSERT_TRUE(s.apply_text("compute_at(Y, R.y)").ok());
  // P may go to R.y too: its reader Y runs inside R.y.
  ASSERT_TRUE(s.apply_text("compute_at(P, R.y)").ok());
  expect_same_output(s);
  // Moving Y out of R.y would leave P's reader outside P's loop.
  expect_rejected(s, "compute_at(Y, R.f)", StatusCode::kFailedPrecondition, "outside R.y");
  ASSERT_TRUE(s.apply_text("compute_at(Y, R.x)").ok());  // still inside R.y
  expect_same_output(s);
  expect_rejected(s, "compute_inline(Y)", StatusCode::kFailedPrecondition, "is a reduction");
}

TEST(ScheduleErrors, RFactorAndStorageAlign) {
  Schedule s(parse(kGemm));
  expect_rejected(s, "rfactor(C.i, CR)", StatusCode::kInvalidArgument, "needs a reduction loop");
  expect_rejected(s, "rfactor(C.k, A)", StatusCode::kAlreadyExists, "a tensor named 'A' already exists");
  expect_rejected(s, "storage_align(C.i, 16, 0)", StatusCode::kFailedPrecondition, "is an output");
  Schedule t = scheduled(kGemm, "cache_read(B, C, BS)");
  expect_rejected(t, "storage_align(BS.ax1, 16, 0)", StatusCode::kInvalidArgument, "innermost dimension");
  expect_rejected(t, "storage_align(BS.ax0, 16, 16)", StatusCode::kInvalidArgument, "alignment offset must be in 0..15");
  expect_rejected(t, "storage_align(BS.ax0, 0, 0)", StatusCode::kInvalidArgument, "alignment factor");
  expect_rejected(t, "storage_align(BS.q, 16, 0)", StatusCode::kNotFound, "no loop 'q'");
}

}  // namespace
}  // namespace tensorgym
