// storage_align(STAGE.axis, factor, offset): pads the stride of dimension `axis` of
// STAGE's buffer so that stride % factor == offset (TVM semantics), e.g. to keep rows
// of a packed tile off the same cache sets.
#include <fmt/format.h>

#include "codegen/schedule/action_helpers.h"
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {
namespace {

constexpr ArgSpec kArgs[] = {{ArgKind::kAnyLoop},
                             {ArgKind::kInt, "alignment factor", 1, 1 << 20},
                             {ArgKind::kInt, "alignment offset", 0, (1 << 20) - 1}};
// The flat space's and the cursor's alignment.
constexpr int64_t kFactor = 16, kOffset = 1;

// The buffer dimension loop `loop` of `stage` is, or -1.
int axis_of(const StageSchedule& stage, int loop) {
  for (size_t i = 0; i < stage.def->axes.size(); ++i)
    if (stage.def->axes[i].name == stage.loops[size_t(loop)].name) return int(i);
  return -1;
}

Status check(const ScheduleState& state, const PrimitiveArgs& args) {
  LoopRef ref = loop_of(state, args[0]);
  const StageSchedule& stage = *ref.stage;
  int axis = axis_of(stage, ref.loop);
  if (axis < 0) return invalid_argument(ref.text() + " is not a dimension of " + stage.name() + "'s buffer");
  if (axis == stage.innermost_storage_axis())
    return invalid_argument("cannot align the innermost dimension " + ref.text() + " (its stride is 1)");
  if (stage.is_output)
    return failed_precondition("stage " + stage.name() + " is an output; its layout is fixed by the caller");
  if (stage.attach == AttachKind::kInline) return failed_precondition("stage " + stage.name() + " is inlined");
  if (args[2].value >= args[1].value)
    return invalid_argument(fmt::format("alignment offset must be in 0..{}, found {}", args[1].value - 1, args[2].value));
  return Status();
}

PrimitiveResult apply(ScheduleState& state, const PrimitiveArgs& args) {
  StageSchedule& stage = stage_of(state, args[0]);
  int axis = axis_of(stage, args[0].loop);
  const int64_t factor = args[1].value, offset = args[2].value;
  for (StorageAlign& a : stage.aligns) {
    if (a.axis != axis) continue;
    if (a.factor == factor && a.offset == offset) return ApplyEffect::kNoEffect;
    a.factor = factor;
    a.offset = offset;
    return ApplyEffect::kChanged;
  }
  stage.aligns.push_back(StorageAlign{axis, factor, offset});
  return ApplyEffect::kChanged;
}

// Dimension `axis` of the stage, through its root loop of the same name.
PrimitiveArgs align(const StageSchedule& s, int stage, int axis) {
  return {PrimitiveArg::of_loop(stage, s.find_loop(s.def->axes[size_t(axis)].name)), PrimitiveArg::of_int(kFactor), PrimitiveArg::of_int(kOffset)};
}

Expected<PrimitiveArgs> flat(const ScheduleState& state, int stage, int slot, int) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  if (slot >= int(s.def->axes.size()))
    return invalid_argument(fmt::format("stage {} has {} dimensions, not {}", s.name(), s.def->axes.size(), slot + 1));
  return align(s, stage, slot);
}

void mask(const ScheduleState& state, int stage, std::span<int64_t> row, TargetKind) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  if (s.is_output || s.attach == AttachKind::kInline) return;
  for (size_t a = 0; a < s.def->axes.size() && a < size_t(kActionMaxLoops); ++a) {
    if (int(a) == s.innermost_storage_axis()) continue;  // stride 1: nothing to align
    bool same = false;
    for (const StorageAlign& al : s.aligns) same |= al.axis == int(a) && al.factor == kFactor && al.offset == kOffset;
    if (!same) row[a] = 1;
  }
}

constexpr std::string_view kCursorNames[] = {"storage_align"};

// The dimension of the stage's buffer the cursor's loop came from, when it is one.
Expected<PrimitiveArgs> cursor(const ScheduleState& state, int stage, int pos, int) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  int loop = s.leaf[size_t(pos)];
  int axis = axis_of(s, loop);
  if (axis < 0)
    return failed_precondition("the cursor's loop " + s.name() + "." + s.loops[size_t(loop)].name +
                               " is not a dimension of " + s.name());
  return PrimitiveArgs{PrimitiveArg::of_loop(stage, loop), PrimitiveArg::of_int(kFactor), PrimitiveArg::of_int(kOffset)};
}

PrimitiveArgs propose(const ScheduleState& state, int stage, Rng& rng, const std::string&, int64_t) {
  static const std::vector<int64_t> kFactors = {2, 3, 4, 5, 8, 16};
  const StageSchedule& s = state.stages()[size_t(stage)];
  int axis = int(rng.below(s.def->axes.size()));
  int64_t f = rng.pick(kFactors);
  return {PrimitiveArg::of_loop(stage, s.find_loop(s.def->axes[size_t(axis)].name)), PrimitiveArg::of_int(f),
          PrimitiveArg::of_int(int64_t(rng.below(uint64_t(f))))};
}

}  // namespace

extern const PrimitiveDef kStorageAlignPrimitive = {
    .name = "storage_align",
    .usage = "storage_align(STAGE.axis, factor, offset)",
    .summary = "the stride of dimension `axis` of STAGE's buffer is padded so that `stride % factor == offset`",
    .rejects = "innermost dimension; STAGE is an output (its layout is the caller's)",
    .args = kArgs,
    .check = check,
    .apply = apply,
    .flat = {ActionSlots::kLoops, 1, flat, mask},
    .cursor = {kCursorNames, cursor},
    .random = {3, propose},
};

}  // namespace tensorgym
