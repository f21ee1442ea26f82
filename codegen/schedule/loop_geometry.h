// From a stage's loop relations to concrete loops: the extent of every loop for given
// root extents, the value of every loop in terms of the leaf loop variables, and the
// tail guards that non-dividing splits need. Lowering and rfactor both use it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "codegen/ir/expr.h"
#include "codegen/schedule/schedule_state.h"

namespace tensorgym {

struct LoopGeometry {
  std::vector<int64_t> extents;  // per loop of the stage
  std::vector<Expr> values;      // per loop: 0-based position, from the leaf loop variables
                                 // (a leaf loop's value is its variable)
  // value(parent) < extent(parent) for each split whose outer * inner overshoots.
  struct Guard {
    int parent;  // the split loop
    Expr condition;
  };
  std::vector<Guard> guards;
};

// `root_extents` has one extent per root loop (spatial axes, then reduce axes).
// `values` has one entry per loop of the stage: the variable of each leaf loop, the
// others undefined. Both become the geometry's vectors, so pass them as rvalues.
LoopGeometry loop_geometry(const StageSchedule& stage, std::vector<int64_t> root_extents, std::vector<Expr> values);

// The same with `var_name(loop)` naming the variable of each leaf loop.
template <class VarName>
LoopGeometry loop_geometry(const StageSchedule& stage, std::vector<int64_t> root_extents, const VarName& var_name) {
  std::vector<Expr> values(stage.loops.size());
  for (int l : stage.leaf) values[size_t(l)] = make_var(var_name(stage.loops[size_t(l)]));
  return loop_geometry(stage, std::move(root_extents), std::move(values));
}

}  // namespace tensorgym
