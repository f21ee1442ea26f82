// vectorize(STAGE.loop): a spatial loop runs as vector operations, one lane per
// iteration. Loops inside it stay scalar loops around vector code (TVM semantics), so
// a register tile can keep its reduction loop inside the vectorized loop.
#include "codegen/schedule/action_helpers.h"
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {
namespace {

constexpr ArgSpec kArgs[] = {{ArgKind::kLoop}};

Status check(const ScheduleState& state, const PrimitiveArgs& args) {
  LoopRef ref = loop_of(state, args[0]);
  const StageSchedule& stage = *ref.stage;
  if (ref.get().is_reduce)
    return invalid_argument("cannot vectorize reduction loop " + ref.text() +
                            " (vectorize a spatial loop, or rfactor the reduction first)");
  // The lane count is checked by validate_state, on the extent the loop has once
  // bounds inference sizes its stage.
  for (size_t p = size_t(stage.leaf_position(ref.loop)); p < stage.leaf.size(); ++p) {
    int inner = stage.leaf[p];
    TG_RETURN_IF_ERROR(check_nothing_attached_at(state, ref, inner, "vectorize"));
    const Loop& l = stage.loops[size_t(inner)];
    if (inner != ref.loop && (l.kind == ForKind::kParallel || l.kind == ForKind::kVectorized))
      return failed_precondition("cannot vectorize " + ref.text() + " around " + for_kind_name(l.kind) + " loop " +
                                 stage.name() + "." + l.name);
  }
  return check_loop_kind(ref, ForKind::kVectorized);
}

PrimitiveResult apply(ScheduleState& state, const PrimitiveArgs& args) {
  return set_loop_kind(mutable_loop(state, args[0]), ForKind::kVectorized);
}

Expected<PrimitiveArgs> flat(const ScheduleState& state, int stage, int slot, int) {
  return leaf_loop_at_slot(state, "vectorize", stage, slot);
}

void mask(const ScheduleState& state, int stage, std::span<int64_t> row, TargetKind) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  if (s.attach == AttachKind::kInline) return;
  for (size_t p = 0; p < s.leaf.size() && p < size_t(kActionMaxLoops); ++p) {
    const Loop& l = s.loops[size_t(s.leaf[p])];
    if (l.kind != ForKind::kSerial || !l.thread_tag.empty() || l.is_reduce || l.extent > kMaxVectorLanes ||
        l.extent <= 1)
      continue;
    bool ok = true;
    for (size_t q = p; q < s.leaf.size() && ok; ++q) {
      const Loop& inner = s.loops[size_t(s.leaf[q])];
      ok = !has_attached_at(state, s, s.leaf[q]) && inner.kind != ForKind::kParallel &&
           inner.kind != ForKind::kVectorized;
    }
    if (ok) row[p] = 1;
  }
}

constexpr std::string_view kCursorNames[] = {"vectorize"};

PrimitiveArgs propose(const ScheduleState& state, int stage, Rng& rng, const std::string&, int64_t) {
  // Vectorize is most useful on the innermost loop.
  return propose_leaf_loop(state, stage, rng, FavouredLoop::kInnermost);
}

}  // namespace

extern const PrimitiveDef kVectorizePrimitive = {
    .name = "vectorize",
    .usage = "vectorize(STAGE.loop)",
    .summary = "the loop runs as vector operations; loops inside it stay scalar loops around vector code",
    .rejects = "reduction loop; more than 64 lanes; a parallel or vectorized loop, or a computed stage, inside it",
    .args = kArgs,
    .check = check,
    .apply = apply,
    .flat = {ActionSlots::kLoops, 1, flat, mask},
    .cursor = {kCursorNames, leaf_loop_at_cursor},
    .random = {8, propose},
    .targets = uint8_t(TargetKind::kCpu) | uint8_t(TargetKind::kGpu),
};

}  // namespace tensorgym
