// tensorize(STAGE.loop, gemm): the loops from `loop` inward become one operation of the
// accelerator's GEMM core (codegen/fpga): BATCH x BLOCK_OUT int32 accumulators, each
// adding BLOCK_IN products of int8 values (VTA's GEMM intrinsic). TVM's
// Stage.tensorize. The shape is checked here; the extents against the design (BATCH,
// BLOCK_OUT, BLOCK_IN) by the fpga target, which alone runs it.
#include <fmt/format.h>

#include "codegen/schedule/action_helpers.h"
#include "codegen/schedule/loop_marks.h"
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {
namespace {

constexpr std::string_view kIntrinsics[] = {"gemm"};
constexpr ArgSpec kArgs[] = {{ArgKind::kLoop}, {ArgKind::kWord, "intrinsic", 0, 0, kIntrinsics, "gemm"}};
// Where the mark lives: a pragma of the loop, as the other loop annotations.
constexpr std::string_view kMark = "tensorize";

// An int8 tensor read cast to int32: one operand of the core's multiply.
bool is_widened_int8_read(const ScheduleState& state, const Expr& e) {
  const Cast* cast = e.as<Cast>();
  if (cast == nullptr || cast->type != DataType::i32()) return false;
  const Load* load = cast->value.as<Load>();
  return load != nullptr && state.dtype_of(load->name) == DataType::i8();
}

// Why the loops from leaf position `p` of `s` are not the core's shape, or OK.
Status check_shape(const ScheduleState& state, const StageSchedule& s, size_t p, const std::string& at) {
  const StageDef& def = *s.def;
  if (def.reduce != ReduceKind::kSum || def.dtype != DataType::i32())
    return failed_precondition(fmt::format("stage {} is not an int32 sum (+=): the GEMM core accumulates int8 products "
                                           "in int32", s.name()));
  const Mul* mul = def.body.as<Mul>();
  if (mul == nullptr || !is_widened_int8_read(state, mul->a) || !is_widened_int8_read(state, mul->b))
    return failed_precondition(fmt::format("stage {} does not sum i32(x) * i32(w) of two i8 tensors, the GEMM core's "
                                           "product", s.name()));
  if (s.leaf.size() - p != 3)
    return failed_precondition(fmt::format("{} has {} loops from it inward; the GEMM core takes three: batch, output "
                                           "channel, then the reduced input channel innermost",
                                           at, s.leaf.size() - p));
  for (size_t q = p; q < s.leaf.size(); ++q) {
    const Loop& l = s.loops[size_t(s.leaf[q])];
    const bool want_reduce = q + 1 == s.leaf.size();
    if (l.is_reduce != want_reduce)
      return failed_precondition(fmt::format("loop {}.{} is {}: the GEMM core's loops are batch and output channel "
                                             "(spatial), then input channel (a reduction) innermost",
                                             s.name(), l.name, l.is_reduce ? "a reduction" : "spatial"));
    if (l.kind != ForKind::kSerial || !l.thread_tag.empty() || !l.pragmas.empty())
      return failed_precondition(fmt::format("loop {}.{} is annotated (vectorized, unrolled, bound or with a pragma); "
                                             "the GEMM core's loops are plain",
                                             s.name(), l.name));
    if (has_attached_at(state, s, s.leaf[q]))
      return failed_precondition(fmt::format("a stage is computed at loop {}.{}, inside the GEMM core's loops",
                                             s.name(), l.name));
  }
  return Status();
}

Status check(const ScheduleState& state, const PrimitiveArgs& args) {
  LoopRef ref = loop_of(state, args[0]);
  const StageSchedule& s = *ref.stage;
  if (s.attach == AttachKind::kInline) return failed_precondition("stage " + s.name() + " is inlined");
  const int p = s.leaf_position(ref.loop);
  for (size_t q = 0; q < s.leaf.size(); ++q)
    for (const auto& [key, value] : s.loops[size_t(s.leaf[q])].pragmas)
      if (key == kMark && int(q) != p)
        return failed_precondition(fmt::format("stage {} is already tensorized at loop {}", s.name(),
                                               s.loops[size_t(s.leaf[q])].name));
  for (const auto& [key, value] : ref.get().pragmas)
    if (key == kMark) return Status();  // already: no effect
  return check_shape(state, s, size_t(p), "loop " + ref.text());
}

PrimitiveResult apply(ScheduleState& state, const PrimitiveArgs& args) {
  Loop& loop = mutable_loop(state, args[0]);
  for (const auto& [key, value] : loop.pragmas)
    if (key == kMark) return ApplyEffect::kNoEffect;
  loop.pragmas.emplace_back(std::string(kMark), args[1].value);
  return ApplyEffect::kChanged;
}

// The flat space: one entry per leaf loop (the one intrinsic).
Expected<PrimitiveArgs> flat(const ScheduleState& state, int stage, int slot, int) {
  TG_ASSIGN_OR_RETURN(PrimitiveArgs args, leaf_loop_at_slot(state, "tensorize", stage, slot));
  args.push_back(PrimitiveArg::of_int(0));
  return args;
}

void mask(const ScheduleState& state, int stage, std::span<int64_t> row, TargetKind) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  if (s.attach == AttachKind::kInline || s.leaf.size() < 3) return;
  for (int l : s.leaf)
    for (const auto& [key, value] : s.loops[size_t(l)].pragmas)
      if (key == kMark) return;
  const size_t p = s.leaf.size() - 3;
  if (p < size_t(kActionMaxLoops) && check_shape(state, s, p, "").ok()) row[p] = 1;
}

}  // namespace

bool is_tensorized(const Loop& loop) {
  for (const auto& [key, value] : loop.pragmas)
    if (key == kMark) return true;
  return false;
}

extern const PrimitiveDef kTensorizePrimitive = {
    .name = "tensorize",
    .usage = "tensorize(STAGE.loop, gemm)",
    .summary = "the loops from `loop` inward (batch, output channel, reduced input channel) become one operation of "
               "the accelerator's GEMM core: int8 products summed in int32",
    .rejects = "STAGE not an int32 sum of i32(x) * i32(w) over i8 tensors; not three plain loops from `loop` inward, "
               "the last the only reduction; a stage computed inside; already tensorized elsewhere. CPU and GPU "
               "lowering reject it; the fpga target checks the extents against the design",
    .args = kArgs,
    .check = check,
    .apply = apply,
    .flat = {ActionSlots::kLoops, 1, flat, mask},
    .targets = uint8_t(TargetKind::kAccelerator),
};

}  // namespace tensorgym
