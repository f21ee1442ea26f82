// split(STAGE.loop, factor, outer, inner): loop -> outer * factor + inner. A factor
// that does not divide the extent is legal; lowering guards the tail.
#include <fmt/format.h>

#include "codegen/schedule/action_helpers.h"
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {
namespace {

constexpr ArgSpec kArgs[] = {{ArgKind::kLoop},
                             {ArgKind::kInt, "split factor", 1, kMaxLoopExtent},
                             {ArgKind::kNewLoop},
                             {ArgKind::kNewLoop}};

Status check(const ScheduleState& state, const PrimitiveArgs& args) {
  LoopRef ref = loop_of(state, args[0]);
  TG_RETURN_IF_ERROR(check_new_loop_name(*ref.stage, args[2].name));
  TG_RETURN_IF_ERROR(check_new_loop_name(*ref.stage, args[3].name));
  if (args[2].name == args[3].name) return invalid_argument("outer and inner loops need different names");
  const Loop& loop = ref.get();
  if (annotated(loop))
    return failed_precondition("loop " + ref.text() + " is annotated (" +
                               std::string(loop.thread_tag.empty() ? for_kind_name(loop.kind) : loop.thread_tag.c_str()) +
                               "); split it before annotating");
  return check_nothing_attached_at(state, ref, ref.loop, "split");
}

PrimitiveResult apply(ScheduleState& state, const PrimitiveArgs& args) {
  StageSchedule& stage = stage_of(state, args[0]);
  const int64_t factor = args[1].value;
  const int parent = args[0].loop;
  const Loop& loop = stage.loops[size_t(parent)];
  Loop outer{args[2].name, (loop.extent + factor - 1) / factor, loop.is_reduce};
  Loop inner{args[3].name, std::min(factor, loop.extent), loop.is_reduce};
  int outer_id = int(stage.loops.size());
  stage.loops.reserve(stage.loops.size() + 2);
  stage.loops.push_back(std::move(outer));
  stage.loops.push_back(std::move(inner));
  LoopRelation rel{LoopRelation::kSplit};
  rel.parent = parent;
  rel.outer = outer_id;
  rel.inner = outer_id + 1;
  rel.factor = factor;
  stage.relations.push_back(rel);
  int pos = stage.leaf_position(parent);
  stage.leaf[size_t(pos)] = outer_id;
  stage.leaf.insert(stage.leaf.begin() + pos + 1, outer_id + 1);
  return ApplyEffect::kChanged;
}

// The arguments of splitting leaf `loop` of `s` by `factor`, with deterministic names.
PrimitiveArgs split_args(const StageSchedule& s, int stage, int loop, int64_t factor) {
  const std::string& name = s.loops[size_t(loop)].name;
  return {PrimitiveArg::of_loop(stage, loop), PrimitiveArg::of_int(factor), PrimitiveArg::of_name(fresh_loop_name(s, name + "_o")),
          PrimitiveArg::of_name(fresh_loop_name(s, name + "_i"))};
}

Expected<PrimitiveArgs> flat(const ScheduleState& state, int stage, int slot, int choice) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  TG_ASSIGN_OR_RETURN(int loop, action_leaf(s, "split", slot));
  const Loop& l = s.loops[size_t(loop)];
  int64_t f = split_factors(l.extent)[size_t(choice)];
  if (!f)
    return invalid_argument(
        fmt::format("split choice {} has no factor for {}.{} (extent {})", choice, s.name(), l.name, l.extent));
  return split_args(s, stage, loop, f);
}

void mask(const ScheduleState& state, int stage, std::span<int64_t> row, TargetKind) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  for (size_t p = 0; p < s.leaf.size() && p < size_t(kActionMaxLoops); ++p) {
    const Loop& l = s.loops[size_t(s.leaf[p])];
    if (annotated(l) || has_attached_at(state, s, s.leaf[p])) continue;
    std::array<int64_t, kSplitChoices> factors = split_factors(l.extent);
    for (int c = 0; c < kSplitChoices; ++c)
      if (factors[size_t(c)]) row[p * kSplitChoices + size_t(c)] = 1;
  }
}

constexpr std::string_view kCursorNames[] = {"split_2", "split_4", "split_8", "split_16", "split_32", "split_64"};

Expected<PrimitiveArgs> cursor(const ScheduleState& state, int stage, int pos, int variant) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  return split_args(s, stage, s.leaf[size_t(pos)], int64_t(2) << variant);
}

PrimitiveArgs propose(const ScheduleState& state, int stage, Rng& rng, const std::string& id, int64_t factor) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  return {PrimitiveArg::of_loop(stage, random_leaf(s, rng)), PrimitiveArg::of_int(factor), PrimitiveArg::of_name("o" + id), PrimitiveArg::of_name("i" + id)};
}

}  // namespace

extern const PrimitiveDef kSplitPrimitive = {
    .name = "split",
    .usage = "split(STAGE.loop, factor, outer, inner)",
    .summary = "`loop = outer * factor + inner`; a factor that does not divide the extent is legal and the tail is "
               "guarded",
    .rejects = "`loop` not a leaf loop, annotated, or a stage is computed at it; factor < 1; names taken",
    .args = kArgs,
    .check = check,
    .apply = apply,
    .flat = {ActionSlots::kLoops, kSplitChoices, flat, mask},
    .cursor = {kCursorNames, cursor},
    .random = {20, propose},
};

}  // namespace tensorgym
