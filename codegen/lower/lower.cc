// The lowering pipeline, in order. Each pass lives in its own file.
#include "codegen/lower/lower.h"

#include "codegen/ir/simplify.h"
#include "codegen/lower/lowering_context.h"

namespace tensorgym {

Expected<LoopNest> lower(const ScheduleState& state, const LowerOptions& options) {
  TG_RETURN_IF_ERROR(check_target_support(state, options));  // check_target.cc

  // codegen/schedule/bound_inference.cc: inlined bodies, the region each stage computes.
  TG_ASSIGN_OR_RETURN(ScheduleBounds bounds, infer_bounds(state));
  LoweringContext ctx(state, std::move(bounds));
  Stmt body = build_loop_nest(ctx);     // build_loop_nest.cc: loops, inits, guards, attachments
  body = mark_auto_unroll(body, ctx);   // auto_unroll.cc: pragma(auto_unroll_max_step)

  LoopNest nest;
  const Program& program = state.program();
  for (const TensorInput& in : program.inputs) nest.inputs.push_back({in.name, in.dtype, in.shape});
  for (const std::string& out : program.outputs)
    nest.outputs.push_back({out, program.dtype_of(out), program.shape_of(out)});
  body = storage_flatten(body, ctx, nest.args());  // storage_flatten.cc: one flat index per access
  TG_RETURN_IF_ERROR(check_allocations(body));  // storage_flatten.cc: sizes within caps
  if (options.simplify) body = simplify(body);     // codegen/ir/simplify.cc
  body = limit_code_size(body, kMaxUnrolledStatements);  // limit_code_size.cc
  nest.body = body;
  return nest;
}

}  // namespace tensorgym
