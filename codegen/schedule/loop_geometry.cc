#include "codegen/schedule/loop_geometry.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace tensorgym {

LoopGeometry loop_geometry(const StageSchedule& stage, std::vector<int64_t> root_extents, std::vector<Expr> values) {
  LoopGeometry g;
  size_t n = stage.loops.size();
  assert(root_extents.size() == size_t(stage.num_root_loops()) && values.size() == n);
  g.extents = std::move(root_extents);
  g.extents.resize(n, 0);
  g.values = std::move(values);

  // Extents flow from the roots through the relations in creation order.
  for (const LoopRelation& r : stage.relations) {
    if (r.kind == LoopRelation::kSplit) {
      int64_t e = g.extents[size_t(r.parent)];
      g.extents[size_t(r.inner)] = std::min(r.factor, e);
      g.extents[size_t(r.outer)] = (e + r.factor - 1) / r.factor;
    } else {
      g.extents[size_t(r.fused)] = g.extents[size_t(r.outer)] * g.extents[size_t(r.inner)];
    }
  }

  // Values flow from the leaves back through the relations in reverse order.
  for (auto it = stage.relations.rbegin(); it != stage.relations.rend(); ++it) {
    const LoopRelation& r = *it;
    if (r.kind == LoopRelation::kSplit) {
      Expr outer = g.values[size_t(r.outer)], inner = g.values[size_t(r.inner)];
      g.values[size_t(r.parent)] = Add::make(Mul::make(outer, make_int(r.factor)), inner);
      if (g.extents[size_t(r.outer)] * g.extents[size_t(r.inner)] > g.extents[size_t(r.parent)])
        g.guards.push_back({r.parent, LT::make(g.values[size_t(r.parent)], make_int(g.extents[size_t(r.parent)]))});
    } else {
      Expr fused = g.values[size_t(r.fused)];
      Expr inner_extent = make_int(g.extents[size_t(r.inner)]);
      g.values[size_t(r.outer)] = Div::make(fused, inner_extent);
      g.values[size_t(r.inner)] = Mod::make(fused, inner_extent);
    }
  }
  return g;
}

}  // namespace tensorgym
