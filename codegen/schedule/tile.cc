// tile(STAGE.x, STAGE.y, fx, fy, xo, yo, xi, yi): sugar for split x, split y and
// reorder(xo, yo, xi, yi), the 2-D blocking every GEMM schedule starts with.
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {

PrimitiveResult apply_tile(ScheduleState& state, const PrimitiveArgs& args) {
  TG_ASSIGN_OR_RETURN(LoopRef x, parse_loop(state, args[0]));
  TG_ASSIGN_OR_RETURN(LoopRef y, parse_loop(state, args[1]));
  if (x.stage != y.stage) return invalid_argument("tile needs two loops of the same stage");
  if (x.loop == y.loop) return invalid_argument("tile needs two different loops");
  const std::string stage = x.stage->name();
  TG_ASSIGN_OR_RETURN(ApplyEffect e1, apply_split(state, {args[0], args[2], args[4], args[6]}));
  TG_ASSIGN_OR_RETURN(ApplyEffect e2, apply_split(state, {args[1], args[3], args[5], args[7]}));
  (void)e1;
  (void)e2;
  TG_ASSIGN_OR_RETURN(ApplyEffect e3, apply_reorder(state, {stage, args[4], args[5], args[6], args[7]}));
  (void)e3;
  return ApplyEffect::kChanged;
}

}  // namespace tensorgym
