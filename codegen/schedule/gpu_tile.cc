// gpu_tile(STAGE.x, STAGE.y, x_threads, y_threads, xo, yo, xi, yi): Halide's gpu_tile,
// the 2-D GPU tiling most GPU schedules start with: split x and y, reorder(yo, xo, yi,
// xi) (x innermost: a warp's lanes along it), blocks on xo and yo, threads on xi and yi.
#include <fmt/format.h>

#include <string_view>

#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_args.h"

namespace tensorgym {

extern const PrimitiveDef kSplitPrimitive;
extern const PrimitiveDef kReorderPrimitive;
extern const PrimitiveDef kBindPrimitive;

namespace {

// CUDA's most threads a block (the launch check, codegen/lower/gpu_launch.h, says the
// same for any schedule; here the primitive refuses before it is applied).
constexpr int64_t kMaxThreadsPerBlock = 1024;

constexpr ArgSpec kArgs[] = {{ArgKind::kLoop},
                             {ArgKind::kLoop},
                             {ArgKind::kInt, "threads along x", 1, kMaxThreadsPerBlock},
                             {ArgKind::kInt, "threads along y", 1, kMaxThreadsPerBlock},
                             {ArgKind::kNewLoop},
                             {ArgKind::kNewLoop},
                             {ArgKind::kNewLoop},
                             {ArgKind::kNewLoop}};

// bind's words, by index (bind.cc's order).
constexpr int64_t kBlockX = 0, kBlockY = 1, kThreadX = 3, kThreadY = 4;

Status check(const ScheduleState&, const PrimitiveArgs& args) {
  if (args[0].stage != args[1].stage) return invalid_argument("gpu_tile needs two loops of the same stage");
  if (args[0].loop == args[1].loop) return invalid_argument("gpu_tile needs two different loops");
  if (args[2].value * args[3].value > kMaxThreadsPerBlock)
    return invalid_argument(fmt::format("gpu_tile asks for {} x {} = {} threads a block; a block has at most {}",
                                        args[2].value, args[3].value, args[2].value * args[3].value,
                                        kMaxThreadsPerBlock));
  return Status();  // the splits, the reorder and the binds check the rest as they run
}

PrimitiveResult apply(ScheduleState& state, const PrimitiveArgs& args) {
  const int stage = args[0].stage;
  TG_RETURN_IF_ERROR(check_and_apply(kSplitPrimitive, state, {args[0], args[2], args[4], args[6]}).status());
  TG_RETURN_IF_ERROR(check_and_apply(kSplitPrimitive, state, {args[1], args[3], args[5], args[7]}).status());
  auto loop = [&](size_t arg) { return PrimitiveArg::of_loop(stage, stage_of(state, args[0]).find_loop(args[arg].name)); };
  TG_RETURN_IF_ERROR(
      check_and_apply(kReorderPrimitive, state, {PrimitiveArg::of_stage(stage), loop(5), loop(4), loop(7), loop(6)})
          .status());
  for (const auto& [arg, tag] : {std::pair{size_t(4), kBlockX}, std::pair{size_t(5), kBlockY},
                                 std::pair{size_t(6), kThreadX}, std::pair{size_t(7), kThreadY}})
    TG_RETURN_IF_ERROR(check_and_apply(kBindPrimitive, state, {loop(arg), PrimitiveArg::of_int(tag)}).status());
  return ApplyEffect::kChanged;
}

}  // namespace

extern const PrimitiveDef kGpuTilePrimitive = {
    .name = "gpu_tile",
    .usage = "gpu_tile(STAGE.x, STAGE.y, x_threads, y_threads, xo, yo, xi, yi)",
    .summary = "Halide's gpu_tile: `split` x and y by the threads along them, `reorder(yo, xo, yi, xi)`, then `bind` "
               "xo, yo to blockIdx.x, .y and xi, yi to threadIdx.x, .y",
    .rejects = "more than 1024 threads a block; as split / reorder / bind",
    .args = kArgs,
    .check = check,
    .apply = apply,
    .targets = uint8_t(TargetKind::kGpu),
};

}  // namespace tensorgym
