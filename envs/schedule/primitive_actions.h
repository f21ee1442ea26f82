// The `primitives` action space: one flat Discrete space over (primitive, stage, loop,
// choice) with fixed upper bounds, so an agent sees the same space on every benchmark.
// Its blocks are the registered primitives that have a flat form (FlatActions), in
// the order of the primitive table. Stages and loops are numbered in the current state
// (stages in schedule order, loops in leaf order); new loop and stage names are made
// deterministically. Every action has a canonical text form: the primitive it applies.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_text.h"
#include "codegen/schedule/schedule_state.h"
#include "spaces/space.h"

namespace tensorgym {

class PrimitiveActions {
 public:
  static constexpr int kMaxStages = kActionMaxStages;
  static constexpr int kMaxLoops = kActionMaxLoops;
  static constexpr int kMaxReads = kActionMaxReads;

  static Space space();
  static int64_t size();

  // The primitive `index` stands for in `state`, bound to it; INVALID_ARGUMENT when
  // the index is out of range or names a stage or loop the state does not have.
  static Expected<BoundPrimitive> decode(const ScheduleState& state, int64_t index);

  // 1 where the action passes cheap checks mirroring the primitives' preconditions
  // (it may still be rejected when applied, e.g. by a whole-state invariant), among the
  // primitives and choices of the episode's kind of target (bind on GPUs, parallel on
  // CPUs, ...).
  static std::vector<int64_t> mask(const ScheduleState& state, TargetKind target = TargetKind::kCpu);

  // The human description of an index independent of state, e.g.
  // "split(stage 0, loop 2, choice 3)".
  static std::string describe(int64_t index);
};

}  // namespace tensorgym
