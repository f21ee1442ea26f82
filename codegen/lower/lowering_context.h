// What the lowering passes share: the stages that get buffers, their bodies with
// inlined stages substituted, and the region bounds inference gives each of them.
// Internal to codegen/lower.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/ir/interval.h"
#include "codegen/ir/stmt.h"
#include "codegen/lower/lower.h"
#include "codegen/schedule/loop_geometry.h"
#include "codegen/schedule/schedule_state.h"

namespace tensorgym {

// The part of a stage's domain it computes: per spatial axis a minimum (an expression
// of enclosing loop variables when computed inside a consumer's loop) and a constant
// extent. Reduction axes always cover their whole range.
struct Region {
  std::vector<Expr> min;        // a constant, or the variable min_var() naming it
  std::vector<Expr> min_value;  // what that variable is bound to (undefined for constants)
  std::vector<int64_t> extent;
};

struct LoweringContext {
  explicit LoweringContext(const ScheduleState& s) : state(s) {}

  const ScheduleState& state;
  std::vector<const StageSchedule*> stages;      // stages with buffers, producers first
  std::unordered_map<std::string, Expr> bodies;  // their bodies, inlined stages substituted
  std::unordered_map<std::string, Region> regions;
  std::unordered_map<std::string, LoopGeometry> geometry;  // loops over each region
  // Ranges of every loop variable and region-minimum variable, for simplification.
  RangeScope ranges;
  // Loop variable name -> auto_unroll_max_step of the loop carrying that pragma.
  std::unordered_map<std::string, int64_t> auto_unroll;

  // The variable of a stage's loop in the lowered nest: "C.io".
  static std::string loop_var(const StageSchedule& s, const Loop& l) { return s.name() + "." + l.name; }
  // The variable holding a region's minimum along an axis: "P.h.min".
  static std::string min_var(const StageSchedule& s, size_t axis) { return s.name() + "." + s.def.axes[axis].name + ".min"; }
};

// The passes, in pipeline order (see lower.cc).
Status check_target_support(const ScheduleState& state, const LowerOptions& options);
void inline_stages(LoweringContext& ctx);
Status infer_bounds(LoweringContext& ctx);
Stmt build_loop_nest(LoweringContext& ctx);
Stmt mark_auto_unroll(const Stmt& s, const LoweringContext& ctx);
Stmt storage_flatten(const Stmt& s, const LoweringContext& ctx, const std::vector<BufferArg>& args);

}  // namespace tensorgym
