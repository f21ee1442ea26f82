// cache_write(STAGE, NAME): NAME computes STAGE's values (with STAGE's loop names and
// its reduction) into its own buffer, and STAGE becomes a copy of NAME. Computed at a
// loop of STAGE, NAME is the local accumulator of a register tile. STAGE keeps the
// schedule of its spatial loops; its reduction loops move to NAME.
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {

PrimitiveResult apply_cache_write(ScheduleState& state, const PrimitiveArgs& args) {
  TG_ASSIGN_OR_RETURN(StageSchedule * stage, parse_stage(state, args[0]));
  TG_RETURN_IF_ERROR(check_new_tensor_name(state, args[1]));
  if (stage->attach == AttachKind::kInline)
    return failed_precondition("stage " + stage->name() + " is inlined; compute_root it first");
  std::vector<std::string> attached = state.attached_at(stage->name());
  if (!attached.empty())
    return failed_precondition("stage " + attached[0] + " is computed at a loop of " + stage->name() +
                               "; cache_write moves what it reads, so compute_root it first");

  StageDef cache = stage->def;
  cache.name = args[1];
  std::vector<Expr> indices;
  for (const IterVar& v : stage->def->axes) indices.push_back(make_var(v.name));
  StageDef& def = stage->def.mutate();
  def.body = Load::make(def.dtype, args[1], indices);
  def.reduce = ReduceKind::kNone;
  stage->drop_reduce_loops();

  int at = state.stage_index(stage->name());
  state.stages().insert(state.stages().begin() + at, make_stage_schedule(std::move(cache), StageOrigin::kCacheWrite));
  return ApplyEffect::kChanged;
}

}  // namespace tensorgym
