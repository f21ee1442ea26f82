// Bounds of an integer expression while some variables vary over constant ranges and
// the others stay fixed (symbolic): [y + 0, y + 2] for y + r with r in [0, 2]. Bounds
// inference sizes compute_at regions with it. Used by bounds inference.
#pragma once

#include "codegen/ir/expr.h"
#include "codegen/ir/interval.h"

namespace tensorgym {

struct SymbolicInterval {
  Expr min, max;  // undefined when unbounded
  bool bounded() const { return min.defined() && max.defined(); }
};

// `varying`: the variables that range; `all`: ranges of every variable (the fixed ones
// too), used where a constant fallback is needed.
SymbolicInterval symbolic_bounds(const Expr& e, const RangeScope& varying, const RangeScope& all);

}  // namespace tensorgym
