// compute_at(STAGE, CONSUMER.loop): STAGE is computed inside that loop, over just the
// region its readers use while the loop's inner iterations run (bounds inference
// sizes its buffer). Every reader of STAGE must run inside that loop: the consumer
// itself, or stages computed at that loop or inside it.
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {

PrimitiveResult apply_compute_at(ScheduleState& state, const PrimitiveArgs& args) {
  TG_ASSIGN_OR_RETURN(StageSchedule * stage, parse_stage(state, args[0]));
  TG_ASSIGN_OR_RETURN(LoopRef at, parse_loop(state, args[1]));
  if (at.stage == stage) return invalid_argument("a stage cannot be computed at its own loop");
  if (stage->is_output)
    return failed_precondition("stage " + stage->name() + " is an output of the program and is computed at root");
  for (const std::string& r : state.readers_of(stage->name())) {
    if (!state.runs_within(*state.find_stage(r), *at.stage, at.loop))
      return failed_precondition("stage " + r + " reads " + stage->name() + " but does not run inside " + at.text() +
                                 "; every reader of " + stage->name() + " must");
  }
  // Computing a stage inside one of its own readers' producers would be a cycle.
  for (const StageSchedule* s = at.stage; s && s->attach == AttachKind::kAt; s = state.find_stage(s->attach_stage))
    if (s->attach_stage == stage->name())
      return failed_precondition(at.text() + " is itself computed inside " + stage->name());
  if (at.stage->attach == AttachKind::kInline)
    return failed_precondition("stage " + at.stage->name() + " is inlined; it has no loops to compute at");
  if (stage->attach == AttachKind::kAt && stage->attach_stage == at.stage->name() &&
      stage->attach_loop == at.get().name)
    return ApplyEffect::kNoEffect;
  stage->attach = AttachKind::kAt;
  stage->attach_stage = at.stage->name();
  stage->attach_loop = at.get().name;
  return ApplyEffect::kChanged;
}

}  // namespace tensorgym
