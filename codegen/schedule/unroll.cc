// unroll(STAGE.loop): the loop's body is replicated once per iteration.
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {

PrimitiveResult apply_unroll(ScheduleState& state, const PrimitiveArgs& args) {
  TG_ASSIGN_OR_RETURN(LoopRef ref, parse_loop(state, args[0]));
  // The extent is checked by validate_state, as bounds inference sizes the stage.
  return set_loop_kind(ref, ForKind::kUnrolled);
}

}  // namespace tensorgym
