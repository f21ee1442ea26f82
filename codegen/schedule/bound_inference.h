// Bounds inference: the region of its domain each stage computes, and the loops that
// cover that region. Lowering builds loop nests from it; the schedule uses it to check
// loop extents (unroll, vectorize) as they will be once stages are computed at loops.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/ir/interval.h"
#include "codegen/schedule/loop_geometry.h"
#include "codegen/schedule/schedule_state.h"
#include "support/name_map.h"

namespace tensorgym {

// The part of a stage's domain it computes: per spatial axis a minimum (an expression
// of enclosing loop variables when computed inside a consumer's loop) and a constant
// extent. Reduction axes always cover their whole range.
struct Region {
  std::vector<Expr> min;        // a constant, or the variable min_var() naming it
  std::vector<Expr> min_value;  // what that variable is bound to (undefined for constants)
  std::vector<int64_t> extent;
};

// Refers into the ScheduleState it was inferred from; keep that alive.
struct ScheduleBounds {
  std::vector<const StageSchedule*> stages;      // stages with buffers, producers first
  // Per stage, by name (a handful of stages: a flat list, support/name_map.h).
  NameMap<Expr> bodies;  // every stage's body, inlined stages substituted
  NameMap<Region> regions;
  NameMap<LoopGeometry> geometry;  // loops over each region
  // Ranges of every loop variable and region-minimum variable.
  RangeScope ranges;

  // The variable of a stage's loop in the lowered nest: "C.io".
  static std::string loop_var(const StageSchedule& s, const Loop& l) { return s.name() + "." + l.name; }
  // The variable holding a region's minimum along an axis: "P.h.min".
  static std::string min_var(const StageSchedule& s, size_t axis) {
    return s.name() + "." + s.def->axes[axis].name + ".min";
  }
  // The extent of a stage's loop over its region.
  int64_t loop_extent(const StageSchedule& s, int loop) const { return geometry.at(s.name()).extents[size_t(loop)]; }
};

Expected<ScheduleBounds> infer_bounds(const ScheduleState& state);

// Step one of infer_bounds: stage bodies with compute_inline'd stages substituted,
// and the stages that keep a buffer (inline_bodies.cc).
void inline_bodies(const ScheduleState& state, ScheduleBounds* bounds);

}  // namespace tensorgym
