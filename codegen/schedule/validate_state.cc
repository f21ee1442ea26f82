// The invariants every schedule state keeps; a primitive that would break one is
// rejected, so any state reachable by primitives lowers.
#include <fmt/format.h>

#include "codegen/schedule/bound_inference.h"
#include "codegen/schedule/primitive.h"

namespace tensorgym {

namespace {

// Vectorized and unrolled loops within their caps, measured on the extents bounds
// inference gives (a loop of a stage computed inside another is often much shorter
// than the stage's domain). Inference runs only when a domain extent is over a cap.
Status check_annotated_extents(const ScheduleState& state) {
  auto cap = [](const Loop& l) {
    return l.kind == ForKind::kVectorized ? kMaxVectorLanes : l.kind == ForKind::kUnrolled ? kMaxUnrollExtent : 0;
  };
  bool needed = false;
  for (const StageSchedule& s : state.stages())
    for (int leaf : s.leaf) {
      const Loop& l = s.loops[size_t(leaf)];
      needed |= cap(l) > 0 && l.extent > cap(l) && s.attach != AttachKind::kInline;
    }
  if (!needed) return Status();
  TG_ASSIGN_OR_RETURN(ScheduleBounds bounds, infer_bounds(state));
  for (const StageSchedule& s : state.stages()) {
    if (s.attach == AttachKind::kInline) continue;
    for (int leaf : s.leaf) {
      const Loop& l = s.loops[size_t(leaf)];
      if (cap(l) == 0) continue;
      int64_t extent = bounds.loop_extent(s, leaf);
      if (extent <= cap(l)) continue;
      std::string ref = s.name() + "." + l.name;
      if (l.kind == ForKind::kVectorized)
        return out_of_range(
            fmt::format("cannot vectorize {} with {} iterations; at most {} lanes (split it first)", ref, extent, kMaxVectorLanes));
      return out_of_range(
          fmt::format("cannot unroll {} with {} iterations; at most {} (split it first)", ref, extent, kMaxUnrollExtent));
    }
  }
  return Status();
}

}  // namespace

Status validate_state(const ScheduleState& state) {
  for (const StageSchedule& s : state.stages()) {
    // Inside a vectorized loop: no parallel or vectorized loop, no stage computed.
    bool in_vector = false;
    std::string vector_loop;
    for (int leaf : s.leaf) {
      const Loop& l = s.loops[size_t(leaf)];
      if (in_vector) {
        if (l.kind == ForKind::kParallel || l.kind == ForKind::kVectorized)
          return failed_precondition(std::string(for_kind_name(l.kind)) + " loop " + s.name() + "." + l.name +
                                     " would be inside vectorized loop " + s.name() + "." + vector_loop);
      }
      if (l.kind == ForKind::kVectorized) {
        in_vector = true;
        vector_loop = l.name;
      }
      if (in_vector) {
        for (const StageSchedule& t : state.stages())
          if (t.attach == AttachKind::kAt && t.attach_stage == s.name() && t.attach_loop == l.name)
            return failed_precondition("stage " + t.name() + " would be computed inside vectorized loop " +
                                       s.name() + "." + vector_loop);
      }
    }
    for (const StorageAlign& a : s.aligns)
      if (a.axis == s.innermost_storage_axis())
        return failed_precondition("dimension " + s.name() + "." + s.def->axes[size_t(a.axis)].name +
                                   " is aligned and would be stored innermost (its stride is 1)");
    if (s.attach == AttachKind::kInline) {
      if (!state.attached_at(s.name()).empty())
        return failed_precondition("stage " + s.name() + " is inlined but a stage is computed at its loops");
    }
    if (s.attach != AttachKind::kAt) continue;
    const StageSchedule* at = state.find_stage(s.attach_stage);
    if (!at) return failed_precondition("stage " + s.name() + " is computed at missing stage " + s.attach_stage);
    if (at->attach == AttachKind::kInline)
      return failed_precondition("stage " + s.name() + " is computed at inlined stage " + at->name());
    int loop = at->find_loop(s.attach_loop);
    if (loop < 0 || at->leaf_position(loop) < 0)
      return failed_precondition("stage " + s.name() + " is computed at " + at->name() + "." + s.attach_loop +
                                 ", which would no longer be a loop");
    for (const std::string& r : state.readers_of(s.name()))
      if (!state.runs_within(*state.find_stage(r), *at, loop))
        return failed_precondition("stage " + r + " would read " + s.name() + " outside " + at->name() + "." +
                                   s.attach_loop + ", where " + s.name() + " is computed");
  }
  return check_annotated_extents(state);
}

}  // namespace tensorgym
