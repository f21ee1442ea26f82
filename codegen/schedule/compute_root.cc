// compute_root(STAGE): STAGE is computed once, over its whole domain, before its
// readers (the default; undoes compute_at and compute_inline).
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {
namespace {

constexpr ArgSpec kArgs[] = {{ArgKind::kStage}};

Status check(const ScheduleState&, const PrimitiveArgs&) { return Status(); }

PrimitiveResult apply(ScheduleState& state, const PrimitiveArgs& args) {
  StageSchedule& stage = stage_of(state, args[0]);
  if (stage.attach == AttachKind::kRoot) return ApplyEffect::kNoEffect;
  stage.attach = AttachKind::kRoot;
  stage.attach_stage.clear();
  stage.attach_loop.clear();
  return ApplyEffect::kChanged;
}

Expected<PrimitiveArgs> stage_only(const ScheduleState&, int stage, int, int) { return PrimitiveArgs{PrimitiveArg::of_stage(stage)}; }

void mask(const ScheduleState& state, int stage, std::span<int64_t> row, TargetKind) {
  if (state.stages()[size_t(stage)].attach != AttachKind::kRoot) row[0] = 1;
}

constexpr std::string_view kCursorNames[] = {"root"};

PrimitiveArgs propose(const ScheduleState&, int stage, Rng&, const std::string&, int64_t) {
  return {PrimitiveArg::of_stage(stage)};
}

}  // namespace

extern const PrimitiveDef kComputeRootPrimitive = {
    .name = "compute_root",
    .usage = "compute_root(STAGE)",
    .summary = "STAGE is computed over its whole domain before its readers (the default)",
    .rejects = "—",
    .args = kArgs,
    .check = check,
    .apply = apply,
    .flat = {ActionSlots::kStage, 1, stage_only, mask},
    .cursor = {kCursorNames, stage_only},
    .random = {3, propose},
};

}  // namespace tensorgym
