// The lowering pipeline, in order. Each pass lives in its own file.
#include "codegen/lower/lower.h"

#include "codegen/ir/ir_mutator.h"
#include "codegen/ir/simplify.h"
#include "codegen/lower/lowering_context.h"
#include "codegen/lower/reuse_nest.h"

namespace tensorgym {
namespace {

// The pipeline up to limit_code_size.
Expected<LoopNest> lower_before_limits(const ScheduleState& state, const LowerOptions& options) {
  TG_RETURN_IF_ERROR(check_target_support(state, options));  // check_target.cc

  // codegen/schedule/bound_inference.cc: inlined bodies, the region each stage computes.
  Expected<ScheduleBounds> bounds = infer_bounds(state);
  if (!bounds.ok()) return bounds.status();
  LoweringContext ctx(state, std::move(bounds).value());  // moved once: no moved-from copies to destroy
  LoopNest nest;
  const Program& program = state.program();
  std::vector<BufferArg> inputs, outputs;
  inputs.reserve(program.inputs.size());
  outputs.reserve(program.outputs.size());
  for (const TensorInput& in : program.inputs) inputs.push_back({in.name, in.dtype, in.shape});
  for (const std::string& out : program.outputs) outputs.push_back({out, program.dtype_of(out), program.shape_of(out)});
  nest.inputs = std::move(inputs);
  nest.outputs = std::move(outputs);

  // build_loop_nest.cc: loops, inits, guards, attachments; accesses flattened on the
  // way (storage_flatten.cc: one flat index per access, one extent per Allocate).
  Stmt body = build_loop_nest(ctx, nest);
  body = mark_auto_unroll(body, ctx);           // auto_unroll.cc: pragma(auto_unroll_max_step)
  TG_RETURN_IF_ERROR(check_allocations(body, nest));  // storage_flatten.cc: sizes within caps
  if (options.simplify) body = simplify(body);  // codegen/ir/simplify.cc
  nest.body = body;
  return nest;
}

// The last pass: limit_code_size.cc.
Stmt limit_for_target(const Stmt& body) { return limit_code_size(body, kMaxUnrolledStatements); }

// Whether the lowered body depends on loop kinds other than through the kind of each
// For: auto_unroll.cc marks serial loops only, so a pragma makes it depend on them.
bool kinds_only_in_loops(const ScheduleState& state) {
  for (const StageSchedule& s : state.stages())
    for (const Loop& l : s.loops)
      for (const auto& [key, value] : l.pragmas)
        if (key == "auto_unroll_max_step") return false;
  return true;
}

}  // namespace

Expected<LoopNest> lower(const ScheduleState& state, const LowerOptions& options) {
  TG_ASSIGN_OR_RETURN(LoopNest nest, lower_before_limits(state, options));
  nest.body = limit_for_target(nest.body);
  return nest;
}

Expected<std::shared_ptr<const LoweredNest>> lower_reusing(std::shared_ptr<const ScheduleState> state,
                                                           std::shared_ptr<const LoweredNest> previous,
                                                           const LowerOptions& options) {
  auto out = std::make_shared<LoweredNest>();
  out->options = options;
  // reuse_nest.cc: loop kinds, one split or one reorder rewritten into the last nest.
  Stmt reused;
  if (previous && previous->kind_independent_body.defined() && previous->options.simplify == options.simplify &&
      previous->options.allow_thread_binding == options.allow_thread_binding && kinds_only_in_loops(*state))
    reused = reuse_nest(*previous->state, *state, previous->kind_independent_body, options.simplify);
  if (reused.defined()) {
    TG_RETURN_IF_ERROR(check_target_support(*state, options));  // thread binding is not in the nest
    out->nest.inputs = previous->nest.inputs;                   // shared, not copied
    out->nest.outputs = previous->nest.outputs;
    out->kind_independent_body = std::move(reused);
    out->reused = true;
  } else {
    previous.reset();
    TG_ASSIGN_OR_RETURN(out->nest, lower_before_limits(*state, options));
    if (kinds_only_in_loops(*state)) out->kind_independent_body = out->nest.body;
  }
  out->nest.body = limit_for_target(out->kind_independent_body.defined() ? out->kind_independent_body : out->nest.body);
  out->state = std::move(state);
  return std::shared_ptr<const LoweredNest>(std::move(out));
}

}  // namespace tensorgym
