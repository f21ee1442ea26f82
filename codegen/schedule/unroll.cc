// unroll(STAGE.loop): the loop's body is replicated once per iteration.
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {

PrimitiveResult apply_unroll(ScheduleState& state, const PrimitiveArgs& args) {
  TG_ASSIGN_OR_RETURN(LoopRef ref, parse_loop(state, args[0]));
  if (ref.get().extent > kMaxUnrollExtent)
    return out_of_range("cannot unroll " + ref.text() + " with " + std::to_string(ref.get().extent) +
                        " iterations; at most " + std::to_string(kMaxUnrollExtent) + " (split it first)");
  return set_loop_kind(ref, ForKind::kUnrolled);
}

}  // namespace tensorgym
