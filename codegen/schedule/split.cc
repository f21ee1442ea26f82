// split(STAGE.loop, factor, outer, inner): loop -> outer * factor + inner. A factor
// that does not divide the extent is legal; lowering guards the tail.
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {

PrimitiveResult apply_split(ScheduleState& state, const PrimitiveArgs& args) {
  TG_ASSIGN_OR_RETURN(LoopRef ref, parse_loop(state, args[0]));
  TG_ASSIGN_OR_RETURN(int64_t factor, parse_int(args[1], "split factor", 1, kMaxLoopExtent));
  StageSchedule& stage = *ref.stage;
  TG_RETURN_IF_ERROR(check_new_loop_name(stage, args[2]));
  TG_RETURN_IF_ERROR(check_new_loop_name(stage, args[3]));
  if (args[2] == args[3]) return invalid_argument("outer and inner loops need different names");
  const Loop& loop = ref.get();
  if (loop.kind != ForKind::kSerial || !loop.thread_tag.empty() || !loop.pragmas.empty())
    return failed_precondition("loop " + ref.text() + " is annotated (" +
                               std::string(loop.thread_tag.empty() ? for_kind_name(loop.kind) : loop.thread_tag.c_str()) +
                               "); split it before annotating");
  TG_RETURN_IF_ERROR(check_nothing_attached_at(state, ref, ref.loop, "split"));

  int64_t extent = loop.extent;
  Loop outer{args[2], (extent + factor - 1) / factor, loop.is_reduce};
  Loop inner{args[3], std::min(factor, extent), loop.is_reduce};
  int parent = ref.loop;
  int outer_id = int(stage.loops.size());
  stage.loops.reserve(stage.loops.size() + 2);
  stage.loops.push_back(std::move(outer));
  stage.loops.push_back(std::move(inner));
  LoopRelation rel{LoopRelation::kSplit};
  rel.parent = parent;
  rel.outer = outer_id;
  rel.inner = outer_id + 1;
  rel.factor = factor;
  stage.relations.push_back(rel);
  int pos = stage.leaf_position(parent);
  stage.leaf[size_t(pos)] = outer_id;
  stage.leaf.insert(stage.leaf.begin() + pos + 1, outer_id + 1);
  return ApplyEffect::kChanged;
}

}  // namespace tensorgym
