// fuse(STAGE.outer, STAGE.inner, fused): two adjacent leaf loops (outer directly
// around inner) become one loop over outer_extent * inner_extent iterations.
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {

PrimitiveResult apply_fuse(ScheduleState& state, const PrimitiveArgs& args) {
  TG_ASSIGN_OR_RETURN(LoopRef outer, parse_loop(state, args[0]));
  TG_ASSIGN_OR_RETURN(LoopRef inner, parse_loop(state, args[1]));
  if (outer.stage != inner.stage) return invalid_argument("fuse needs two loops of the same stage");
  StageSchedule& stage = *outer.stage;
  TG_RETURN_IF_ERROR(check_new_loop_name(stage, args[2]));
  if (outer.loop == inner.loop) return invalid_argument("cannot fuse a loop with itself");
  if (stage.leaf_position(inner.loop) != stage.leaf_position(outer.loop) + 1)
    return invalid_argument("fuse needs adjacent loops, " + outer.text() + " directly around " + inner.text() +
                            " (leaf order: " + leaf_names(stage) + ")");
  for (const LoopRef* r : {&outer, &inner}) {
    const Loop& l = r->get();
    if (l.kind != ForKind::kSerial || !l.thread_tag.empty() || !l.pragmas.empty())
      return failed_precondition("loop " + r->text() + " is annotated; fuse before annotating");
    TG_RETURN_IF_ERROR(check_nothing_attached_at(state, *r, r->loop, "fuse"));
  }
  if (outer.get().is_reduce != inner.get().is_reduce)
    return invalid_argument("cannot fuse a reduction loop with a spatial loop (" + outer.text() + ", " +
                            inner.text() + ")");
  int64_t extent = outer.get().extent * inner.get().extent;
  if (extent > kMaxLoopExtent)
    return out_of_range("fused loop would have " + std::to_string(extent) + " iterations, over the limit of " +
                        std::to_string(kMaxLoopExtent));
  int fused = int(stage.loops.size());
  stage.loops.push_back(Loop{args[2], extent, outer.get().is_reduce});
  LoopRelation rel{LoopRelation::kFuse};
  rel.outer = outer.loop;
  rel.inner = inner.loop;
  rel.fused = fused;
  stage.relations.push_back(rel);
  int pos = stage.leaf_position(outer.loop);
  stage.leaf[size_t(pos)] = fused;
  stage.leaf.erase(stage.leaf.begin() + pos + 1);
  return ApplyEffect::kChanged;
}

}  // namespace tensorgym
