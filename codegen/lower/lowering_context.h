// What the lowering passes share: bounds inference's stages, bodies and regions.
// Internal to codegen/lower.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
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
  LoweringContext(const ScheduleState& s, ScheduleBounds&& b) : ScheduleBounds(std::move(b)), state(s) {}
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
  struct Layout {
    const Region* region = nullptr;  // the region a stage's buffer holds; null for inputs
    size_t first_stride = 0;         // strides: strides_[first_stride, first_stride + rank)
    size_t rank = 0;
    int64_t size = 0;  // elements of an allocated stage buffer, padding included
  };

  BufferLayouts(const LoweringContext& ctx, const LoopNest& nest);  // nest: its inputs and outputs
  // The layout of a buffer of the nest (throws std::out_of_range for another name).
  const Layout& at(std::string_view name) const { return layouts_.at(name); }
  // One flat index from one (already flat) index per dimension: sum of index * stride.
  Expr flat_index(const Layout& layout, const std::vector<Expr>& indices) const;
  int64_t size(std::string_view name) const { return at(name).size; }

 private:
  NameMap<Layout> layouts_;  // a handful of buffers per nest
  std::vector<int64_t> strides_;  // every layout's, one after another
};

// The passes, in pipeline order (see lower.cc).
Status check_target_support(const ScheduleState& state, const LowerOptions& options);
// FAILED_PRECONDITION naming a tensorized or dma_copy loop: only the accelerator runs them.
Status check_no_accelerator_marks(const ScheduleState& state, const std::string& target);
// Loops, inits, guards and attachments, with flat accesses (storage_flatten.cc).
Stmt build_loop_nest(LoweringContext& ctx, const LoopNest& nest);  // nest: its inputs and outputs
Stmt mark_auto_unroll(const Stmt& s, const LoweringContext& ctx);
// Unrolling within a statement budget; nested parallel loops run serially.
Stmt limit_code_size(const Stmt& s, int64_t max_unrolled_statements);
// Every local buffer within the program's tensor size cap (padding can grow them), and
// every buffer of the nest (inputs, outputs, each Allocate: intermediate and cache
// stages, local buffers) together within the total cap (ProgramLimits).
Status check_allocations(const Stmt& s, const LoopNest& nest);

}  // namespace tensorgym
