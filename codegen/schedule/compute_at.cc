// compute_at(STAGE, CONSUMER.loop): STAGE is computed inside that loop, over just the
// region its readers use while the loop's inner iterations run (bounds inference
// sizes its buffer). Every reader of STAGE must run inside that loop: the consumer
// itself, or stages computed at that loop or inside it.
#include <fmt/format.h>

#include "codegen/schedule/action_helpers.h"
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {
namespace {

constexpr ArgSpec kArgs[] = {{ArgKind::kStage}, {ArgKind::kLoop}};

Status check(const ScheduleState& state, const PrimitiveArgs& args) {
  const StageSchedule& stage = stage_of(state, args[0]);
  LoopRef at = loop_of(state, args[1]);
  if (at.stage == &stage) return invalid_argument("a stage cannot be computed at its own loop");
  if (stage.is_output)
    return failed_precondition("stage " + stage.name() + " is an output of the program and is computed at root");
  for (const std::string& r : state.readers_of(stage.name())) {
    if (!state.runs_within(*state.find_stage(r), *at.stage, at.loop))
      return failed_precondition("stage " + r + " reads " + stage.name() + " but does not run inside " + at.text() +
                                 "; every reader of " + stage.name() + " must");
  }
  // Computing a stage inside one of its own readers' producers would be a cycle.
  for (const StageSchedule* s = at.stage; s && s->attach == AttachKind::kAt; s = state.find_stage(s->attach_stage))
    if (s->attach_stage == stage.name())
      return failed_precondition(at.text() + " is itself computed inside " + stage.name());
  if (at.stage->attach == AttachKind::kInline)
    return failed_precondition("stage " + at.stage->name() + " is inlined; it has no loops to compute at");
  return Status();
}

PrimitiveResult apply(ScheduleState& state, const PrimitiveArgs& args) {
  const LoopRef at = loop_of(state, args[1]);
  std::string host = at.stage->name(), loop = at.get().name;
  StageSchedule& stage = stage_of(state, args[0]);
  if (stage.attach == AttachKind::kAt && stage.attach_stage == host && stage.attach_loop == loop)
    return ApplyEffect::kNoEffect;
  stage.attach = AttachKind::kAt;
  stage.attach_stage = std::move(host);
  stage.attach_loop = std::move(loop);
  return ApplyEffect::kChanged;
}

// Stage `stage` at leaf `pos` of its first reader.
Expected<PrimitiveArgs> flat(const ScheduleState& state, int stage, int slot, int) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  std::vector<std::string> readers = state.readers_of(s.name());
  if (readers.empty()) return invalid_argument("stage " + s.name() + " has no reader to be computed at");
  int r = state.stage_index(readers[0]);
  const StageSchedule& reader = state.stages()[size_t(r)];
  if (slot >= int(reader.leaf.size()))
    return invalid_argument(fmt::format("compute_at action names loop {} of {}, which has {} loops", slot, reader.name(),
                                        reader.leaf.size()));
  return PrimitiveArgs{PrimitiveArg::of_stage(stage), PrimitiveArg::of_loop(r, reader.leaf[size_t(slot)])};
}

void mask(const ScheduleState& state, int stage, std::span<int64_t> row, TargetKind) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  if (s.is_output) return;
  std::vector<std::string> readers = state.readers_of(s.name());
  if (readers.empty()) return;
  const StageSchedule* r = state.find_stage(readers[0]);
  if (!r || r->attach == AttachKind::kInline) return;
  for (size_t p = 0; p < r->leaf.size() && p < size_t(kActionMaxLoops); ++p) {
    int loop = r->leaf[p];
    bool all_within = true;
    for (const std::string& name : readers) all_within &= state.runs_within(*state.find_stage(name), *r, loop);
    bool same =
        s.attach == AttachKind::kAt && s.attach_stage == r->name() && s.attach_loop == r->loops[size_t(loop)].name;
    if (all_within && !same && !inside_vectorized(*r, p)) row[p] = 1;
  }
}

// The first producer of stage `stage` that may be computed at its leaf `pos` and is not yet.
int producer_for_here(const ScheduleState& state, const StageSchedule& s, int pos) {
  int loop = s.leaf[size_t(pos)];
  for (const std::string& t : state.program().reads_of(s.def)) {
    const StageSchedule* p = state.find_stage(t);
    if (!p || p->is_output || p->attach == AttachKind::kInline) continue;
    if (p->attach == AttachKind::kAt && p->attach_stage == s.name() && p->attach_loop == s.loops[size_t(loop)].name)
      continue;
    bool within = true;
    for (const std::string& r : state.readers_of(p->name())) within &= state.runs_within(*state.find_stage(r), s, loop);
    if (within) return state.stage_index(p->name());
  }
  return -1;
}

constexpr std::string_view kCursorNames[] = {"compute_at_here"};

Expected<PrimitiveArgs> cursor(const ScheduleState& state, int stage, int pos, int) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  int p = producer_for_here(state, s, pos);
  if (p < 0)
    return failed_precondition("no producer of " + s.name() + " can be computed at " + s.name() + "." +
                               s.loops[size_t(s.leaf[size_t(pos)])].name);
  return PrimitiveArgs{PrimitiveArg::of_stage(p), PrimitiveArg::of_loop(stage, s.leaf[size_t(pos)])};
}

PrimitiveArgs propose(const ScheduleState& state, int stage, Rng& rng, const std::string&, int64_t) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  std::vector<std::string> readers = state.readers_of(s.name());
  if (readers.empty()) return {PrimitiveArg::of_stage(stage), PrimitiveArg::of_loop(stage, random_leaf(s, rng))};
  int c = state.stage_index(rng.pick(readers));
  // Sometimes go one level further out, to the stage the reader is computed at.
  if (state.stages()[size_t(c)].attach == AttachKind::kAt && rng.chance(0.3))
    c = state.stage_index(state.stages()[size_t(c)].attach_stage);
  return {PrimitiveArg::of_stage(stage), PrimitiveArg::of_loop(c, random_leaf(state.stages()[size_t(c)], rng))};
}

}  // namespace

extern const PrimitiveDef kComputeAtPrimitive = {
    .name = "compute_at",
    .usage = "compute_at(STAGE, CONSUMER.loop)",
    .summary = "STAGE is computed inside the loop, over the region its readers use while the loop's inner "
               "iterations run (bounds inference sizes the buffer)",
    .rejects = "STAGE is an output; a reader of STAGE does not run inside the loop (every reader must be CONSUMER "
               "or a stage computed at the loop or inside it)",
    .args = kArgs,
    .check = check,
    .apply = apply,
    .flat = {ActionSlots::kLoops, 1, flat, mask},
    .cursor = {kCursorNames, cursor},
    .random = {14, propose},
};

}  // namespace tensorgym
