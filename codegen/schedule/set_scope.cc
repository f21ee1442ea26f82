// set_scope(STAGE, global | shared | local): where STAGE's buffer lives on a GPU. A
// `shared` buffer is one per block, filled by the block's threads together (lowering
// adds the barriers); a `local` one is private to each thread (registers). TVM's
// Stage.set_scope; cache_read / cache_write take the same word as a last argument.
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

Expected<PrimitiveArgs> flat(const ScheduleState& state, int stage, int, int choice) {
  if (size_t(stage) >= state.stages().size())
    return invalid_argument("set_scope: the state has " + std::to_string(state.stages().size()) + " stages");
  return PrimitiveArgs{PrimitiveArg::of_stage(stage), PrimitiveArg::of_int(choice)};
}

void mask(const ScheduleState& state, int stage, std::span<int64_t> row) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  for (int w = 0; w < kNumScopes; ++w)
    if (s.scope != scope_of_word(w) && check_scope_placeable(s, scope_of_word(w)).ok()) row[size_t(w)] = 1;
}

}  // namespace

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
    .usage = "set_scope(STAGE, global | shared | local)",
    .summary = "places STAGE's buffer in GPU memory: `shared`, one per block filled by its threads together "
               "(barriers added); `local`, private to each thread; `global`, allocated by the host",
    .rejects = "STAGE inlined; an output in a scope other than global. CPU lowering rejects a scope",
    .args = kArgs,
    .check = check,
    .apply = apply,
    .flat = {ActionSlots::kStage, kNumScopes, flat, mask},
    .gpu_only = true,
};

}  // namespace tensorgym
