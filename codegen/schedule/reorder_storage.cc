// reorder_storage(STAGE, ax_a, ax_b, ...): STAGE's buffer stores its dimensions in the
// given order, outermost first (Halide's reorder_storage). With cache_read this packs
// a tensor in a new layout, e.g. convolution weights with output channels innermost
// so a vectorized output-channel loop reads them contiguously. Loops and values are
// unchanged; only addresses move.
#include <algorithm>

#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"
#include "support/quote.h"

namespace tensorgym {

PrimitiveResult apply_reorder_storage(ScheduleState& state, const PrimitiveArgs& args) {
  TG_ASSIGN_OR_RETURN(StageSchedule * stage, parse_stage(state, args[0]));
  size_t rank = stage->def->axes.size();
  if (args.size() - 1 != rank)
    return invalid_argument("reorder_storage lists every dimension of " + stage->name() + " once (" +
                            std::to_string(rank) + "), got " + std::to_string(args.size() - 1));
  std::vector<int> order;
  for (size_t i = 1; i < args.size(); ++i) {
    int axis = -1;
    for (size_t a = 0; a < rank; ++a)
      if (stage->def->axes[a].name == args[i]) axis = int(a);
    if (axis < 0) return not_found("stage " + stage->name() + " has no dimension " + quote_text(args[i]));
    if (std::find(order.begin(), order.end(), axis) != order.end())
      return invalid_argument("dimension " + args[i] + " is listed twice");
    order.push_back(axis);
  }
  if (stage->is_output)
    return failed_precondition("stage " + stage->name() + " is an output; its layout is fixed by the caller");
  if (stage->attach == AttachKind::kInline) return failed_precondition("stage " + stage->name() + " is inlined");
  bool identity = true;
  for (size_t i = 0; i < order.size(); ++i) identity &= order[i] == int(i);
  std::vector<int> next = identity ? std::vector<int>{} : order;
  if (next == stage->storage_order) return ApplyEffect::kNoEffect;
  stage->storage_order = std::move(next);
  return ApplyEffect::kChanged;
}

}  // namespace tensorgym
