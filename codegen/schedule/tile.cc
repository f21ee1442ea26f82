// tile(STAGE.x, STAGE.y, fx, fy, xo, yo, xi, yi): sugar for split x, split y and
// reorder(xo, yo, xi, yi), the 2-D blocking every GEMM schedule starts with.
#include "codegen/schedule/action_helpers.h"
#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {

extern const PrimitiveDef kSplitPrimitive;
extern const PrimitiveDef kReorderPrimitive;

namespace {

constexpr ArgSpec kArgs[] = {{ArgKind::kLoop},
                             {ArgKind::kLoop},
                             {ArgKind::kInt, "split factor", 1, kMaxLoopExtent},
                             {ArgKind::kInt, "split factor", 1, kMaxLoopExtent},
                             {ArgKind::kNewLoop},
                             {ArgKind::kNewLoop},
                             {ArgKind::kNewLoop},
                             {ArgKind::kNewLoop}};

Status check(const ScheduleState&, const PrimitiveArgs& args) {
  if (args[0].stage != args[1].stage) return invalid_argument("tile needs two loops of the same stage");
  if (args[0].loop == args[1].loop) return invalid_argument("tile needs two different loops");
  return Status();  // the splits and the reorder check the rest as they run
}

PrimitiveResult apply(ScheduleState& state, const PrimitiveArgs& args) {
  TG_ASSIGN_OR_RETURN(ApplyEffect e1, check_and_apply(kSplitPrimitive, state, {args[0], args[2], args[4], args[6]}));
  (void)e1;
  // Splitting x appends two loops and leaves y's index as it was.
  TG_ASSIGN_OR_RETURN(ApplyEffect e2, check_and_apply(kSplitPrimitive, state, {args[1], args[3], args[5], args[7]}));
  (void)e2;
  const StageSchedule& s = stage_of(state, args[0]);
  int stage = args[0].stage;
  PrimitiveArgs order{PrimitiveArg::of_stage(stage)};
  for (int i = 4; i < 8; ++i) order.push_back(PrimitiveArg::of_loop(stage, s.find_loop(args[size_t(i)].name)));
  TG_ASSIGN_OR_RETURN(ApplyEffect e3, check_and_apply(kReorderPrimitive, state, order));
  (void)e3;
  return ApplyEffect::kChanged;
}

PrimitiveArgs propose(const ScheduleState& state, int stage, Rng& rng, const std::string& id, int64_t factor) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  static const std::vector<int64_t> kFactors = {2, 3, 4, 5, 8, 16};
  int x = random_leaf(s, rng);
  int y = random_leaf(s, rng);
  return {PrimitiveArg::of_loop(stage, x),          PrimitiveArg::of_loop(stage, y),          PrimitiveArg::of_int(factor),
          PrimitiveArg::of_int(rng.pick(kFactors)), PrimitiveArg::of_name("xo" + id),         PrimitiveArg::of_name("yo" + id),
          PrimitiveArg::of_name("xi" + id),         PrimitiveArg::of_name("yi" + id)};
}

}  // namespace

extern const PrimitiveDef kTilePrimitive = {
    .name = "tile",
    .usage = "tile(STAGE.x, STAGE.y, x_factor, y_factor, xo, yo, xi, yi)",
    .summary = "`split` x and y, then `reorder(xo, yo, xi, yi)`",
    .rejects = "as split / reorder",
    .args = kArgs,
    .check = check,
    .apply = apply,
    .random = {5, propose},
};

}  // namespace tensorgym
