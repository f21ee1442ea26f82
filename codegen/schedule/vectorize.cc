// vectorize(STAGE.loop): a spatial loop runs as vector operations, one lane per
// iteration. Loops inside it stay scalar loops around vector code (TVM semantics), so
// a register tile can keep its reduction loop inside the vectorized loop.
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {

PrimitiveResult apply_vectorize(ScheduleState& state, const PrimitiveArgs& args) {
  TG_ASSIGN_OR_RETURN(LoopRef ref, parse_loop(state, args[0]));
  const StageSchedule& stage = *ref.stage;
  if (ref.get().is_reduce)
    return invalid_argument("cannot vectorize reduction loop " + ref.text() +
                            " (vectorize a spatial loop, or rfactor the reduction first)");
  // The lane count is checked by validate_state, on the extent the loop has once
  // bounds inference sizes its stage.
  for (size_t p = size_t(stage.leaf_position(ref.loop)); p < stage.leaf.size(); ++p) {
    int inner = stage.leaf[p];
    TG_RETURN_IF_ERROR(check_nothing_attached_at(state, ref, inner, "vectorize"));
    const Loop& l = stage.loops[size_t(inner)];
    if (inner != ref.loop && (l.kind == ForKind::kParallel || l.kind == ForKind::kVectorized))
      return failed_precondition("cannot vectorize " + ref.text() + " around " + for_kind_name(l.kind) + " loop " +
                                 stage.name() + "." + l.name);
  }
  return set_loop_kind(ref, ForKind::kVectorized);
}

}  // namespace tensorgym
