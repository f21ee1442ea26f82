// parallel(STAGE.loop): iterations of a spatial loop run on the thread pool.
#include "codegen/schedule/action_helpers.h"
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {
namespace {

constexpr ArgSpec kArgs[] = {{ArgKind::kLoop}};

Status check(const ScheduleState& state, const PrimitiveArgs& args) {
  LoopRef ref = loop_of(state, args[0]);
  if (ref.get().is_reduce)
    return invalid_argument("cannot parallelize reduction loop " + ref.text() +
                            " (iterations would race on the same output; rfactor it first)");
  return check_loop_kind(ref, ForKind::kParallel);
}

PrimitiveResult apply(ScheduleState& state, const PrimitiveArgs& args) {
  return set_loop_kind(mutable_loop(state, args[0]), ForKind::kParallel);
}

Expected<PrimitiveArgs> flat(const ScheduleState& state, int stage, int slot, int) {
  return leaf_loop_at_slot(state, "parallel", stage, slot);
}

void mask(const ScheduleState& state, int stage, std::span<int64_t> row, TargetKind) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  if (s.attach == AttachKind::kInline) return;
  for (size_t p = 0; p < s.leaf.size() && p < size_t(kActionMaxLoops); ++p) {
    const Loop& l = s.loops[size_t(s.leaf[p])];
    if (l.kind == ForKind::kSerial && l.thread_tag.empty() && !l.is_reduce && !inside_vectorized(s, p) && l.extent > 1)
      row[p] = 1;
  }
}

constexpr std::string_view kCursorNames[] = {"parallel"};

PrimitiveArgs propose(const ScheduleState& state, int stage, Rng& rng, const std::string&, int64_t) {
  // Parallel is most useful on the outermost loop.
  return propose_leaf_loop(state, stage, rng, FavouredLoop::kOutermost);
}

}  // namespace

extern const PrimitiveDef kParallelPrimitive = {
    .name = "parallel",
    .usage = "parallel(STAGE.loop)",
    .summary = "iterations run on the thread pool in contiguous chunks (the body is an outlined function whose "
               "range is clamped to the loop's extent, so LLVM unrolls and vectorizes the loops inside as in a "
               "serial nest)",
    .rejects = "reduction loop (they would race)",
    .args = kArgs,
    .check = check,
    .apply = apply,
    .flat = {ActionSlots::kLoops, 1, flat, mask},
    .cursor = {kCursorNames, leaf_loop_at_cursor},
    .random = {8, propose},
    .targets = uint8_t(TargetKind::kCpu),
};

}  // namespace tensorgym
