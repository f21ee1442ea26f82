// reverse_compute_at(STAGE, PRODUCER.loop): STAGE, the only reader of PRODUCER, moves
// under that loop of its producer (TVM semantics): each iteration of the loop
// computes a tile of PRODUCER and then the part of STAGE that reads it. STAGE takes
// PRODUCER's spatial loop structure (its splits and fuses, names and order) and
// PRODUCER is computed at STAGE's copy of the loop, so the loops outside it are shared
// and belong to STAGE from then on. STAGE must read PRODUCER at its own axes, one per
// dimension, and have untransformed loops.
#include <algorithm>

#include <fmt/format.h>

#include "codegen/ir/ir_printer.h"
#include "codegen/ir/substitute.h"
#include "codegen/schedule/action_helpers.h"
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {
namespace {

constexpr ArgSpec kArgs[] = {{ArgKind::kStage}, {ArgKind::kLoop}};

// For each dimension of `producer`, the axis of `consumer` that indexes it.
Expected<std::vector<int>> axis_map(const StageSchedule& consumer, const StageSchedule& producer) {
  std::vector<Expr> loads;
  replace_loads(consumer.def->body, producer.name(), [&](const Load* l) {
    Expr e = Load::make(l->type, l->name, l->indices);
    loads.push_back(e);
    return e;
  });
  if (loads.empty())
    return failed_precondition("stage " + consumer.name() + " does not read " + producer.name() +
                               " directly (an inlined stage lies between them)");
  const size_t rank = producer.def->axes.size();
  std::vector<int> map(rank, -1);
  const Load* first = loads[0].as<Load>();
  for (const Expr& e : loads) {
    const Load* l = e.as<Load>();
    bool plain = l->indices.size() == rank;
    for (size_t d = 0; plain && d < rank; ++d) {
      const Variable* v = l->indices[d].as<Variable>();
      const Variable* v0 = first->indices[d].as<Variable>();
      plain = v && v0 && v->name == v0->name;
    }
    for (size_t d = 0; plain && d < rank; ++d) {
      const std::string& name = l->indices[d].as<Variable>()->name;
      for (size_t a = 0; a < consumer.def->axes.size(); ++a)
        if (consumer.def->axes[a].name == name) map[d] = int(a);
      plain = map[d] >= 0 && std::count(map.begin(), map.begin() + long(d), map[d]) == 0;
    }
    if (!plain)
      return failed_precondition("stage " + consumer.name() + " reads " + producer.name() + " as " + to_string(e) +
                                 "; reverse_compute_at needs it read at " + consumer.name() +
                                 "'s own axes, one per dimension, the same at every read");
  }
  for (size_t d = 0; d < rank; ++d) {
    const IterVar& c = consumer.def->axes[size_t(map[d])];
    const IterVar& p = producer.def->axes[d];
    if (c.min != p.min || c.extent != p.extent)
      return failed_precondition(fmt::format("axis {} of {} spans {} values but dimension {} of {} spans {}", c.name,
                                             consumer.name(), c.extent, p.name, producer.name(), p.extent));
  }
  return map;
}

Status check(const ScheduleState& state, const PrimitiveArgs& args) {
  const StageSchedule& stage = stage_of(state, args[0]);
  LoopRef at = loop_of(state, args[1]);
  const StageSchedule& producer = *at.stage;
  if (&producer == &stage) return invalid_argument("a stage cannot be computed at its own loop");
  std::vector<std::string> readers = state.readers_of(producer.name());
  if (std::find(readers.begin(), readers.end(), stage.name()) == readers.end())
    return invalid_argument("stage " + stage.name() + " does not read " + producer.name());
  if (readers.size() != 1)
    return failed_precondition("stage " + producer.name() + " has other readers than " + stage.name() + " (" +
                               (readers[0] == stage.name() ? readers[1] : readers[0]) +
                               "); reverse_compute_at needs its only reader");
  for (const StageSchedule* s : {&stage, &producer})
    if (s->attach == AttachKind::kInline) return failed_precondition("stage " + s->name() + " is inlined");
  if (!stage.relations.empty())
    return failed_precondition("the loops of " + stage.name() +
                               " were split or fused; reverse_compute_at gives it the loops of " + producer.name() +
                               ", so it needs them untransformed");
  for (const Loop& l : stage.loops)
    if (annotated(l))
      return failed_precondition("loop " + stage.name() + "." + l.name + " is annotated; annotate after moving it");
  std::vector<std::string> attached = state.attached_at(stage.name());
  if (!attached.empty())
    return failed_precondition("stage " + attached[0] + " is computed at a loop of " + stage.name() +
                               "; compute_root it first");
  for (const StageSchedule* s = &stage; s && s->attach == AttachKind::kAt; s = state.find_stage(s->attach_stage))
    if (s->attach_stage == producer.name())
      return failed_precondition("stage " + stage.name() + " is itself computed inside " + producer.name());
  const int pos = producer.leaf_position(at.loop);
  for (int p = 0; p <= pos; ++p) {
    const Loop& l = producer.loops[size_t(producer.leaf[size_t(p)])];
    if (l.is_reduce)
      return failed_precondition("loop " + producer.name() + "." + l.name + " is a reduction loop at or outside " +
                                 at.text() + "; " + stage.name() + " has no loop to share it");
  }
  TG_ASSIGN_OR_RETURN(std::vector<int> map, axis_map(stage, producer));
  (void)map;
  for (size_t l = size_t(producer.num_root_loops()); l < producer.loops.size(); ++l)
    if (!producer.loops[l].is_reduce) TG_RETURN_IF_ERROR(check_new_loop_name(stage, producer.loops[l].name));
  return Status();
}

PrimitiveResult apply(ScheduleState& state, const PrimitiveArgs& args) {
  const StageSchedule& producer = stage_of(state, args[1]);
  StageSchedule& stage = stage_of(state, args[0]);
  Expected<std::vector<int>> axes = axis_map(stage, producer);
  if (!axes.ok()) return axes.status();
  // Producer loop -> stage loop: the spatial roots by the axis map, then every loop
  // the producer's spatial splits and fuses made, copied in order.
  std::vector<int> map(producer.loops.size(), -1);
  for (size_t d = 0; d < axes->size(); ++d) map[d] = (*axes)[d];
  auto copy = [&](int l) {
    map[size_t(l)] = int(stage.loops.size());
    const Loop& from = producer.loops[size_t(l)];
    stage.loops.push_back(Loop{from.name, from.extent, false});
  };
  for (const LoopRelation& r : producer.relations) {
    LoopRelation mirrored = r;
    if (r.kind == LoopRelation::kSplit) {
      if (producer.loops[size_t(r.parent)].is_reduce) continue;
      copy(r.outer);
      copy(r.inner);
      mirrored.parent = map[size_t(r.parent)];
      mirrored.outer = map[size_t(r.outer)];
      mirrored.inner = map[size_t(r.inner)];
    } else {
      if (producer.loops[size_t(r.outer)].is_reduce) continue;
      copy(r.fused);
      mirrored.outer = map[size_t(r.outer)];
      mirrored.inner = map[size_t(r.inner)];
      mirrored.fused = map[size_t(r.fused)];
    }
    stage.relations.push_back(mirrored);
  }
  // The shared loops first, in the producer's order; the stage's own loops inside.
  std::vector<int> leaf;
  for (int l : producer.leaf)
    if (!producer.loops[size_t(l)].is_reduce) leaf.push_back(map[size_t(l)]);
  for (int l = 0; l < stage.num_root_loops(); ++l)
    if (std::find(axes->begin(), axes->end(), l) == axes->end()) leaf.push_back(l);
  stage.leaf = std::move(leaf);

  const std::string loop = stage.loops[size_t(map[size_t(args[1].loop)])].name;
  const std::string host = stage.name();
  StageSchedule& moved = stage_of(state, args[1]);
  moved.attach = AttachKind::kAt;
  moved.attach_stage = host;
  moved.attach_loop = loop;
  return ApplyEffect::kChanged;
}

constexpr std::string_view kCursorNames[] = {"reverse_compute_at_here"};

// The only reader of the cursor's stage, under the cursor's loop.
Expected<PrimitiveArgs> cursor(const ScheduleState& state, int stage, int pos, int) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  std::vector<std::string> readers = state.readers_of(s.name());
  if (readers.size() != 1)
    return failed_precondition(
        fmt::format("stage {} has {} readers; reverse_compute_at needs exactly one", s.name(), readers.size()));
  return PrimitiveArgs{PrimitiveArg::of_stage(state.stage_index(readers[0])), PrimitiveArg::of_loop(stage, s.leaf[size_t(pos)])};
}

PrimitiveArgs propose(const ScheduleState& state, int stage, Rng& rng, const std::string&, int64_t) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  std::vector<std::string> readers = state.readers_of(s.name());
  int consumer = readers.empty() ? stage : state.stage_index(rng.pick(readers));
  return {PrimitiveArg::of_stage(consumer), PrimitiveArg::of_loop(stage, random_leaf(s, rng))};
}

}  // namespace

extern const PrimitiveDef kReverseComputeAtPrimitive = {
    .name = "reverse_compute_at",
    .usage = "reverse_compute_at(STAGE, PRODUCER.loop)",
    .summary = "STAGE, the only reader of PRODUCER, moves under the loop: each iteration computes a tile of "
               "PRODUCER, then the part of STAGE that reads it. STAGE takes PRODUCER's spatial loops (names, splits, "
               "order) and PRODUCER is computed at STAGE's copy of the loop, so the shared outer loops are STAGE's",
    .rejects = "PRODUCER has another reader; STAGE does not read PRODUCER at its own axes, one per dimension, with "
               "the same extents; STAGE's loops split, fused or annotated; a reduction loop of PRODUCER at or "
               "outside the loop",
    .args = kArgs,
    .check = check,
    .apply = apply,
    .cursor = {kCursorNames, cursor},
    .random = {6, propose},
};

}  // namespace tensorgym
