// Constant interval arithmetic over integer expressions: given ranges of the
// variables, the range of an expression. Used to prove accesses in bounds, to size
// buffers and to drop guards the simplifier can show are always true.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

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

// Ranges set on top of a RangeScope for nested regions of code (a loop's body, one
// side of a condition): pushed on entry, popped on exit; the latest entry for a name
// wins. A walk over a loop nest sets a few variables at a time: searching them beats
// copying the scope or hashing each name it sets and restores. Nothing is copied, so
// `base` and the pushed names (those of the nodes being walked) must outlive them.
class RangeStack {
 public:
  explicit RangeStack(const RangeScope& base) : base_(base) {}

  // The range of `name`, or null when it is unbounded.
  const IntRange* find(const std::string& name) const;
  void push(std::string_view name, IntRange r);
  size_t depth() const { return entries_.size(); }
  // Drops the entries pushed since depth() was `depth`.
  void pop_to(size_t depth) { entries_.resize(depth); }

 private:
  struct Entry {
    std::string_view name;
    IntRange range;
  };
  const RangeScope& base_;
  std::vector<Entry> entries_;
};

// The range of an integer or bool expression (bools are 0..1; comparisons that are
// decided by the ranges give a point).
IntRange constant_bounds(const Expr& e, const RangeScope& scope);
IntRange constant_bounds(const Expr& e, const RangeStack& scope);

// Narrows `scope` with what `condition == truth` implies about single variables
// (conjunctions of comparisons of one variable's affine form with a constant). On a
// RangeStack the narrowed ranges are pushed (named by the condition's variables).
void narrow_by_condition(const Expr& condition, bool truth, RangeScope* scope);
void narrow_by_condition(const Expr& condition, bool truth, RangeStack* scope);

// Floor division and modulo (the IR's integer semantics), for b != 0.
int64_t floor_div(int64_t a, int64_t b);
int64_t floor_mod(int64_t a, int64_t b);

}  // namespace tensorgym
