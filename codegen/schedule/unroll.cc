// unroll(STAGE.loop): the loop's body is replicated once per iteration.
#include "codegen/schedule/action_helpers.h"
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {
namespace {

constexpr ArgSpec kArgs[] = {{ArgKind::kLoop}};

Status check(const ScheduleState& state, const PrimitiveArgs& args) {
  // The extent is checked by validate_state, as bounds inference sizes the stage.
  return check_loop_kind(loop_of(state, args[0]), ForKind::kUnrolled);
}

PrimitiveResult apply(ScheduleState& state, const PrimitiveArgs& args) {
  return set_loop_kind(mutable_loop(state, args[0]), ForKind::kUnrolled);
}

Expected<PrimitiveArgs> flat(const ScheduleState& state, int stage, int slot, int) {
  return leaf_loop_at_slot(state, "unroll", stage, slot);
}

void mask(const ScheduleState& state, int stage, std::span<int64_t> row, TargetKind) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  if (s.attach == AttachKind::kInline) return;
  for (size_t p = 0; p < s.leaf.size() && p < size_t(kActionMaxLoops); ++p) {
    const Loop& l = s.loops[size_t(s.leaf[p])];
    if (l.kind == ForKind::kSerial && l.thread_tag.empty() && l.extent <= kMaxUnrollExtent && l.extent > 1)
      row[p] = 1;
  }
}

constexpr std::string_view kCursorNames[] = {"unroll"};

PrimitiveArgs propose(const ScheduleState& state, int stage, Rng& rng, const std::string&, int64_t) {
  // Unroll is most useful on the innermost loop.
  return propose_leaf_loop(state, stage, rng, FavouredLoop::kInnermost);
}

}  // namespace

extern const PrimitiveDef kUnrollPrimitive = {
    .name = "unroll",
    .usage = "unroll(STAGE.loop)",
    .summary = "full unroll",
    .rejects = "more than 256 iterations",
    .args = kArgs,
    .check = check,
    .apply = apply,
    .flat = {ActionSlots::kLoops, 1, flat, mask},
    .cursor = {kCursorNames, leaf_loop_at_cursor},
    .random = {6, propose},
    .targets = uint8_t(TargetKind::kCpu) | uint8_t(TargetKind::kGpu),
};

}  // namespace tensorgym
