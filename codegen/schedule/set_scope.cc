// set_scope(STAGE, global | shared | local | inp_buffer | wgt_buffer | acc_buffer):
// where STAGE's buffer lives. On a GPU a `shared` buffer is one per block, filled by the
// block's threads together (lowering adds the barriers); a `local` one is private to
// each thread (registers). On the accelerator the on-chip input, weight and accumulator
// buffers (VTA's local.inp_buffer, ...). TVM's Stage.set_scope; cache_read /
// cache_write take the same word as a last argument.
#include "codegen/schedule/memory_scope.h"
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {
namespace {

constexpr ArgSpec kArgs[] = {{ArgKind::kStage}, kScopeArg};

Status check(const ScheduleState& state, const PrimitiveArgs& args) {
  return check_scope_placeable(stage_of(state, args[0]), scope_of_word(args[1].value));
}

PrimitiveResult apply(ScheduleState& state, const PrimitiveArgs& args) {
  StageSchedule& s = stage_of(state, args[0]);
  const MemoryScope scope = scope_of_word(args[1].value);
  if (s.scope == scope) return ApplyEffect::kNoEffect;
  s.scope = scope;
  return ApplyEffect::kChanged;
}

// The flat space: the GPU's three words (global, shared, local) in `flat`, the
// accelerator's three buffers in `flat_more`.
constexpr int kGpuWords = 3;

Expected<PrimitiveArgs> flat_word(const ScheduleState& state, int stage, int word) {
  if (size_t(stage) >= state.stages().size())
    return invalid_argument("set_scope: the state has " + std::to_string(state.stages().size()) + " stages");
  return PrimitiveArgs{PrimitiveArg::of_stage(stage), PrimitiveArg::of_int(word)};
}

void mask_words(const ScheduleState& state, int stage, std::span<int64_t> row, TargetKind target, int first) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  for (size_t c = 0; c < row.size(); ++c) {
    const MemoryScope scope = scope_of_word(first + int(c));
    if (s.scope != scope && scope_exists_on(scope, target) && check_scope_placeable(s, scope).ok()) row[c] = 1;
  }
}

Expected<PrimitiveArgs> flat(const ScheduleState& state, int stage, int, int choice) {
  return flat_word(state, stage, choice);
}
void mask(const ScheduleState& state, int stage, std::span<int64_t> row, TargetKind target) {
  mask_words(state, stage, row, target, 0);
}
Expected<PrimitiveArgs> flat_buffers(const ScheduleState& state, int stage, int, int choice) {
  return flat_word(state, stage, kGpuWords + choice);
}
void mask_buffers(const ScheduleState& state, int stage, std::span<int64_t> row, TargetKind target) {
  mask_words(state, stage, row, target, kGpuWords);
}

}  // namespace

bool scope_exists_on(MemoryScope scope, TargetKind target) {
  switch (scope) {
    case MemoryScope::kAuto: return true;
    case MemoryScope::kGlobal: return target != TargetKind::kCpu;
    case MemoryScope::kShared:
    case MemoryScope::kLocal: return target == TargetKind::kGpu;
    case MemoryScope::kInpBuffer:
    case MemoryScope::kWgtBuffer:
    case MemoryScope::kAccBuffer: return target == TargetKind::kAccelerator;
  }
  return false;
}

Status check_scope_placeable(const StageSchedule& stage, MemoryScope scope) {
  if (stage.attach == AttachKind::kInline)
    return failed_precondition("stage " + stage.name() + " is inlined: it has no buffer to place; compute_root it first");
  if (stage.is_output && scope != MemoryScope::kGlobal)
    return failed_precondition("stage " + stage.name() + " is an output: it lives in global memory, where the host "
                               "reads it; cache_write it and place the cache instead");
  return Status();
}

extern const PrimitiveDef kSetScopePrimitive = {
    .name = "set_scope",
    .usage = "set_scope(STAGE, global | shared | local | inp_buffer | wgt_buffer | acc_buffer)",
    .summary = "places STAGE's buffer: on a GPU `shared`, one per block filled by its threads together (barriers "
               "added), `local`, private to each thread, `global`, allocated by the host; on the accelerator its "
               "on-chip input, weight or accumulator buffer",
    .rejects = "STAGE inlined; an output in a scope other than global. CPU lowering rejects a scope, GPU lowering "
               "the accelerator's",
    .args = kArgs,
    .check = check,
    .apply = apply,
    .flat = {ActionSlots::kStage, kGpuWords, flat, mask},
    .flat_more = {ActionSlots::kStage, kNumScopes - kGpuWords, flat_buffers, mask_buffers},
    .targets = uint8_t(TargetKind::kGpu) | uint8_t(TargetKind::kAccelerator),
};

}  // namespace tensorgym
