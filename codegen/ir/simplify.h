// Algebraic simplification: constant folding, integer expressions in canonical linear
// form, division and modulo resolved with variable ranges, decided comparisons, and
// (for statements) guards that always hold removed and loops of one iteration
// unwrapped. Never changes meaning; float arithmetic is only folded when constant.
#pragma once

#include "codegen/ir/expr.h"
#include "codegen/ir/interval.h"
#include "codegen/ir/stmt.h"

namespace tensorgym {

Expr simplify(const Expr& e, const RangeScope& scope = {});

// Loop variables get their loop's range; lets the range of their value. May return an
// undefined Stmt when nothing is left to do.
Stmt simplify(const Stmt& s, const RangeScope& scope = {});

// Folds a cast of a constant (int wrap, float rounding, float→int truncation with
// saturation, NaN → 0), as the interpreter and the CPU backend compute it.
Expr fold_cast(DataType t, const Expr& value);

}  // namespace tensorgym
