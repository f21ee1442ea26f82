// Lowering: a scheduled program to one imperative loop nest. The pipeline, pass by
// pass, is listed in lower.cc.
#pragma once

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

}  // namespace tensorgym
