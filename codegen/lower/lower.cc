// The lowering pipeline, in order. Each pass lives in its own file.
//
//   check_target       check_target.cc     what the target cannot run (thread binding)
//   infer_bounds       codegen/schedule/bound_inference.cc: inlined bodies, regions
//   build_loop_nest    build_loop_nest.cc  loops, inits, guards, attachments; accesses
//                                          flattened on the way (storage_flatten.cc)
//   auto_unroll        auto_unroll.cc      pragma(auto_unroll_max_step)
//   check_allocations  storage_flatten.cc  buffer sizes within the caps
//   simplify           codegen/ir/simplify.cc
//   limit_code_size    limit_code_size.cc  unrolling within a statement budget
//   -- the target-independent nest: analyses, the interpreter, loop_nest observations --
//   the target's own passes, in the order it lists them (LoweringTarget::passes):
//     cpu              vectorize_loops.cc  vectorized loops become vector code
//     cuda             check_gpu_loops.cc  loop kinds and bound loops' tags, nesting, extents
//                      check_gpu_scopes.cc  global, shared and local buffers where a GPU
//                                          has them; shared memory per block
//                      check_gpu_kernels.cc  one kernel per bound nest: launch limits, no
//                                          work left on one thread
//                      check_gpu_stores.cc  no two threads write one element (reductions,
//                                          buffers private to a thread or to a block)
//                      insert_gpu_barriers.cc  barriers between shared-memory writes and
//                                          other threads' reads
//
// Every pass that changes the nest, and every target pass, reports to
// LowerOptions::after_pass (the lowering log of `tensorgym lower --after`).
#include "codegen/lower/lower.h"

#include "codegen/ir/ir_mutator.h"
#include "codegen/ir/ir_visitor.h"
#include "codegen/ir/simplify.h"
#include "codegen/lower/lowering_context.h"
#include "codegen/lower/reuse_nest.h"

namespace tensorgym {
namespace {

// The generic passes that change the nest, as the lowering log names them.
constexpr std::string_view kGenericPasses[] = {"build_loop_nest", "auto_unroll", "simplify", "limit_code_size"};

// Reports the nest after `pass` to the lowering log, if there is one.
void log_pass(const LowerOptions& options, std::string_view pass, const LoopNest& nest, const Stmt& body) {
  if (!options.after_pass) return;
  LoopNest after = nest;
  after.body = body;
  options.after_pass(pass, after);
}

// The outermost first loop bound by bind(), or null.
// The first loop bound to a thread; `vthread` counts only where `with_vthread`.
const For* first_bound_loop(const Stmt& body, bool with_vthread = true) {
  struct Finder : IRVisitor {
    const For* found = nullptr;
    bool with_vthread = true;
    void visit(const For* op) override {
      if (found) return;
      if (!op->thread_tag.empty() && (with_vthread || op->thread_tag != "vthread"))
        found = op;
      else
        IRVisitor::visit(op);
    }
  } finder;
  finder.with_vthread = with_vthread;
  finder.visit_stmt(body);
  return finder.found;
}

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
  for (const TensorInput& in : program.inputs) inputs.push_back({in.name, in.dtype, in.shape, in.constant});
  for (const std::string& out : program.outputs) outputs.push_back({out, program.dtype_of(out), program.shape_of(out)});
  nest.inputs = std::move(inputs);
  nest.outputs = std::move(outputs);

  // build_loop_nest.cc: loops, inits, guards, attachments; accesses flattened on the
  // way (storage_flatten.cc: one flat index per access, one extent per Allocate).
  Stmt body = build_loop_nest(ctx, nest);
  log_pass(options, "build_loop_nest", nest, body);
  body = mark_auto_unroll(body, ctx);  // auto_unroll.cc: pragma(auto_unroll_max_step)
  log_pass(options, "auto_unroll", nest, body);
  TG_RETURN_IF_ERROR(check_allocations(body, nest));  // storage_flatten.cc: sizes within caps
  if (options.simplify) {
    body = simplify(body);  // codegen/ir/simplify.cc
    log_pass(options, "simplify", nest, body);
  }
  nest.body = body;
  return nest;
}

// The last generic pass: limit_code_size.cc.
void limit_size(LoopNest& nest, const Stmt& body, const LowerOptions& options) {
  nest.body = limit_code_size(body, kMaxUnrolledStatements);
  log_pass(options, "limit_code_size", nest, nest.body);
}

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
  limit_size(nest, nest.body, options);
  return nest;
}

Expected<LoopNest> lower(const ScheduleState& state, const LoweringTarget& target, const LowerOptions& options) {
  if (target.kind != TargetKind::kAccelerator) TG_RETURN_IF_ERROR(check_no_accelerator_marks(state, target.name));
  LowerOptions for_target = options;
  for_target.allow_thread_binding = options.allow_thread_binding || target.thread_binding;
  for_target.allow_accelerator_scopes = options.allow_accelerator_scopes || target.kind == TargetKind::kAccelerator;
  TG_ASSIGN_OR_RETURN(LoopNest nest, lower(state, for_target));
  if (target.needs_schedule) nest.schedule = std::make_shared<const ScheduleState>(state);
  return lower_for_target(std::move(nest), target, for_target);
}

Expected<LoopNest> lower_for_target(LoopNest nest, const LoweringTarget& target, const LowerOptions& options) {
  if (!nest.target.empty())
    return failed_precondition("the loop nest was already lowered for target " + nest.target);
  if (target.needs_schedule && !nest.schedule)
    return failed_precondition("the " + target.name + " target compiles from the schedule as well as the nest: "
                               "lower the schedule for it (the nest carries no schedule)");
  if (!target.thread_binding) {
    // A nest lowered with thread binding allowed (for another target) keeps its bound
    // loops. An accelerator's virtual threads are its own.
    if (const For* bound = first_bound_loop(nest.body, /*with_vthread=*/target.kind != TargetKind::kAccelerator))
      return failed_precondition("loop " + bound->name + " is bound to " + bound->thread_tag + "; the " +
                                 target.name + " target does not support thread binding");
  }
  for (const TargetPass& pass : target.passes) {
    if (pass.run) nest.body = pass.run(nest.body);
    if (pass.check) TG_RETURN_IF_ERROR(pass.check(nest.body));
    log_pass(options, pass.name, nest, nest.body);
  }
  nest.target = target.name;
  return nest;
}

std::vector<std::string> lowering_pass_names(const LoweringTarget& target) {
  std::vector<std::string> names(std::begin(kGenericPasses), std::end(kGenericPasses));
  for (const TargetPass& pass : target.passes) names.emplace_back(pass.name);
  return names;
}

Expected<std::shared_ptr<const LoweredNest>> lower_reusing(std::shared_ptr<const ScheduleState> state,
                                                           std::shared_ptr<const LoweredNest> previous,
                                                           const LowerOptions& options) {
  auto out = std::make_shared<LoweredNest>();
  out->options = options;
  out->options.after_pass = nullptr;  // the log is the caller's, for this call only
  // reuse_nest.cc: loop kinds, one split or one reorder rewritten into the last nest.
  Stmt reused;
  if (previous && previous->kind_independent_body.defined() && previous->options.simplify == options.simplify &&
      previous->options.allow_thread_binding == options.allow_thread_binding &&
      previous->options.allow_accelerator_scopes == options.allow_accelerator_scopes && kinds_only_in_loops(*state))
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
  limit_size(out->nest, out->kind_independent_body.defined() ? out->kind_independent_body : out->nest.body,
                   options);
  out->state = std::move(state);
  return std::shared_ptr<const LoweredNest>(std::move(out));
}

}  // namespace tensorgym
