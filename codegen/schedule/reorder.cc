// reorder(STAGE, l1, l2, ...): the listed leaf loops take the positions they occupy
// together, in the order given; other loops stay where they are (TVM semantics).
#include <algorithm>

#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {

PrimitiveResult apply_reorder(ScheduleState& state, const PrimitiveArgs& args) {
  TG_ASSIGN_OR_RETURN(StageSchedule * stage, parse_stage(state, args[0]));
  std::vector<int> loops;
  std::vector<int> positions;
  for (size_t i = 1; i < args.size(); ++i) {
    TG_ASSIGN_OR_RETURN(int loop, parse_leaf_of(*stage, args[i]));
    if (std::find(loops.begin(), loops.end(), loop) != loops.end())
      return invalid_argument("loop " + args[i] + " is listed twice");
    loops.push_back(loop);
    positions.push_back(stage->leaf_position(loop));
  }
  std::sort(positions.begin(), positions.end());
  std::vector<int> leaf = stage->leaf;
  for (size_t i = 0; i < loops.size(); ++i) leaf[size_t(positions[i])] = loops[i];
  if (leaf == stage->leaf) return ApplyEffect::kNoEffect;
  stage->leaf = std::move(leaf);
  return ApplyEffect::kChanged;
}

}  // namespace tensorgym
