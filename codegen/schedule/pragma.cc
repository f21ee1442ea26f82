// pragma(STAGE.loop, auto_unroll_max_step, n): lowering unrolls the loops nested in
// this one whose total number of iterations is at most n (TVM's auto-unroll).
// pragma(STAGE.loop, dma_copy): on the accelerator, the loops from `loop` inward are one
// DMA transfer (a LOAD, zero-padding the block where the stage pads; VTA's dma_copy).
#include <fmt/format.h>

#include <array>

#include "codegen/schedule/action_helpers.h"
#include "codegen/schedule/loop_marks.h"
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {
namespace {

constexpr std::string_view kPragmas[] = {"auto_unroll_max_step", "dma_copy"};
constexpr int kAutoUnroll = 0, kDmaCopy = 1;
constexpr ArgSpec kArgs[] = {{ArgKind::kLoop},
                             {ArgKind::kWord, "pragma", 0, 0, kPragmas, "auto_unroll_max_step, dma_copy"},
                             {ArgKind::kInt, "auto_unroll_max_step", 0, 4096, {}, {}, /*optional=*/true}};
// The flat space's choices of n, then dma_copy.
constexpr std::array<int64_t, 3> kSteps = {16, 64, 512};

// A copy of one tensor, padded or not: T[...] or select(cond, T[...], constant).
bool is_copy(const StageDef& def) {
  if (def.is_reduction()) return false;
  if (def.body.as<Load>() != nullptr) return true;
  const Select* select = def.body.as<Select>();
  return select != nullptr && select->true_value.as<Load>() != nullptr &&
         (select->false_value.as<IntImm>() != nullptr || select->false_value.as<FloatImm>() != nullptr);
}

Status check_dma_copy(const ScheduleState& state, const LoopRef& ref) {
  const StageSchedule& s = *ref.stage;
  if (!is_copy(*s.def))
    return failed_precondition(fmt::format("stage {} is not a copy of one tensor (T[...] or select(c, T[...], 0)): a "
                                           "DMA transfer only moves data",
                                           s.name()));
  const int p = s.leaf_position(ref.loop);
  for (size_t q = size_t(p); q < s.leaf.size(); ++q) {
    const Loop& l = s.loops[size_t(s.leaf[q])];
    if (q > size_t(p) && (l.kind != ForKind::kSerial || !l.thread_tag.empty() || !l.pragmas.empty()))
      return failed_precondition(fmt::format("loop {}.{} inside the transfer is annotated", s.name(), l.name));
    if (has_attached_at(state, s, s.leaf[q]))
      return failed_precondition(fmt::format("a stage is computed at loop {}.{}, inside the transfer", s.name(), l.name));
  }
  return Status();
}

Status check(const ScheduleState& state, const PrimitiveArgs& args) {
  const bool has_value = args.size() > 2;
  if (args[1].value == kAutoUnroll) {
    if (!has_value) return invalid_argument("pragma auto_unroll_max_step takes its n: pragma(S.l, auto_unroll_max_step, 64)");
    return Status();
  }
  if (has_value) return invalid_argument("pragma dma_copy takes no value: pragma(S.l, dma_copy)");
  return check_dma_copy(state, loop_of(state, args[0]));
}

PrimitiveResult apply(ScheduleState& state, const PrimitiveArgs& args) {
  Loop& loop = mutable_loop(state, args[0]);
  const std::string_view key = kPragmas[size_t(args[1].value)];
  const int64_t steps = args.size() > 2 ? args[2].value : 1;
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

// Unrolling means nothing to the accelerator's instructions: not offered there.
void mask(const ScheduleState& state, int stage, std::span<int64_t> row, TargetKind target) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  if (s.attach == AttachKind::kInline || target == TargetKind::kAccelerator) return;
  for (size_t p = 0; p < s.leaf.size() && p < size_t(kActionMaxLoops); ++p) {
    const Loop& l = s.loops[size_t(s.leaf[p])];
    for (size_t u = 0; u < kSteps.size(); ++u) {
      bool same = false;
      for (const auto& [k, v] : l.pragmas) same |= k == kPragmas[kAutoUnroll] && v == kSteps[u];
      if (!same) row[p * kSteps.size() + u] = 1;
    }
  }
}

// dma_copy's block (flat_more): one entry per leaf loop, offered on the accelerator.
Expected<PrimitiveArgs> flat_dma_copy(const ScheduleState& state, int stage, int slot, int) {
  TG_ASSIGN_OR_RETURN(int loop, action_leaf(state.stages()[size_t(stage)], "pragma", slot));
  return PrimitiveArgs{PrimitiveArg::of_loop(stage, loop), PrimitiveArg::of_int(kDmaCopy)};
}

void mask_dma_copy(const ScheduleState& state, int stage, std::span<int64_t> row, TargetKind target) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  if (s.attach == AttachKind::kInline || target != TargetKind::kAccelerator) return;
  for (size_t p = 0; p < s.leaf.size() && p < size_t(kActionMaxLoops); ++p)
    if (!is_dma_copy(s.loops[size_t(s.leaf[p])]) && check_dma_copy(state, LoopRef{&s, s.leaf[p]}).ok()) row[p] = 1;
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

bool is_dma_copy(const Loop& loop) {
  for (const auto& [key, value] : loop.pragmas)
    if (key == kPragmas[kDmaCopy]) return true;
  return false;
}

extern const PrimitiveDef kPragmaPrimitive = {
    .name = "pragma",
    .usage = "pragma(STAGE.loop, auto_unroll_max_step, n) | pragma(STAGE.loop, dma_copy)",
    .summary = "`auto_unroll_max_step`: loops inside `loop` whose whole execution is at most `n` statement "
               "instances are unrolled; `dma_copy`: on the accelerator the loops from `loop` inward are one DMA "
               "transfer",
    .rejects = "unknown pragma; n missing or outside 0..4096; dma_copy with a value, on a stage that is not a copy "
               "of one tensor (padded or not), or over annotated loops or a stage computed inside. CPU and GPU "
               "lowering reject dma_copy",
    .args = kArgs,
    .check = check,
    .apply = apply,
    .flat = {ActionSlots::kLoops, int(kSteps.size()), flat, mask},
    .flat_more = {ActionSlots::kLoops, 1, flat_dma_copy, mask_dma_copy},
    .cursor = {kCursorNames, cursor, uint8_t(TargetKind::kCpu) | uint8_t(TargetKind::kGpu)},
    .random = {3, propose},
};

}  // namespace tensorgym
