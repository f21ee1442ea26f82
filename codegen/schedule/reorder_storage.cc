// reorder_storage(STAGE, ax_a, ax_b, ...): STAGE's buffer stores its dimensions in the
// given order, outermost first (Halide's reorder_storage). With cache_read this packs
// a tensor in a new layout, e.g. convolution weights with output channels innermost
// so a vectorized output-channel loop reads them contiguously. Loops and values are
// unchanged; only addresses move.
#include <algorithm>

#include <fmt/format.h>

#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {
namespace {

constexpr ArgSpec kArgs[] = {{ArgKind::kStage}, {ArgKind::kDimOfStage}};

Status check(const ScheduleState& state, const PrimitiveArgs& args) {
  const StageSchedule& stage = stage_of(state, args[0]);
  size_t rank = stage.def->axes.size();
  if (args.size() - 1 != rank)
    return invalid_argument(fmt::format("reorder_storage lists every dimension of {} once ({}), got {}", stage.name(),
                                        rank, args.size() - 1));
  for (size_t i = 1; i < args.size(); ++i)
    for (size_t j = 1; j < i; ++j)
      if (args[j].value == args[i].value)
        return invalid_argument("dimension " + stage.def->axes[size_t(args[i].value)].name + " is listed twice");
  if (stage.is_output)
    return failed_precondition("stage " + stage.name() + " is an output; its layout is fixed by the caller");
  if (stage.attach == AttachKind::kInline) return failed_precondition("stage " + stage.name() + " is inlined");
  return Status();
}

PrimitiveResult apply(ScheduleState& state, const PrimitiveArgs& args) {
  StageSchedule& stage = stage_of(state, args[0]);
  std::vector<int> order;
  bool identity = true;
  for (size_t i = 1; i < args.size(); ++i) {
    order.push_back(int(args[i].value));
    identity &= order.back() == int(i - 1);
  }
  std::vector<int> next = identity ? std::vector<int>{} : order;
  if (next == stage.storage_order) return ApplyEffect::kNoEffect;
  stage.storage_order = std::move(next);
  return ApplyEffect::kChanged;
}

PrimitiveArgs propose(const ScheduleState& state, int stage, Rng& rng, const std::string&, int64_t) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  std::vector<int> axes;
  for (size_t a = 0; a < s.def->axes.size(); ++a) axes.push_back(int(a));
  for (size_t i = axes.size(); i > 1; --i) std::swap(axes[i - 1], axes[size_t(rng.below(i))]);
  PrimitiveArgs args{PrimitiveArg::of_stage(stage)};
  for (int a : axes) {
    PrimitiveArg d = PrimitiveArg::of_stage(stage);
    d.value = a;
    args.push_back(d);
  }
  return args;
}

}  // namespace

extern const PrimitiveDef kReorderStoragePrimitive = {
    .name = "reorder_storage",
    .usage = "reorder_storage(STAGE, axis, axis, ...)",
    .summary = "STAGE's buffer stores its dimensions in the given order, outermost first; loops and values are "
               "unchanged, only addresses move",
    .rejects = "not every dimension listed once; STAGE is an output or inlined",
    .args = kArgs,
    .variadic = true,
    .check = check,
    .apply = apply,
    .random = {3, propose},
};

}  // namespace tensorgym
