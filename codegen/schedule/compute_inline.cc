// compute_inline(STAGE): STAGE has no buffer; its readers evaluate its expression
// wherever they read it.
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {
namespace {

constexpr ArgSpec kArgs[] = {{ArgKind::kStage}};

Status check(const ScheduleState& state, const PrimitiveArgs& args) {
  const StageSchedule& stage = stage_of(state, args[0]);
  if (stage.attach == AttachKind::kInline) return Status();  // no effect
  if (stage.is_output) return failed_precondition("stage " + stage.name() + " is an output and needs its buffer");
  if (stage.def->is_reduction())
    return failed_precondition("stage " + stage.name() + " is a reduction (" + reduce_kind_op(stage.def->reduce) +
                               ") and cannot be inlined");
  std::vector<std::string> attached = state.attached_at(stage.name());
  if (!attached.empty())
    return failed_precondition("stage " + attached[0] + " is computed at a loop of " + stage.name() +
                               "; compute_root it first");
  return Status();
}

PrimitiveResult apply(ScheduleState& state, const PrimitiveArgs& args) {
  StageSchedule& stage = stage_of(state, args[0]);
  if (stage.attach == AttachKind::kInline) return ApplyEffect::kNoEffect;
  stage.attach = AttachKind::kInline;
  stage.attach_stage.clear();
  stage.attach_loop.clear();
  return ApplyEffect::kChanged;
}

Expected<PrimitiveArgs> stage_only(const ScheduleState&, int stage, int, int) { return PrimitiveArgs{PrimitiveArg::of_stage(stage)}; }

void mask(const ScheduleState& state, int stage, std::span<int64_t> row, TargetKind) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  if (!s.is_output && s.attach != AttachKind::kInline && !s.def->is_reduction() && state.attached_at(s.name()).empty())
    row[0] = 1;
}

constexpr std::string_view kCursorNames[] = {"inline"};

PrimitiveArgs propose(const ScheduleState&, int stage, Rng&, const std::string&, int64_t) {
  return {PrimitiveArg::of_stage(stage)};
}

}  // namespace

extern const PrimitiveDef kComputeInlinePrimitive = {
    .name = "compute_inline",
    .usage = "compute_inline(STAGE)",
    .summary = "STAGE has no buffer; its readers evaluate its expression",
    .rejects = "STAGE is an output or a reduction; a stage is computed at STAGE",
    .args = kArgs,
    .check = check,
    .apply = apply,
    .flat = {ActionSlots::kStage, 1, stage_only, mask},
    .cursor = {kCursorNames, stage_only},
    .random = {6, propose},
};

}  // namespace tensorgym
