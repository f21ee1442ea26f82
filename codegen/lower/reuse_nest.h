// Reusing an earlier lowering: the nest of a schedule state one step away from a
// lowered one, derived by rewriting the lowered nest instead of lowering again
// (bounds, loop building, flattening and simplification skipped). Internal to
// codegen/lower; lower_reusing (lower.cc) is the entry point.
#pragma once

#include "codegen/ir/stmt.h"
#include "codegen/schedule/schedule_state.h"

namespace tensorgym {

// `body`: the nest of `before`, before limit_code_size; `simplified`: whether the
// lowering simplified it (only loop kinds are rewritten into a nest that was not). Returns the nest a
// fresh lowering of `after` gives (before limit_code_size), or an undefined Stmt when
// the two states differ in a way that is not rewritten here or when the rewrite
// could come out different from a fresh lowering. Rewritten:
// - loop kinds (vectorize, parallel, unroll): the kinds are set on the For nodes;
// - one split, by a factor that divides the loop, of a stage nothing is computed at,
//   whose loop variable appears only as a term of linear buffer indices and whose
//   body (with those inlined into it) has no division or modulo: the loop
//   becomes two and the indices are rebuilt in the simplifier's canonical form;
// - one reorder among the loops that come before a stage's first reduction loop and
//   form a perfect nest (nothing between them): the For nodes are permuted.
// Callers must only pass states whose lowering depends on loop kinds through the For
// nodes alone (no auto_unroll_max_step pragma).
Stmt reuse_nest(const ScheduleState& before, const ScheduleState& after, const Stmt& body, bool simplified);

}  // namespace tensorgym
