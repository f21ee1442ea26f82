// storage_align(STAGE.axis, factor, offset): pads the stride of dimension `axis` of
// STAGE's buffer so that stride % factor == offset (TVM semantics), e.g. to keep rows
// of a packed tile off the same cache sets.
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {

PrimitiveResult apply_storage_align(ScheduleState& state, const PrimitiveArgs& args) {
  TG_ASSIGN_OR_RETURN(LoopRef ref, parse_loop(state, args[0], /*must_be_leaf=*/false));
  StageSchedule& stage = *ref.stage;
  int axis = -1;
  for (size_t i = 0; i < stage.def->axes.size(); ++i)
    if (stage.def->axes[i].name == ref.get().name) axis = int(i);
  if (axis < 0) return invalid_argument(ref.text() + " is not a dimension of " + stage.name() + "'s buffer");
  if (axis == stage.innermost_storage_axis())
    return invalid_argument("cannot align the innermost dimension " + ref.text() + " (its stride is 1)");
  if (stage.is_output)
    return failed_precondition("stage " + stage.name() + " is an output; its layout is fixed by the caller");
  if (stage.attach == AttachKind::kInline) return failed_precondition("stage " + stage.name() + " is inlined");
  TG_ASSIGN_OR_RETURN(int64_t factor, parse_int(args[1], "alignment factor", 1, 1 << 20));
  TG_ASSIGN_OR_RETURN(int64_t offset, parse_int(args[2], "alignment offset", 0, factor - 1));
  for (StorageAlign& a : stage.aligns) {
    if (a.axis != axis) continue;
    if (a.factor == factor && a.offset == offset) return ApplyEffect::kNoEffect;
    a.factor = factor;
    a.offset = offset;
    return ApplyEffect::kChanged;
  }
  stage.aligns.push_back(StorageAlign{axis, factor, offset});
  return ApplyEffect::kChanged;
}

}  // namespace tensorgym
