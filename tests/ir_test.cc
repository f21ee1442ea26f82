#include <gtest/gtest.h>

#include "codegen/ir/interval.h"
#include "codegen/ir/ir_equality.h"
#include "codegen/ir/ir_printer.h"
#include "codegen/ir/linear_form.h"

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
