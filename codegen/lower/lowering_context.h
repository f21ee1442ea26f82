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

  // Whether the nest allocates the stage's buffer: intermediate root stages for the
  // whole function, stages computed at a loop inside it (outputs are arguments).
  static bool has_allocation(const StageSchedule& s) {
    return s.attach == AttachKind::kAt || (s.attach == AttachKind::kRoot && !s.is_output);
  }
};

// Flat layouts (storage_flatten.cc) of the buffers a nest accesses: the program's
// inputs and outputs, row-major as passed; each stage buffer the nest allocates, its
// region in the order reorder_storage chose, with storage_align's padding.
class BufferLayouts {
 public:
  BufferLayouts(const LoweringContext& ctx, const LoopNest& nest);  // nest: its inputs and outputs
  // One flat index from one (already flat) index per dimension: sum of index * stride.
  Expr flat_index(const std::string& name, const std::vector<Expr>& indices) const;
  // Elements of an allocated stage buffer, padding included.
  int64_t size(const std::string& name) const { return layouts_.at(name).size; }

 private:
  struct Layout {
    std::vector<int64_t> strides;
    int64_t size = 0;
  };
  std::unordered_map<std::string, Layout> layouts_;
};

// The passes, in pipeline order (see lower.cc).
Status check_target_support(const ScheduleState& state, const LowerOptions& options);
// Loops, inits, guards and attachments, with flat accesses (storage_flatten.cc).
Stmt build_loop_nest(LoweringContext& ctx, const LoopNest& nest);  // nest: its inputs and outputs
Stmt mark_auto_unroll(const Stmt& s, const LoweringContext& ctx);
// Unrolling within a statement budget; nested parallel loops run serially.
Stmt limit_code_size(const Stmt& s, int64_t max_unrolled_statements);
// Every local buffer within the program's tensor size cap (padding can grow them).
Status check_allocations(const Stmt& s);

}  // namespace tensorgym
