// reorder(STAGE, l1, l2, ...): the listed leaf loops take the positions they occupy
// together, in the order given; other loops stay where they are (TVM semantics).
#include <algorithm>

#include "codegen/schedule/action_helpers.h"
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {
namespace {

constexpr ArgSpec kArgs[] = {{ArgKind::kStage}, {ArgKind::kLeafOfStage}};

Status check(const ScheduleState& state, const PrimitiveArgs& args) {
  const StageSchedule& stage = stage_of(state, args[0]);
  for (size_t i = 1; i < args.size(); ++i)
    for (size_t j = 1; j < i; ++j)
      if (args[j].loop == args[i].loop)
        return invalid_argument("loop " + stage.loops[size_t(args[i].loop)].name + " is listed twice");
  return Status();
}

PrimitiveResult apply(ScheduleState& state, const PrimitiveArgs& args) {
  StageSchedule& stage = stage_of(state, args[0]);
  std::vector<int> positions;
  positions.reserve(args.size() - 1);
  for (size_t i = 1; i < args.size(); ++i) positions.push_back(stage.leaf_position(args[i].loop));
  std::sort(positions.begin(), positions.end());
  std::vector<int> leaf = stage.leaf;
  for (size_t i = 1; i < args.size(); ++i) leaf[size_t(positions[i - 1])] = args[i].loop;
  if (leaf == stage.leaf) return ApplyEffect::kNoEffect;
  stage.leaf = std::move(leaf);
  return ApplyEffect::kChanged;
}

// Swaps leaf `pos` with the next one.
PrimitiveArgs swap_next(const StageSchedule& s, int stage, int pos) {
  return PrimitiveArgs{PrimitiveArg::of_stage(stage), PrimitiveArg::of_loop(stage, s.leaf[size_t(pos) + 1]),
                       PrimitiveArg::of_loop(stage, s.leaf[size_t(pos)])};
}

Expected<PrimitiveArgs> flat(const ScheduleState& state, int stage, int slot, int) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  TG_ASSIGN_OR_RETURN(int loop, action_leaf(s, "reorder", slot));
  if (slot + 1 >= int(s.leaf.size()))
    return invalid_argument("loop " + s.name() + "." + s.loops[size_t(loop)].name + " has no next loop");
  return swap_next(s, stage, slot);
}

void mask(const ScheduleState& state, int stage, std::span<int64_t> row, TargetKind) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  for (size_t p = 0; p + 1 < s.leaf.size() && p < size_t(kActionMaxLoops); ++p) {
    const Loop& l = s.loops[size_t(s.leaf[p])];
    const Loop& next = s.loops[size_t(s.leaf[p + 1])];
    if (l.kind != ForKind::kVectorized && next.kind != ForKind::kVectorized) row[p] = 1;
  }
}

constexpr std::string_view kCursorNames[] = {"swap_next"};

Expected<PrimitiveArgs> cursor(const ScheduleState& state, int stage, int pos, int) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  if (pos + 1 >= int(s.leaf.size()))
    return failed_precondition("the cursor's loop " + s.name() + "." + s.loops[size_t(s.leaf[size_t(pos)])].name +
                               " is innermost");
  return swap_next(s, stage, pos);
}

PrimitiveArgs propose(const ScheduleState& state, int stage, Rng& rng, const std::string&, int64_t) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  std::vector<int> leaf = s.leaf;
  for (size_t i = leaf.size(); i > 1; --i) std::swap(leaf[i - 1], leaf[size_t(rng.below(i))]);
  PrimitiveArgs args{PrimitiveArg::of_stage(stage)};
  size_t n = std::min<size_t>(leaf.size(), size_t(rng.range(2, 4)));
  for (size_t i = 0; i < n; ++i) args.push_back(PrimitiveArg::of_loop(stage, leaf[i]));
  return args;
}

}  // namespace

extern const PrimitiveDef kReorderPrimitive = {
    .name = "reorder",
    .usage = "reorder(STAGE, loop, loop, ...)",
    .summary = "the listed leaf loops take the positions they occupy together, in the given order",
    .rejects = "a loop listed twice or not a leaf",
    .args = kArgs,
    .variadic = true,
    .check = check,
    .apply = apply,
    .flat = {ActionSlots::kLoops, 1, flat, mask},
    .cursor = {kCursorNames, cursor},
    .random = {10, propose},
};

}  // namespace tensorgym
