// rfactor(STAGE.loop, NAME): turns reduction loop `loop` of STAGE into a spatial axis
// of a new stage NAME that holds partial results, NAME[loop, spatial...] op= body over
// the remaining reduction loops; STAGE then reduces NAME over `loop`. The partials
// can be vectorized or parallelized, which a reduction loop cannot.
#include "codegen/ir/substitute.h"
#include "codegen/schedule/action_helpers.h"
#include "codegen/schedule/loop_geometry.h"
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {
namespace {

constexpr ArgSpec kArgs[] = {{ArgKind::kLoop}, {ArgKind::kNewTensor}};

Status check(const ScheduleState& state, const PrimitiveArgs& args) {
  LoopRef ref = loop_of(state, args[0]);
  const StageSchedule& stage = *ref.stage;
  TG_RETURN_IF_ERROR(check_new_tensor_name(state, args[1].name));
  if (!ref.get().is_reduce) return invalid_argument("rfactor needs a reduction loop; " + ref.text() + " is spatial");
  if (stage.attach == AttachKind::kInline)
    return failed_precondition("stage " + stage.name() + " is inlined; compute_root it first");
  std::vector<std::string> attached = state.attached_at(stage.name());
  if (!attached.empty())
    return failed_precondition("stage " + attached[0] + " is computed at a loop of " + stage.name() +
                               "; rfactor moves what it reads, so compute_root it first");
  return Status();
}

PrimitiveResult apply(ScheduleState& state, const PrimitiveArgs& args) {
  StageSchedule& stage = stage_of(state, args[0]);
  const LoopRef ref{&stage, args[0].loop};

  // NAME's variables are STAGE's leaf reduction loops, named as those loops.
  std::vector<int64_t> root_extents;
  for (const IterVar& v : stage.def->axes) root_extents.push_back(v.extent);
  for (const IterVar& v : stage.def->reduce_axes) root_extents.push_back(v.extent);
  LoopGeometry g = loop_geometry(stage, root_extents, [](const Loop& l) { return l.name; });

  StageDef partial;
  partial.name = args[1].name;
  partial.dtype = stage.def->dtype;
  partial.reduce = stage.def->reduce;
  partial.axes.push_back(IterVar{ref.get().name, 0, ref.get().extent});
  for (const IterVar& v : stage.def->axes) partial.axes.push_back(IterVar{v.name, 0, v.extent});
  for (int l : stage.leaf) {
    const Loop& loop = stage.loops[size_t(l)];
    if (loop.is_reduce && l != ref.loop) partial.reduce_axes.push_back(IterVar{loop.name, 0, loop.extent});
  }
  VarMap values;
  size_t num_axes = stage.def->axes.size();
  for (size_t r = 0; r < stage.def->reduce_axes.size(); ++r) {
    const IterVar& v = stage.def->reduce_axes[r];
    Expr value = g.values[num_axes + r];
    values[v.name] = v.min == 0 ? value : Add::make(value, make_int(v.min));
  }
  Expr body = substitute(stage.def->body, values);
  // Tails of non-dividing reduction splits contribute the identity.
  Expr in_range;
  for (const LoopGeometry::Guard& guard : g.guards) {
    if (!stage.loops[size_t(guard.parent)].is_reduce) continue;
    in_range = in_range.defined() ? And::make(in_range, guard.condition) : guard.condition;
  }
  if (in_range.defined()) {
    Expr identity = stage.def->reduce == ReduceKind::kSum   ? make_zero(partial.dtype)
                    : stage.def->reduce == ReduceKind::kMax ? make_lowest(partial.dtype)
                                                            : make_highest(partial.dtype);
    body = Select::make(in_range, body, identity);
  }
  partial.body = body;

  // STAGE now reduces the partials over the rfactor'ed loop.
  IterVar rvar{ref.get().name, 0, ref.get().extent};
  std::vector<Expr> indices{make_var(rvar.name)};
  for (const IterVar& v : stage.def->axes) indices.push_back(make_var(v.name));
  stage.def.mutate().body = Load::make(stage.def->dtype, partial.name, indices);
  stage.drop_reduce_loops();
  stage.def.mutate().reduce_axes = {rvar};
  // The new root reduction loop sits right after the spatial roots.
  int root = int(stage.def->axes.size());
  for (LoopRelation& r : stage.relations)
    for (int* l : {&r.parent, &r.outer, &r.inner, &r.fused})
      if (*l >= root) ++*l;
  for (int& l : stage.leaf)
    if (l >= root) ++l;
  stage.loops.insert(stage.loops.begin() + root, Loop{rvar.name, rvar.extent, true});
  stage.leaf.push_back(root);

  state.stages().insert(state.stages().begin() + args[0].stage,
                        make_stage_schedule(std::move(partial), StageOrigin::kRFactor));
  return ApplyEffect::kChanged;
}

PrimitiveArgs partials(const ScheduleState& state, int stage, int loop) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  return {PrimitiveArg::of_loop(stage, loop), PrimitiveArg::of_name(fresh_tensor_name(state, s.name() + "_rf"))};
}

Expected<PrimitiveArgs> flat(const ScheduleState& state, int stage, int slot, int) {
  TG_ASSIGN_OR_RETURN(int loop, action_leaf(state.stages()[size_t(stage)], "rfactor", slot));
  return partials(state, stage, loop);
}

void mask(const ScheduleState& state, int stage, std::span<int64_t> row, TargetKind) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  if (s.attach == AttachKind::kInline || !state.attached_at(s.name()).empty()) return;
  for (size_t p = 0; p < s.leaf.size() && p < size_t(kActionMaxLoops); ++p)
    if (s.loops[size_t(s.leaf[p])].is_reduce) row[p] = 1;
}

constexpr std::string_view kCursorNames[] = {"rfactor"};

Expected<PrimitiveArgs> cursor(const ScheduleState& state, int stage, int pos, int) {
  return partials(state, stage, state.stages()[size_t(stage)].leaf[size_t(pos)]);
}

PrimitiveArgs propose(const ScheduleState& state, int stage, Rng& rng, const std::string& id, int64_t) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  std::vector<int> reduce_leaves;
  for (int l : s.leaf)
    if (s.loops[size_t(l)].is_reduce) reduce_leaves.push_back(l);
  int l = reduce_leaves.empty() ? rng.pick(s.leaf) : rng.pick(reduce_leaves);
  return {PrimitiveArg::of_loop(stage, l), PrimitiveArg::of_name(s.name() + "_rf" + id)};
}

}  // namespace

extern const PrimitiveDef kRFactorPrimitive = {
    .name = "rfactor",
    .usage = "rfactor(STAGE.loop, NAME)",
    .summary = "reduction loop `loop` becomes the first spatial axis of NAME, which holds partial results over the "
               "other reduction loops; STAGE reduces NAME over `loop`",
    .rejects = "`loop` is spatial; a stage is computed at STAGE",
    .args = kArgs,
    .check = check,
    .apply = apply,
    .flat = {ActionSlots::kLoops, 1, flat, mask},
    .cursor = {kCursorNames, cursor},
    .random = {4, propose},
    .targets = uint8_t(TargetKind::kCpu) | uint8_t(TargetKind::kGpu),
};

}  // namespace tensorgym
