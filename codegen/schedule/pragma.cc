// pragma(STAGE.loop, auto_unroll_max_step, n): lowering unrolls the loops nested in
// this one whose total number of iterations is at most n (TVM's auto-unroll).
#include <array>

#include "codegen/schedule/action_helpers.h"
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {
namespace {

constexpr std::string_view kPragmas[] = {"auto_unroll_max_step"};
constexpr ArgSpec kArgs[] = {{ArgKind::kLoop},
                             {ArgKind::kWord, "pragma", 0, 0, kPragmas, "auto_unroll_max_step"},
                             {ArgKind::kInt, "auto_unroll_max_step", 0, 4096}};
// The flat space's choices of n.
constexpr std::array<int64_t, 3> kSteps = {16, 64, 512};

Status check(const ScheduleState&, const PrimitiveArgs&) { return Status(); }

PrimitiveResult apply(ScheduleState& state, const PrimitiveArgs& args) {
  Loop& loop = mutable_loop(state, args[0]);
  const std::string_view key = kPragmas[size_t(args[1].value)];
  const int64_t steps = args[2].value;
  for (auto& [k, value] : loop.pragmas) {
    if (k != key) continue;
    if (value == steps) return ApplyEffect::kNoEffect;
    value = steps;
    return ApplyEffect::kChanged;
  }
  loop.pragmas.emplace_back(std::string(key), steps);
  return ApplyEffect::kChanged;
}

PrimitiveArgs auto_unroll(int stage, int loop, int64_t steps) {
  return {PrimitiveArg::of_loop(stage, loop), PrimitiveArg::of_int(0), PrimitiveArg::of_int(steps)};
}

Expected<PrimitiveArgs> flat(const ScheduleState& state, int stage, int slot, int choice) {
  TG_ASSIGN_OR_RETURN(int loop, action_leaf(state.stages()[size_t(stage)], "pragma", slot));
  return auto_unroll(stage, loop, kSteps[size_t(choice)]);
}

void mask(const ScheduleState& state, int stage, std::span<int64_t> row) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  if (s.attach == AttachKind::kInline) return;
  for (size_t p = 0; p < s.leaf.size() && p < size_t(kActionMaxLoops); ++p) {
    const Loop& l = s.loops[size_t(s.leaf[p])];
    for (size_t u = 0; u < kSteps.size(); ++u) {
      bool same = false;
      for (const auto& [k, v] : l.pragmas) same |= k == kPragmas[0] && v == kSteps[u];
      if (!same) row[p * kSteps.size() + u] = 1;
    }
  }
}

constexpr std::string_view kCursorNames[] = {"auto_unroll_64"};

Expected<PrimitiveArgs> cursor(const ScheduleState& state, int stage, int pos, int) {
  return auto_unroll(stage, state.stages()[size_t(stage)].leaf[size_t(pos)], 64);
}

PrimitiveArgs propose(const ScheduleState& state, int stage, Rng& rng, const std::string&, int64_t) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  int loop = random_leaf(s, rng);
  return auto_unroll(stage, loop, rng.pick(std::vector<int64_t>{4, 16, 64}));
}

}  // namespace

extern const PrimitiveDef kPragmaPrimitive = {
    .name = "pragma",
    .usage = "pragma(STAGE.loop, auto_unroll_max_step, n)",
    .summary = "loops inside `loop` whose whole execution is at most `n` statement instances are unrolled",
    .rejects = "unknown pragma; n outside 0..4096",
    .args = kArgs,
    .check = check,
    .apply = apply,
    .flat = {ActionSlots::kLoops, int(kSteps.size()), flat, mask},
    .cursor = {kCursorNames, cursor},
    .random = {3, propose},
};

}  // namespace tensorgym
