// compute_root(STAGE): STAGE is computed once, over its whole domain, before its
// readers (the default; undoes compute_at and compute_inline).
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {

PrimitiveResult apply_compute_root(ScheduleState& state, const PrimitiveArgs& args) {
  TG_ASSIGN_OR_RETURN(StageSchedule * stage, parse_stage(state, args[0]));
  if (stage->attach == AttachKind::kRoot) return ApplyEffect::kNoEffect;
  stage->attach = AttachKind::kRoot;
  stage->attach_stage.clear();
  stage->attach_loop.clear();
  return ApplyEffect::kChanged;
}

}  // namespace tensorgym
