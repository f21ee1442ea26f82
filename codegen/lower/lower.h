// Lowering: a scheduled program to one imperative loop nest. The pipeline, pass by
// pass, is listed in lower.cc.
#pragma once

#include <memory>

#include "codegen/lower/loop_nest.h"
#include "codegen/schedule/schedule.h"
#include "support/status.h"

namespace tensorgym {

// Most statements one unrolled loop may expand to (limit_code_size.cc).
inline constexpr int64_t kMaxUnrolledStatements = 256;

struct LowerOptions {
  // GPU backends accept bind(); the CPU target rejects a bound loop.
  bool allow_thread_binding = false;
  // Run the simplifier (turn off only to look at the raw nest).
  bool simplify = true;
};

// Errors are FAILED_PRECONDITION / INVALID_ARGUMENT with a message naming the stage
// or loop; the measurement layer reports them as INSTANTIATION errors.
Expected<LoopNest> lower(const ScheduleState& state, const LowerOptions& options = {});
inline Expected<LoopNest> lower(const Schedule& schedule, const LowerOptions& options = {}) {
  return lower(schedule.state(), options);
}

// A lowering, with what a later lowering of a similar state can reuse. Immutable:
// environments share it between forks and steps.
struct LoweredNest {
  LoopNest nest;
  // The state lowered (kept alive, never copied) and the options used.
  std::shared_ptr<const ScheduleState> state;
  LowerOptions options;
  // The nest before limit_code_size when it depends on the loop kinds only through
  // its For nodes (no auto_unroll_max_step pragma); undefined otherwise.
  Stmt kind_independent_body;
  // Whether this lowering reused an earlier one (for tests and benchmarks).
  bool reused = false;
};

// The same nest as lower(*state, options), reusing `previous` (an earlier result,
// may be null) when its state is one rewritable primitive away from `state`: the
// kinds of leaf loops (vectorize, parallel, unroll), one split by a dividing factor
// or one reorder of a perfect nest before the reduction (reuse_nest.h says exactly
// when). Then bounds, loop building, flattening and simplification are skipped, the
// earlier nest is rewritten and only limit_code_size runs again. Takes `previous`
// and lets go of it before lowering when it cannot be reused, so that the memory
// of its nest (often the last thing the caller touched) serves the new one.
Expected<std::shared_ptr<const LoweredNest>> lower_reusing(std::shared_ptr<const ScheduleState> state,
                                                           std::shared_ptr<const LoweredNest> previous,
                                                           const LowerOptions& options = {});

}  // namespace tensorgym
