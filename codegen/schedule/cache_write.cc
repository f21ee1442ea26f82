// cache_write(STAGE, NAME[, SCOPE]): NAME computes STAGE's values (with STAGE's loop names and
// its reduction) into its own buffer, and STAGE becomes a copy of NAME. Computed at a
// loop of STAGE, NAME is the local accumulator of a register tile (on a GPU, `local`:
// each thread's own). STAGE keeps the
// schedule of its spatial loops; its reduction loops move to NAME.
#include "codegen/schedule/action_helpers.h"
#include "codegen/schedule/memory_scope.h"
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {
namespace {

constexpr ArgSpec kArgs[] = {{ArgKind::kStage}, {ArgKind::kNewTensor}, kOptionalScopeArg};

Status check(const ScheduleState& state, const PrimitiveArgs& args) {
  const StageSchedule& stage = stage_of(state, args[0]);
  TG_RETURN_IF_ERROR(check_new_tensor_name(state, args[1].name));
  if (stage.attach == AttachKind::kInline)
    return failed_precondition("stage " + stage.name() + " is inlined; compute_root it first");
  std::vector<std::string> attached = state.attached_at(stage.name());
  if (!attached.empty())
    return failed_precondition("stage " + attached[0] + " is computed at a loop of " + stage.name() +
                               "; cache_write moves what it reads, so compute_root it first");
  return Status();
}

PrimitiveResult apply(ScheduleState& state, const PrimitiveArgs& args) {
  StageSchedule* stage = &stage_of(state, args[0]);
  StageDef cache = stage->def;
  cache.name = args[1].name;
  std::vector<Expr> indices;
  for (const IterVar& v : stage->def->axes) indices.push_back(make_var(v.name));
  StageDef& def = stage->def.mutate();
  def.body = Load::make(def.dtype, args[1].name, indices);
  def.reduce = ReduceKind::kNone;
  stage->drop_reduce_loops();
  StageSchedule cached = make_stage_schedule(std::move(cache), StageOrigin::kCacheWrite);
  if (args.size() > 2) cached.scope = scope_of_word(args[2].value);
  state.stages().insert(state.stages().begin() + args[0].stage, std::move(cached));
  return ApplyEffect::kChanged;
}

PrimitiveArgs local_cache(const ScheduleState& state, int stage) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  return {PrimitiveArg::of_stage(stage), PrimitiveArg::of_name(fresh_tensor_name(state, s.name() + "_local"))};
}

Expected<PrimitiveArgs> flat(const ScheduleState& state, int stage, int, int) { return local_cache(state, stage); }

void mask(const ScheduleState& state, int stage, std::span<int64_t> row, TargetKind) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  if (s.attach != AttachKind::kInline && state.attached_at(s.name()).empty()) row[0] = 1;
}

constexpr std::string_view kCursorNames[] = {"cache_write"};

Expected<PrimitiveArgs> cursor(const ScheduleState& state, int stage, int, int) { return local_cache(state, stage); }

PrimitiveArgs propose(const ScheduleState& state, int stage, Rng&, const std::string& id, int64_t) {
  return {PrimitiveArg::of_stage(stage), PrimitiveArg::of_name(state.stages()[size_t(stage)].name() + "_w" + id)};
}

}  // namespace

extern const PrimitiveDef kCacheWritePrimitive = {
    .name = "cache_write",
    .usage = "cache_write(STAGE, NAME[, global | shared | local])",
    .summary = "NAME computes STAGE's values, with STAGE's loop names and reduction; STAGE becomes a copy of NAME "
               "and keeps the schedule of its spatial loops; its reduction loops move to NAME. The last argument places NAME in GPU "
               "memory (set_scope)",
    .rejects = "STAGE inlined; a stage is computed at a loop of STAGE",
    .args = kArgs,
    .check = check,
    .apply = apply,
    .flat = {ActionSlots::kStage, 1, flat, mask},
    .cursor = {kCursorNames, cursor},
    .random = {5, propose},
};

}  // namespace tensorgym
