#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "codegen/ir/interval.h"
#include "codegen/ir/ir_equality.h"
#include "codegen/ir/ir_printer.h"
#include "codegen/ir/linear_form.h"
#include "codegen/ir/simplify.h"
#include "codegen/ir/stmt.h"

namespace tensorgym {
namespace {

TEST(IRPrinter, PrecedenceAndParentheses) {
  Expr i = make_var("i"), j = make_var("j");
  EXPECT_EQ(to_string(Mul::make(Add::make(i, j), make_int(2))), "(i + j) * 2");
  EXPECT_EQ(to_string(Sub::make(i, Sub::make(j, make_int(1)))), "i - (j - 1)");
  EXPECT_EQ(to_string(Sub::make(Sub::make(i, j), make_int(1))), "i - j - 1");
  EXPECT_EQ(to_string(And::make(LT::make(i, j), GE::make(i, make_int(0)))), "i < j && i >= 0");
  EXPECT_EQ(to_string(FloatImm::make(DataType::f32(), 0.0)), "0.0");
  EXPECT_EQ(to_string(FloatImm::make(DataType::f32(), 0.1)), "0.1");
}

// The printer copies the text of an index node it printed before: the output must be
// what printing each access's own copy gives, across the printer's buffer flushes
// (the long index is longer than its buffer) and past its memory of recent indices.
TEST(IRPrinter, SharedIndicesPrintAsTheirOwnCopies) {
  auto index = [](int n, int terms) {
    Expr e = make_int(n);
    for (int t = 0; t < terms; ++t) e = Add::make(Mul::make(make_var("v" + std::to_string(t)), make_int(n + t)), e);
    return e;
  };
  const std::vector<int> sizes = {1, 3, 5, 2, 700, 4, 1, 6, 3, 2, 5, 4, 3};
  std::vector<Expr> shared;
  for (size_t k = 0; k < sizes.size(); ++k) shared.push_back(index(int(k), sizes[k]));
  std::vector<Stmt> with_shared, with_copies;
  for (int round = 0; round < 150; ++round) {
    for (size_t k = 0; k < sizes.size(); k += 1 + size_t(round % 3)) {
      size_t other = (k * 7 + size_t(round)) % sizes.size();
      auto store = [&](const Expr& at, const Expr& from) {
        return Store::make(
            "C", {at},
            Add::make(Load::make(DataType::f32(), "C", {at}), Load::make(DataType::f32(), "A", {from, make_var("i")})));
      };
      with_shared.push_back(store(shared[k], shared[other]));
      with_copies.push_back(store(index(int(k), sizes[k]), index(int(other), sizes[other])));
      // A new node, printed and then copied at once: some of these straddle a flush.
      Expr fresh = index(round, 1 + round % 9);
      with_shared.push_back(store(fresh, fresh));
      with_copies.push_back(store(index(round, 1 + round % 9), index(round, 1 + round % 9)));
    }
  }
  std::string printed = to_string(Block::make(with_shared));
  EXPECT_GT(printed.size(), 400000u);
  EXPECT_EQ(printed, to_string(Block::make(with_copies)));
}

TEST(IREquality, StructuralNotPointer) {
  Expr a = Add::make(make_var("i"), make_int(1));
  Expr b = Add::make(make_var("i"), make_int(1));
  Expr c = Add::make(make_var("i"), make_int(2));
  EXPECT_FALSE(a.same_as(b));
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_FALSE(structural_equal(a, c));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
  EXPECT_NE(structural_hash(a), structural_hash(c));
}

TEST(LinearForm, CancelsAndRebuilds) {
  Expr io = make_var("io"), ii = make_var("ii");
  Expr e = Sub::make(Add::make(Mul::make(io, make_int(32)), ii), Mul::make(io, make_int(32)));
  LinearForm f = linearize(e);
  ASSERT_EQ(f.terms.size(), 1u);
  EXPECT_EQ(to_string(from_linear(f, DataType::i32())), "ii");
}

// Terms live inline up to four, then on the heap; copies, moves and erases keep
// their order either way.
TEST(LinearForm, ManyTermsSpillAndKeepOrder) {
  LinearForm f;
  std::vector<Expr> v;
  for (int i = 0; i < 7; ++i) {
    v.push_back(make_var("v" + std::to_string(i)));
    f.add_term(v.back(), i + 1);
  }
  f.add_term(v[2], -3);  // cancels: erased from the middle
  ASSERT_EQ(f.terms.size(), 6u);
  EXPECT_EQ(to_string(from_linear(f, DataType::i32())), "v0 + v1 * 2 + v3 * 4 + v4 * 5 + v5 * 6 + v6 * 7");
  LinearForm copy = f;
  LinearForm moved = std::move(f);
  EXPECT_EQ(to_string(from_linear(copy, DataType::i32())), to_string(from_linear(moved, DataType::i32())));
  LinearForm small;
  small.add_term(v[0], 1);
  LinearForm small_moved = std::move(small);
  small_moved.add_term(v[1], -1);
  copy = small_moved;
  EXPECT_EQ(to_string(from_linear(copy, DataType::i32())), "v0 - v1");
}

TEST(IRPrinter, FloatLiterals) {
  // float_literal's one-digit shortcut gives what its search gives.
  for (double v : {0.0, -0.0, 1.0, -1.0, 7.0, 9.0, -9.0, 10.0, 0.5, 2.5, 100.0, 1e-7})
    for (DataType t : {DataType::f32(), DataType::f64()}) {
      std::string s = float_literal(v, t);
      EXPECT_EQ(std::strtod(s.c_str(), nullptr), v) << s;
    }
  EXPECT_EQ(float_literal(0.0, DataType::f32()), "0.0");
  EXPECT_EQ(float_literal(-0.0, DataType::f32()), "-0.0");
  EXPECT_EQ(float_literal(-3.0, DataType::f64()), "-3.0");
}

// is_from_linear recognizes exactly what from_linear builds, and the simplifier
// keeps an index already in that form instead of rebuilding it.
TEST(LinearForm, RecognizesItsOwnForm) {
  Expr i = make_var("i"), j = make_var("j"), k = make_var("k");
  for (Expr e : {Add::make(Mul::make(i, make_int(4096)), Sub::make(j, make_int(3))),
                 Sub::make(make_int(5), Mul::make(Add::make(i, j), make_int(2))), Sub::make(make_int(0), k),
                 make_int(7), Add::make(Mul::make(i, j), Mul::make(k, make_int(-2)))}) {
    LinearForm f = linearize(e);
    Expr canonical = from_linear(f, DataType::i32());
    EXPECT_TRUE(is_from_linear(canonical, linearize(canonical), DataType::i32())) << to_string(canonical);
    Expr simplified = simplify(canonical);
    EXPECT_TRUE(structural_equal(simplified, canonical)) << to_string(canonical);
  }
  Expr raw = Mul::make(Add::make(Mul::make(i, make_int(32)), j), make_int(128));
  EXPECT_FALSE(is_from_linear(raw, linearize(raw), DataType::i32()));
  EXPECT_EQ(to_string(simplify(raw)), "i * 4096 + j * 128");
  Expr canonical = simplify(raw);
  EXPECT_TRUE(simplify(canonical).same_as(canonical));
}

// What a fused loop leaves: y * 56 + x with y = f / 56, x = f % 56. Folded back to
// f (scaled, and beside other terms), so that the index is affine in f; a quotient
// and remainder that do not pair up (another divisor, another dividend, another
// scale) stay.
TEST(Simplify, FoldsAQuotientAndItsRemainderBackIntoTheDividend) {
  Expr f = make_var("f"), c = make_var("c"), o = make_var("o"), i = make_var("i");
  auto div = [](Expr a, int64_t b) { return Div::make(a, make_int(b)); };
  auto mod = [](Expr a, int64_t b) { return Mod::make(a, make_int(b)); };
  auto mul = [](Expr a, int64_t b) { return Mul::make(a, make_int(b)); };
  EXPECT_EQ(to_string(simplify(Add::make(mul(div(f, 56), 56), mod(f, 56)))), "f");
  EXPECT_EQ(to_string(simplify(Add::make(Add::make(mul(c, 3136), mul(div(f, 56), 224)), mul(mod(f, 56), 4)))),
            "c * 3136 + f * 4");
  // The dividend itself a sum: (o * 8 + i) / 56 * 56 + (o * 8 + i) % 56.
  Expr e = Add::make(mul(o, 8), i);
  EXPECT_EQ(to_string(simplify(Add::make(mul(div(e, 56), 56), mod(e, 56)))), "o * 8 + i");
  // Pairs that are not the identity.
  EXPECT_EQ(to_string(simplify(Add::make(mul(div(f, 56), 114), mod(f, 56)))), "f / 56 * 114 + f % 56");
  EXPECT_EQ(to_string(simplify(Add::make(mul(div(f, 56), 56), mod(f, 28)))), "f / 56 * 56 + f % 28");
  EXPECT_EQ(to_string(simplify(Add::make(mul(div(f, 56), 56), mod(c, 56)))), "f / 56 * 56 + c % 56");
}

// Nodes may be freed on another thread than the one that made them, and threads
// that end give their cached blocks back.
TEST(NodePool, NodesCrossThreads) {
  std::vector<Stmt> made(4);
  std::vector<std::thread> makers;
  for (size_t t = 0; t < made.size(); ++t)
    makers.emplace_back([&made, t] {
      Stmt body = Store::make("B", {make_var("x")}, FloatImm::make(DataType::f32(), double(t)));
      for (int n = 0; n < 2000; ++n)
        body =
            Block::make({body, Store::make("B", {Add::make(make_var("x"), make_int(n))}, make_zero(DataType::f32()))});
      made[t] = For::make("x", make_int(0), make_int(8), ForKind::kSerial, body);
    });
  for (std::thread& m : makers) m.join();
  std::thread freer([&made] {
    for (Stmt& s : made) s = Stmt();
  });
  freer.join();
  Expr e = make_var("y");
  for (int n = 0; n < 5000; ++n) e = Add::make(e, make_var("z"));
  EXPECT_EQ(e.as<Add>()->b.as<Variable>()->name, "z");
}

TEST(Interval, NarrowBySelectCondition) {
  RangeScope scope{{"h", {0, 57}}};
  Expr h = make_var("h");
  Expr cond = And::make(GE::make(h, make_int(1)), LE::make(h, make_int(56)));
  narrow_by_condition(cond, true, &scope);
  EXPECT_EQ(scope["h"].min, 1);
  EXPECT_EQ(scope["h"].max, 56);
  IntRange r = constant_bounds(Sub::make(h, make_int(1)), scope);
  EXPECT_EQ(r.min, 0);
  EXPECT_EQ(r.max, 55);
}

TEST(Interval, DivModAndComparisons) {
  RangeScope scope{{"x", {0, 99}}};
  Expr x = make_var("x");
  EXPECT_EQ(constant_bounds(Div::make(x, make_int(8)), scope), (IntRange{0, 12}));
  EXPECT_EQ(constant_bounds(Mod::make(x, make_int(8)), scope), (IntRange{0, 7}));
  EXPECT_EQ(constant_bounds(LT::make(x, make_int(100)), scope), IntRange::point(1));
  EXPECT_EQ(constant_bounds(LT::make(x, Add::make(x, make_int(1))), RangeScope{}), IntRange::point(1));
}

}  // namespace
}  // namespace tensorgym
