// fuse(STAGE.outer, STAGE.inner, fused): two adjacent leaf loops (outer directly
// around inner) become one loop over outer_extent * inner_extent iterations.
#include <fmt/format.h>

#include "codegen/schedule/action_helpers.h"
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {
namespace {

constexpr ArgSpec kArgs[] = {{ArgKind::kLoop}, {ArgKind::kLoop}, {ArgKind::kNewLoop}};

Status check(const ScheduleState& state, const PrimitiveArgs& args) {
  LoopRef outer = loop_of(state, args[0]);
  LoopRef inner = loop_of(state, args[1]);
  if (outer.stage != inner.stage) return invalid_argument("fuse needs two loops of the same stage");
  const StageSchedule& stage = *outer.stage;
  TG_RETURN_IF_ERROR(check_new_loop_name(stage, args[2].name));
  if (outer.loop == inner.loop) return invalid_argument("cannot fuse a loop with itself");
  if (stage.leaf_position(inner.loop) != stage.leaf_position(outer.loop) + 1)
    return invalid_argument("fuse needs adjacent loops, " + outer.text() + " directly around " + inner.text() +
                            " (leaf order: " + leaf_names(stage) + ")");
  for (const LoopRef* r : {&outer, &inner}) {
    if (annotated(r->get())) return failed_precondition("loop " + r->text() + " is annotated; fuse before annotating");
    TG_RETURN_IF_ERROR(check_nothing_attached_at(state, *r, r->loop, "fuse"));
  }
  if (outer.get().is_reduce != inner.get().is_reduce)
    return invalid_argument("cannot fuse a reduction loop with a spatial loop (" + outer.text() + ", " +
                            inner.text() + ")");
  int64_t extent = outer.get().extent * inner.get().extent;
  if (extent > kMaxLoopExtent)
    return out_of_range(fmt::format("fused loop would have {} iterations, over the limit of {}", extent, kMaxLoopExtent));
  return Status();
}

PrimitiveResult apply(ScheduleState& state, const PrimitiveArgs& args) {
  StageSchedule& stage = stage_of(state, args[0]);
  const Loop& outer = stage.loops[size_t(args[0].loop)];
  const Loop& inner = stage.loops[size_t(args[1].loop)];
  Loop merged{args[2].name, outer.extent * inner.extent, outer.is_reduce};
  int fused = int(stage.loops.size());
  stage.loops.push_back(std::move(merged));
  LoopRelation rel{LoopRelation::kFuse};
  rel.outer = args[0].loop;
  rel.inner = args[1].loop;
  rel.fused = fused;
  stage.relations.push_back(rel);
  int pos = stage.leaf_position(args[0].loop);
  stage.leaf[size_t(pos)] = fused;
  stage.leaf.erase(stage.leaf.begin() + pos + 1);
  return ApplyEffect::kChanged;
}

// Fuses leaf `pos` with the next one.
PrimitiveArgs fuse_next(const StageSchedule& s, int stage, int pos) {
  int loop = s.leaf[size_t(pos)], next = s.leaf[size_t(pos) + 1];
  return {PrimitiveArg::of_loop(stage, loop), PrimitiveArg::of_loop(stage, next),
          PrimitiveArg::of_name(fresh_loop_name(s, s.loops[size_t(loop)].name + "_" + s.loops[size_t(next)].name))};
}

Expected<PrimitiveArgs> flat(const ScheduleState& state, int stage, int slot, int) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  TG_ASSIGN_OR_RETURN(int loop, action_leaf(s, "fuse", slot));
  if (slot + 1 >= int(s.leaf.size()))
    return invalid_argument("loop " + s.name() + "." + s.loops[size_t(loop)].name + " has no next loop");
  return fuse_next(s, stage, slot);
}

void mask(const ScheduleState& state, int stage, std::span<int64_t> row, TargetKind) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  for (size_t p = 0; p + 1 < s.leaf.size() && p < size_t(kActionMaxLoops); ++p) {
    const Loop& l = s.loops[size_t(s.leaf[p])];
    const Loop& next = s.loops[size_t(s.leaf[p + 1])];
    if (!annotated(l) && !annotated(next) && l.is_reduce == next.is_reduce && !has_attached_at(state, s, s.leaf[p]) &&
        !has_attached_at(state, s, s.leaf[p + 1]) && l.extent * next.extent <= kMaxLoopExtent)
      row[p] = 1;
  }
}

constexpr std::string_view kCursorNames[] = {"fuse_next"};

Expected<PrimitiveArgs> cursor(const ScheduleState& state, int stage, int pos, int) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  if (pos + 1 >= int(s.leaf.size()))
    return failed_precondition("the cursor's loop " + s.name() + "." + s.loops[size_t(s.leaf[size_t(pos)])].name +
                               " is innermost");
  return fuse_next(s, stage, pos);
}

PrimitiveArgs propose(const ScheduleState& state, int stage, Rng& rng, const std::string& id, int64_t) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  size_t pos = size_t(rng.below(s.leaf.size()));
  size_t next = std::min(pos + 1, s.leaf.size() - 1);
  return {PrimitiveArg::of_loop(stage, s.leaf[pos]), PrimitiveArg::of_loop(stage, s.leaf[next]), PrimitiveArg::of_name("f" + id)};
}

}  // namespace

extern const PrimitiveDef kFusePrimitive = {
    .name = "fuse",
    .usage = "fuse(STAGE.outer, STAGE.inner, fused)",
    .summary = "two adjacent loops become one of `outer * inner` iterations",
    .rejects = "not adjacent, reduction with spatial, annotated, a stage computed at either",
    .args = kArgs,
    .check = check,
    .apply = apply,
    .flat = {ActionSlots::kLoops, 1, flat, mask},
    .cursor = {kCursorNames, cursor},
    .random = {5, propose},
};

}  // namespace tensorgym
