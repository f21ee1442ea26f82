// Op counts of programs and working sets of loop nests, on hand-built IR.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/analysis/op_count.h"
#include "codegen/analysis/working_set.h"
#include "codegen/ir/program.h"
#include "codegen/lower/loop_nest.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

using namespace ir_build;

// ---- op counts ----------------------------------------------------------------------

TEST(OpCount, GemmIsTwoMNK) {
  const int64_t M = 64, N = 48, K = 40;
  Program p;
  p.inputs = {Input("A", {M, K}), Input("B", {K, N})};
  p.stages = {Stage("C", DataType::f32(), {Axis("i", M), Axis("j", N)}, Tensor("A", {V("i"), V("k")}) * Tensor("B", {V("k"), V("j")}),
                    ReduceKind::kSum, {Axis("k", K)})};
  p.outputs = {"C"};
  OpCounts c = count_ops(p);
  EXPECT_EQ(c.flops, 2.0 * M * N * K);
  EXPECT_EQ(c.int_ops, 0.0);
  EXPECT_EQ(c.math_calls, 0.0);
  EXPECT_EQ(tensor_bytes(p, "A"), M * K * 4);
  EXPECT_EQ(tensor_bytes(p, "C"), M * N * 4);
  EXPECT_EQ(tensor_bytes(p, "nope"), 0);
}

TEST(OpCount, ConvWithPaddingStage) {
  // P[c, h, w] = select(1 <= h <= H && 1 <= w <= W, X[c, h - 1, w - 1], 0)
  // O[k, y, x] += P[c, y + r, x + s] * Wt[k, c, r, s]
  const int64_t C = 8, H = 14, W = 12, K = 16, R = 3;
  Program p;
  p.inputs = {Input("X", {C, H, W}), Input("Wt", {K, C, R, R})};
  Expr h = V("h"), w = V("w");
  Expr inside = GE::make(h, I(1)) && LE::make(h, I(H)) && GE::make(w, I(1)) && LE::make(w, I(W));
  p.stages.push_back(Stage("P", DataType::f32(), {Axis("c", C), Axis("h", H + 2), Axis("w", W + 2)},
                           Select::make(inside, Tensor("X", {V("c"), h - I(1), w - I(1)}), F(0))));
  p.stages.push_back(Stage("O", DataType::f32(), {Axis("k", K), Axis("y", H), Axis("x", W)},
                           Tensor("P", {V("rc"), V("y") + V("ry"), V("x") + V("rx")}) * Tensor("Wt", {V("k"), V("rc"), V("ry"), V("rx")}),
                           ReduceKind::kSum, {Axis("rc", C), Axis("ry", R), Axis("rx", R)}));
  p.outputs = {"O"};
  OpCounts c = count_ops(p);
  // Conv: one multiply and one add per (k, y, x, c, r, s); the indices are free.
  EXPECT_EQ(c.flops, 2.0 * K * H * W * C * R * R);
  // Padding: 4 comparisons and 3 ands per padded element; its load indices are free.
  EXPECT_EQ(c.int_ops, 7.0 * C * (H + 2) * (W + 2));
  EXPECT_EQ(count_stage_ops(p.stages[0]).flops, 0.0);
  EXPECT_EQ(stage_iterations(p.stages[1]), double(K * H * W * C * R * R));
}

TEST(OpCount, MathCallsAndIntegerReductions) {
  Program p;
  p.inputs = {Input("X", {4, 10}), Input("Q", {4, 10}, DataType::i8())};
  p.stages.push_back(Stage("mx", DataType::f32(), {Axis("i", 4)}, Tensor("X", {V("i"), V("j")}), ReduceKind::kMax,
                           {Axis("j", 10)}));
  p.stages.push_back(Stage("e", DataType::f32(), {Axis("i", 4), Axis("j", 10)},
                           Call::make(CallOp::kExp, {Tensor("X", {V("i"), V("j")}) - Tensor("mx", {V("i")})})));
  Expr q = Cast::make(DataType::i32(), Tensor("Q", {V("i"), V("j")}, DataType::i8()));
  p.stages.push_back(Stage("s", DataType::i32(), {Axis("i", 4)}, q * q, ReduceKind::kSum, {Axis("j", 10)}));
  OpCounts c = count_ops(p);
  EXPECT_EQ(c.math_calls, 40.0);
  EXPECT_EQ(c.flops, 40.0 /* max combine */ + 40.0 /* sub */ + 40.0 /* exp */);
  EXPECT_EQ(c.int_ops, 40.0 /* mul */ + 40.0 /* add combine */);
  // Index arithmetic inside loads does not count.
  EXPECT_EQ(count_expr_ops(Tensor("X", {V("i") * I(2) + I(1), V("j") / I(3)})).int_ops, 0.0);
}

// ---- working sets -------------------------------------------------------------------

// C[64, 64] = A[64, 64] x B[64, 64], i and j tiled by 16:
//   for io, jo in 4: for ii, ji in 16: C[..] = 0; for k in 64: C[..] += A[..] * B[..]
LoopNest tiled_gemm() {
  const int64_t S = 64, T = 16;
  LoopNest nest;
  nest.inputs = {{"A", DataType::f32(), {S, S}}, {"B", DataType::f32(), {S, S}}};
  nest.outputs = {{"C", DataType::f32(), {S, S}}};
  Expr i = V("io") * I(T) + V("ii");
  Expr j = V("jo") * I(T) + V("ji");
  Expr c = i * I(S) + j;
  Stmt update = St("C", c, Ld("C", c) + Ld("A", i * I(S) + V("k")) * Ld("B", V("k") * I(S) + j));
  nest.body = Loop("io", S / T, Loop("jo", S / T, Loop("ii", T, Loop("ji", T, Seq({St("C", c, F(0)), Loop("k", S, update)})))));
  return nest;
}

const BufferFootprint* find(const LoopWorkingSet& ws, const std::string& name) {
  for (const BufferFootprint& b : ws.buffers)
    if (b.buffer == name) return &b;
  return nullptr;
}

void expect_bytes(const LoopWorkingSet& ws, int64_t c, int64_t a, int64_t b) {
  SCOPED_TRACE("loop " + ws.loop);
  ASSERT_TRUE(find(ws, "A") && find(ws, "B") && find(ws, "C"));
  EXPECT_EQ(find(ws, "C")->bytes, c);
  EXPECT_EQ(find(ws, "A")->bytes, a);
  EXPECT_EQ(find(ws, "B")->bytes, b);
  EXPECT_EQ(ws.total_bytes, a + b + c);
}

TEST(WorkingSet, TiledGemm) {
  std::vector<LoopWorkingSet> ws = loop_working_sets(tiled_gemm());
  ASSERT_EQ(ws.size(), 5u);
  const std::vector<std::string> names = {"io", "jo", "ii", "ji", "k"};
  const std::vector<int64_t> extents = {4, 4, 16, 16, 64};
  for (size_t d = 0; d < 5; ++d) {
    EXPECT_EQ(ws[d].loop, names[d]);
    EXPECT_EQ(ws[d].depth, int(d));
    EXPECT_EQ(ws[d].extent, extents[d]);
  }
  // k: one element of C, a row segment of A (64), a column of B (64; its span is
  // 63 * 64 + 1 but only 64 distinct elements).
  expect_bytes(ws[4], 1 * 4, 64 * 4, 64 * 4);
  // ji: 16 of C, the same 64 of A, 16 columns of B.
  expect_bytes(ws[3], 16 * 4, 64 * 4, 1024 * 4);
  // ii: a 16x16 tile of C (256 distinct; its span is 15 * 64 + 16 = 976), 16 rows
  // of A, the same 16 columns of B.
  expect_bytes(ws[2], 256 * 4, 1024 * 4, 1024 * 4);
  // jo: 16 full rows of C, 16 rows of A, all of B.
  expect_bytes(ws[1], 1024 * 4, 1024 * 4, 4096 * 4);
  // io: everything.
  expect_bytes(ws[0], 4096 * 4, 4096 * 4, 4096 * 4);
  // Buffers are listed in first-access order.
  EXPECT_EQ(ws[4].buffers[0].buffer, "C");
  EXPECT_EQ(ws[4].buffers[1].buffer, "A");
  EXPECT_EQ(ws[4].buffers[2].buffer, "B");
}

TEST(WorkingSet, AllocationsInsideCountTheirSize) {
  // for i in 8: allocate acc[4] (f64); for r in 4: acc[r] = x[i * 4 + r]; y[i] = acc[0]
  LoopNest nest;
  nest.inputs = {{"x", DataType::f64(), {32}}};
  nest.outputs = {{"y", DataType::f64(), {8}}};
  Expr xv = Load::make(DataType::f64(), "x", {V("i") * I(4) + V("r")});
  Stmt inner = Allocate::make("acc", DataType::f64(), {4},
                              Seq({Loop("r", 4, St("acc", V("r"), xv)),
                                   St("y", V("i"), Load::make(DataType::f64(), "acc", {I(0)}))}));
  nest.body = Loop("i", 8, inner);
  std::vector<LoopWorkingSet> ws = loop_working_sets(nest);
  ASSERT_EQ(ws.size(), 2u);
  const LoopWorkingSet& i = ws[0];
  ASSERT_EQ(i.buffers.size(), 3u);
  EXPECT_EQ(i.buffers[0].buffer, "acc");
  EXPECT_TRUE(i.buffers[0].allocated_inside);
  EXPECT_EQ(i.buffers[0].bytes, 32);
  EXPECT_EQ(find(i, "x")->bytes, 32 * 8);
  EXPECT_EQ(find(i, "y")->bytes, 8 * 8);
  EXPECT_EQ(i.total_bytes, 32 + 256 + 64);
  // Inside r, acc is allocated outside: estimated like any buffer.
  const LoopWorkingSet& r = ws[1];
  EXPECT_EQ(find(r, "acc")->bytes, 32);
  EXPECT_FALSE(find(r, "acc")->allocated_inside);
  EXPECT_EQ(find(r, "x")->bytes, 32);
  EXPECT_EQ(find(r, "y"), nullptr);
}

TEST(WorkingSet, StencilLetsAndGuards) {
  // for i in 32: let b = i * 2; out[i] = (b >= 1 ? A[b - 1] : 0) + A[b] + A[b + 1]
  LoopNest nest;
  nest.inputs = {{"A", DataType::f32(), {65}}};
  nest.outputs = {{"out", DataType::f32(), {32}}};
  Expr b = V("b");
  Expr left = Select::make(GE::make(b, I(1)), Ld("A", b - I(1)), F(0));
  nest.body = Loop("i", 32, LetStmt::make("b", V("i") * I(2), St("out", V("i"), left + Ld("A", b) + Ld("A", b + I(1)))));
  std::vector<LoopWorkingSet> ws = loop_working_sets(nest);
  ASSERT_EQ(ws.size(), 1u);
  // A: span [0, 63] (the guard keeps b - 1 >= 0) = 64 elements; 3 strided accesses of
  // 32 each = 96: the estimate is the smaller, 64.
  EXPECT_EQ(find(ws[0], "A")->elements, 64);
  EXPECT_EQ(find(ws[0], "out")->elements, 32);
}

TEST(WorkingSet, VectorLanesCountAsAnInnerLoop) {
  // for i in 16: out[ramp(i * 8, 1, 8)] = A[ramp(i * 8, 1, 8)] + broadcast(B[i], 8)
  LoopNest nest;
  nest.inputs = {{"A", DataType::f32(), {128}}, {"B", DataType::f32(), {16}}};
  nest.outputs = {{"out", DataType::f32(), {128}}};
  Expr ramp = Ramp::make(V("i") * I(8), I(1), 8);
  DataType v8 = DataType::f32().with_lanes(8);
  nest.body = Loop("i", 16, Store::make("out", {ramp}, Add::make(Load::make(v8, "A", {ramp}),
                                                                 Broadcast::make(Ld("B", V("i")), 8))));
  std::vector<LoopWorkingSet> ws = loop_working_sets(nest);
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_EQ(find(ws[0], "A")->elements, 128);
  EXPECT_EQ(find(ws[0], "B")->elements, 16);
  EXPECT_EQ(find(ws[0], "out")->elements, 128);
}

}  // namespace
}  // namespace tensorgym
