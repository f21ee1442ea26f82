// What the lowering passes share: bounds inference's stages, bodies and regions.
// Internal to codegen/lower.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/ir/interval.h"
#include "codegen/ir/stmt.h"
#include "codegen/lower/lower.h"
#include "codegen/schedule/bound_inference.h"
#include "codegen/schedule/schedule_state.h"

namespace tensorgym {

// Lowering works on the bounds inference result plus what the passes add.
struct LoweringContext : ScheduleBounds {
  LoweringContext(const ScheduleState& s, ScheduleBounds b) : ScheduleBounds(std::move(b)), state(s) {}
  const ScheduleState& state;
};

// The passes, in pipeline order (see lower.cc).
Status check_target_support(const ScheduleState& state, const LowerOptions& options);
Stmt build_loop_nest(LoweringContext& ctx);
Stmt mark_auto_unroll(const Stmt& s, const LoweringContext& ctx);
// Unrolling within a statement budget; nested parallel loops run serially.
Stmt limit_code_size(const Stmt& s, int64_t max_unrolled_statements);
// Every local buffer within the program's tensor size cap (padding can grow them).
Status check_allocations(const Stmt& s);
Stmt storage_flatten(const Stmt& s, const LoweringContext& ctx, const std::vector<BufferArg>& args);

}  // namespace tensorgym
