// The `primitives` action space: one flat Discrete space over (primitive, stage, loop,
// choice) with fixed upper bounds, so an agent sees the same space on every benchmark.
// Stages and loops are numbered in the current state (stages in schedule order, loops
// in leaf order); new loop and stage names are made deterministically. Every action has
// a canonical text form: the primitive it applies.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/schedule/schedule_state.h"
#include "codegen/schedule/trace.h"
#include "spaces/space.h"

namespace tensorgym {

class PrimitiveActions {
 public:
  static constexpr int kMaxStages = 8;
  static constexpr int kMaxLoops = 12;
  static constexpr int kMaxReads = 4;
  // Split factors: 2, 4, 8, 16, 32, 64, then three divisor choices of the loop's extent
  // (its proper divisors at the 1/4, 1/2 and 3/4 quantiles).
  static constexpr int kFactorChoices = 9;
  static constexpr int kUnrollSteps = 3;  // auto_unroll_max_step 16, 64, 512

  static Space space();
  static int64_t size();

  // The primitive `index` stands for in `state`; INVALID_ARGUMENT when the index is
  // out of range or names a stage or loop the state does not have.
  static Expected<Primitive> decode(const ScheduleState& state, int64_t index);

  // 1 where the action passes cheap checks mirroring the primitives' preconditions
  // (it may still be rejected when applied, e.g. by a whole-state invariant).
  static std::vector<int64_t> mask(const ScheduleState& state);

  // The human description of an index independent of state, e.g.
  // "split(stage 0, loop 2, factor 16)".
  static std::string describe(int64_t index);
};

}  // namespace tensorgym
