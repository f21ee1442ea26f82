// From a stage's loop relations to concrete loops: the extent of every loop for given
// root extents, the value of every loop in terms of the leaf loop variables, and the
// tail guards that non-dividing splits need. Lowering and rfactor both use it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "codegen/ir/expr.h"
#include "codegen/schedule/schedule_state.h"

namespace tensorgym {

struct LoopGeometry {
  std::vector<int64_t> extents;  // per loop of the stage
  std::vector<Expr> values;      // per loop: 0-based position, from the leaf loop variables
  // value(parent) < extent(parent) for each split whose outer * inner overshoots.
  struct Guard {
    int parent;  // the split loop
    Expr condition;
  };
  std::vector<Guard> guards;
};

// `root_extents` has one extent per root loop (spatial axes, then reduce axes).
// `var_name` names the variable of each leaf loop.
LoopGeometry loop_geometry(const StageSchedule& stage, const std::vector<int64_t>& root_extents,
                           const std::function<std::string(const Loop&)>& var_name);

}  // namespace tensorgym
