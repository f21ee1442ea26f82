// pragma(STAGE.loop, auto_unroll_max_step, n): lowering unrolls the loops nested in
// this one whose total number of iterations is at most n (TVM's auto-unroll).
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"
#include "support/quote.h"

namespace tensorgym {

PrimitiveResult apply_pragma(ScheduleState& state, const PrimitiveArgs& args) {
  TG_ASSIGN_OR_RETURN(LoopRef ref, parse_loop(state, args[0]));
  if (args[1] != "auto_unroll_max_step")
    return invalid_argument("unknown pragma " + quote_text(args[1]) + " (known: auto_unroll_max_step)");
  TG_ASSIGN_OR_RETURN(int64_t steps, parse_int(args[2], "auto_unroll_max_step", 0, 4096));
  Loop& loop = ref.stage->loops[size_t(ref.loop)];
  for (auto& [key, value] : loop.pragmas) {
    if (key != args[1]) continue;
    if (value == steps) return ApplyEffect::kNoEffect;
    value = steps;
    return ApplyEffect::kChanged;
  }
  loop.pragmas.emplace_back(args[1], steps);
  return ApplyEffect::kChanged;
}

}  // namespace tensorgym
