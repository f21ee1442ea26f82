// Constant interval arithmetic over integer expressions: given ranges of the
// variables, the range of an expression. Used to prove accesses in bounds, to size
// buffers and to drop guards the simplifier can show are always true.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>

#include "codegen/ir/expr.h"

namespace tensorgym {

// The closed range [min, max]; the extreme int64 values stand for unbounded.
struct IntRange {
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();
  int64_t min = kNegInf;
  int64_t max = kPosInf;

  static IntRange everything() { return {}; }
  static IntRange point(int64_t v) { return {v, v}; }
  bool bounded() const { return min != kNegInf && max != kPosInf; }
  bool is_point() const { return bounded() && min == max; }
  bool contains(const IntRange& o) const { return min <= o.min && o.max <= max; }
  bool operator==(const IntRange& o) const { return min == o.min && max == o.max; }
};

// Variable name → its range. Variables not in scope are unbounded.
using RangeScope = std::unordered_map<std::string, IntRange>;

// The range of an integer or bool expression (bools are 0..1; comparisons that are
// decided by the ranges give a point).
IntRange constant_bounds(const Expr& e, const RangeScope& scope);

// Narrows `scope` with what `condition == truth` implies about single variables
// (conjunctions of comparisons of one variable's affine form with a constant).
void narrow_by_condition(const Expr& condition, bool truth, RangeScope* scope);

// Floor division and modulo (the IR's integer semantics), for b != 0.
int64_t floor_div(int64_t a, int64_t b);
int64_t floor_mod(int64_t a, int64_t b);

}  // namespace tensorgym
