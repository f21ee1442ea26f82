// cache_read(TENSOR, CONSUMER, NAME[, SCOPE]): NAME copies TENSOR and CONSUMER reads
// the copy. Computed at a loop of CONSUMER (compute_at), the copy holds only the region
// that loop needs, contiguous: the packing / layout transform of fast GEMMs; on a GPU,
// in `shared` memory, the tile a block's threads load together.
#include <fmt/format.h>

#include "codegen/ir/substitute.h"
#include "codegen/schedule/action_helpers.h"
#include "codegen/schedule/memory_scope.h"
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {
namespace {

constexpr ArgSpec kArgs[] = {{ArgKind::kTensor}, {ArgKind::kStage}, {ArgKind::kNewTensor}, kOptionalScopeArg};

Status check(const ScheduleState& state, const PrimitiveArgs& args) {
  const std::string& tensor = tensor_name(state, args[0]);
  const StageSchedule& consumer = stage_of(state, args[1]);
  TG_RETURN_IF_ERROR(check_new_tensor_name(state, args[2].name));
  if (consumer.name() == tensor) return invalid_argument("a stage cannot cache_read itself");
  if (!expr_reads(consumer.def->body, tensor))
    return invalid_argument("stage " + consumer.name() + " does not read " + tensor);
  if (consumer.attach == AttachKind::kInline)
    return failed_precondition("stage " + consumer.name() + " is inlined; compute_root it first");
  if (args[0].stage >= 0) {
    const StageSchedule& producer = stage_of(state, args[0]);
    if (producer.attach == AttachKind::kInline)
      return failed_precondition("stage " + tensor + " is inlined; there is no buffer to copy");
    if (producer.attach == AttachKind::kAt)
      return failed_precondition("stage " + tensor + " is computed at " + producer.attach_stage + "." +
                                 producer.attach_loop + "; compute_root it before caching it");
  }
  return Status();
}

PrimitiveResult apply(ScheduleState& state, const PrimitiveArgs& args) {
  const std::string tensor = tensor_name(state, args[0]);
  const std::string& name = args[2].name;
  StageDef def;
  def.name = name;
  def.dtype = state.dtype_of(tensor);
  std::vector<Expr> indices;
  std::vector<int64_t> shape = state.shape_of(tensor);
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string axis = "ax" + std::to_string(d);
    def.axes.push_back(IterVar{axis, 0, shape[d]});
    indices.push_back(make_var(axis));
  }
  def.body = Load::make(def.dtype, tensor, indices);

  StageSchedule& consumer = stage_of(state, args[1]);
  consumer.def.mutate().body =
      replace_loads(consumer.def->body, tensor, [&](const Load* l) { return Load::make(l->type, name, l->indices); });
  StageSchedule cache = make_stage_schedule(std::move(def), StageOrigin::kCacheRead);
  if (args.size() > 3) cache.scope = scope_of_word(args[3].value);
  state.stages().insert(state.stages().begin() + args[1].stage, std::move(cache));
  return ApplyEffect::kChanged;
}

// The arguments that cache the `n`-th tensor `s` reads (earlier caches replaced some).
Expected<PrimitiveArgs> cache_nth(const ScheduleState& state, int stage, size_t n) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  std::vector<std::string> reads = state.program().reads_of(s.def);
  if (n >= reads.size())
    return failed_precondition(fmt::format("stage {} reads {} tensors", s.name(), reads.size()));
  const std::string& t = reads[n];
  return PrimitiveArgs{tensor_arg(state, t), PrimitiveArg::of_stage(stage), PrimitiveArg::of_name(fresh_tensor_name(state, t + "_" + s.name()))};
}

Expected<PrimitiveArgs> flat(const ScheduleState& state, int stage, int, int choice) {
  Expected<PrimitiveArgs> args = cache_nth(state, stage, size_t(choice));
  if (!args.ok()) {
    const StageSchedule& s = state.stages()[size_t(stage)];
    return invalid_argument(fmt::format("stage {} reads {} tensors, not {}", s.name(),
                                        state.program().reads_of(s.def).size(), choice + 1));
  }
  return args;
}

void mask(const ScheduleState& state, int stage, std::span<int64_t> row, TargetKind) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  if (s.attach == AttachKind::kInline) return;
  std::vector<std::string> reads = state.program().reads_of(s.def);
  for (size_t t = 0; t < reads.size() && t < size_t(kActionMaxReads); ++t) {
    const StageSchedule* producer = state.find_stage(reads[t]);
    if (!producer || producer->attach == AttachKind::kRoot) row[t] = 1;
  }
}

constexpr std::string_view kCursorNames[] = {"cache_read_0", "cache_read_1", "cache_read_2", "cache_read_3"};

Expected<PrimitiveArgs> cursor(const ScheduleState& state, int stage, int, int variant) {
  return cache_nth(state, stage, size_t(variant));
}

PrimitiveArgs propose(const ScheduleState& state, int stage, Rng& rng, const std::string& id, int64_t) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  std::vector<std::string> reads = state.program().reads_of(s.def);
  std::string tensor = reads.empty() ? s.name() : rng.pick(reads);
  return {tensor_arg(state, tensor), PrimitiveArg::of_stage(stage), PrimitiveArg::of_name(tensor + "_r" + id)};
}

}  // namespace

extern const PrimitiveDef kCacheReadPrimitive = {
    .name = "cache_read",
    .usage = "cache_read(TENSOR, CONSUMER, NAME[, global | shared | local])",
    .summary = "NAME copies TENSOR (input or stage), CONSUMER reads NAME instead of TENSOR. Computed at a loop of "
               "CONSUMER, the copy holds only the region that loop needs, contiguous: the packing transform of fast GEMMs. Its loops are "
               "`ax0, ax1, ...`. The last argument places NAME in GPU memory (set_scope)",
    .rejects = "CONSUMER does not read TENSOR; TENSOR inlined or computed at a loop",
    .args = kArgs,
    .check = check,
    .apply = apply,
    .flat = {ActionSlots::kStage, kActionMaxReads, flat, mask},
    .cursor = {kCursorNames, cursor},
    .random = {6, propose},
};

}  // namespace tensorgym
