// parallel(STAGE.loop): iterations of a spatial loop run on the thread pool.
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {

PrimitiveResult apply_parallel(ScheduleState& state, const PrimitiveArgs& args) {
  TG_ASSIGN_OR_RETURN(LoopRef ref, parse_loop(state, args[0]));
  if (ref.get().is_reduce)
    return invalid_argument("cannot parallelize reduction loop " + ref.text() +
                            " (iterations would race on the same output; rfactor it first)");
  return set_loop_kind(ref, ForKind::kParallel);
}

}  // namespace tensorgym
