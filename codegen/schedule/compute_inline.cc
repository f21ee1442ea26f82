// compute_inline(STAGE): STAGE has no buffer; its readers evaluate its expression
// wherever they read it.
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {

PrimitiveResult apply_compute_inline(ScheduleState& state, const PrimitiveArgs& args) {
  TG_ASSIGN_OR_RETURN(StageSchedule * stage, parse_stage(state, args[0]));
  if (stage->attach == AttachKind::kInline) return ApplyEffect::kNoEffect;
  if (stage->is_output) return failed_precondition("stage " + stage->name() + " is an output and needs its buffer");
  if (stage->def->is_reduction())
    return failed_precondition("stage " + stage->name() + " is a reduction (" + reduce_kind_op(stage->def->reduce) +
                               ") and cannot be inlined");
  std::vector<std::string> attached = state.attached_at(stage->name());
  if (!attached.empty())
    return failed_precondition("stage " + attached[0] + " is computed at a loop of " + stage->name() +
                               "; compute_root it first");
  stage->attach = AttachKind::kInline;
  stage->attach_stage.clear();
  stage->attach_loop.clear();
  return ApplyEffect::kChanged;
}

}  // namespace tensorgym
