// bind(STAGE.loop, blockIdx.x | threadIdx.x | ... | vthread): maps a loop onto a GPU
// thread dimension, or makes its iterations virtual threads (on the accelerator:
// interleaved streams with their own copies of the on-chip buffers, so one's loads run
// while another computes). CPU lowering rejects a bound loop.
#include "codegen/schedule/action_helpers.h"
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {
namespace {

constexpr std::string_view kTags[] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z", "threadIdx.x",
                                      "threadIdx.y", "threadIdx.z", "vthread"};
constexpr ArgSpec kArgs[] = {{ArgKind::kLoop},
                             {ArgKind::kWord, "thread tag", 0, 0, kTags, "blockIdx.x/y/z, threadIdx.x/y/z, vthread"}};

Status check(const ScheduleState& state, const PrimitiveArgs& args) {
  LoopRef ref = loop_of(state, args[0]);
  const std::string_view tag = kTags[size_t(args[1].value)];
  if (ref.get().is_reduce) return invalid_argument("cannot bind reduction loop " + ref.text());
  const Loop& loop = ref.get();
  if (loop.thread_tag == tag) return Status();  // no effect
  if (!loop.thread_tag.empty()) return failed_precondition("loop " + ref.text() + " is already bound to " + loop.thread_tag);
  if (loop.kind != ForKind::kSerial)
    return failed_precondition("loop " + ref.text() + " is already " + for_kind_name(loop.kind));
  for (const Loop& l : ref.stage->loops)
    if (l.thread_tag == tag)
      return failed_precondition("stage " + ref.stage->name() + " already binds " + std::string(tag) + " (loop " +
                                 l.name + ")");
  return Status();
}

PrimitiveResult apply(ScheduleState& state, const PrimitiveArgs& args) {
  Loop& loop = mutable_loop(state, args[0]);
  const std::string_view tag = kTags[size_t(args[1].value)];
  if (loop.thread_tag == tag) return ApplyEffect::kNoEffect;
  loop.thread_tag = std::string(tag);
  return ApplyEffect::kChanged;
}

// The flat space: one entry per leaf loop and tag.
Expected<PrimitiveArgs> flat(const ScheduleState& state, int stage, int slot, int choice) {
  TG_ASSIGN_OR_RETURN(PrimitiveArgs args, leaf_loop_at_slot(state, "bind", stage, slot));
  args.push_back(PrimitiveArg::of_int(choice));
  return args;
}

void mask(const ScheduleState& state, int stage, std::span<int64_t> row, TargetKind target) {
  constexpr size_t kChoices = std::size(kTags);
  // The accelerator has no blocks or threads: only virtual threads.
  const size_t first = target == TargetKind::kAccelerator ? kChoices - 1 : 0;
  const StageSchedule& s = state.stages()[size_t(stage)];
  if (s.attach == AttachKind::kInline) return;
  std::vector<bool> used(kChoices, false);
  for (const Loop& l : s.loops)
    for (size_t t = 0; t < kChoices; ++t) used[t] = used[t] || l.thread_tag == kTags[t];
  for (size_t p = 0; p < s.leaf.size() && p < size_t(kActionMaxLoops); ++p) {
    const Loop& l = s.loops[size_t(s.leaf[p])];
    if (l.kind != ForKind::kSerial || !l.thread_tag.empty() || l.is_reduce || l.extent <= 1) continue;
    for (size_t t = first; t < kChoices; ++t)
      if (!used[t]) row[p * kChoices + t] = 1;
  }
}

}  // namespace

extern const PrimitiveDef kBindPrimitive = {
    .name = "bind",
    .usage = "bind(STAGE.loop, blockIdx.x | threadIdx.x | ...)",
    .summary = "maps the loop to `blockIdx.{x,y,z}`, `threadIdx.{x,y,z}` or `vthread` (on the accelerator: "
               "interleaved streams with their own buffers)",
    .rejects = "reduction loop; tag unknown or already used by the stage. CPU lowering rejects a bound loop; the "
               "accelerator any tag but vthread",
    .args = kArgs,
    .check = check,
    .apply = apply,
    .flat = {ActionSlots::kLoops, int(std::size(kTags)), flat, mask},
    .targets = uint8_t(TargetKind::kGpu) | uint8_t(TargetKind::kAccelerator),
};

}  // namespace tensorgym
