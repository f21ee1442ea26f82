// The lowering pipeline, in order. Each pass lives in its own file.
#include "codegen/lower/lower.h"

#include "codegen/ir/ir_mutator.h"
#include "codegen/ir/simplify.h"
#include "codegen/lower/lowering_context.h"

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
  nest.inputs.reserve(program.inputs.size());
  nest.outputs.reserve(program.outputs.size());
  for (const TensorInput& in : program.inputs) nest.inputs.push_back({in.name, in.dtype, in.shape});
  for (const std::string& out : program.outputs)
    nest.outputs.push_back({out, program.dtype_of(out), program.shape_of(out)});

  // build_loop_nest.cc: loops, inits, guards, attachments; accesses flattened on the
  // way (storage_flatten.cc: one flat index per access, one extent per Allocate).
  Stmt body = build_loop_nest(ctx, nest);
  body = mark_auto_unroll(body, ctx);           // auto_unroll.cc: pragma(auto_unroll_max_step)
  TG_RETURN_IF_ERROR(check_allocations(body));  // storage_flatten.cc: sizes within caps
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

bool same_iter_vars(const std::vector<IterVar>& a, const std::vector<IterVar>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || a[i].min != b[i].min || a[i].extent != b[i].extent) return false;
  return true;
}

// Conservative: bodies are compared by identity (primitives that leave a stage's
// definition alone copy its handle).
bool same_def(const StageDef& a, const StageDef& b) {
  return a.name == b.name && a.dtype == b.dtype && a.reduce == b.reduce && a.body.same_as(b.body) &&
         same_iter_vars(a.axes, b.axes) && same_iter_vars(a.reduce_axes, b.reduce_axes);
}

bool same_loop_but_kind(const Loop& a, const Loop& b) {
  return a.name == b.name && a.extent == b.extent && a.is_reduce == b.is_reduce && a.thread_tag == b.thread_tag &&
         a.pragmas == b.pragmas;
}

using KindChanges = std::vector<std::pair<std::string, ForKind>>;

// Whether `a` and `b` differ at most in the kinds of loops. The emitted loops (leaf
// loops of stages that are not inlined) whose kind differs go to *changes, with
// their loop variable and their kind in `b`.
bool differ_only_in_kinds(const ScheduleState& a, const ScheduleState& b, KindChanges* changes) {
  if (a.program_ptr() != b.program_ptr() || a.stages().size() != b.stages().size()) return false;
  for (size_t i = 0; i < a.stages().size(); ++i) {
    const StageSchedule& x = a.stages()[i];
    const StageSchedule& y = b.stages()[i];
    if (x.origin != y.origin || x.is_output != y.is_output || x.attach != y.attach ||
        x.attach_stage != y.attach_stage || x.attach_loop != y.attach_loop || x.leaf != y.leaf ||
        x.storage_order != y.storage_order || x.loops.size() != y.loops.size() || !same_def(x.def, y.def) ||
        x.relations != y.relations || x.aligns != y.aligns)
      return false;
    for (size_t l = 0; l < x.loops.size(); ++l)
      if (!same_loop_but_kind(x.loops[l], y.loops[l])) return false;
    if (y.attach == AttachKind::kInline) continue;
    for (int l : y.leaf)
      if (x.loops[size_t(l)].kind != y.loops[size_t(l)].kind)
        changes->emplace_back(ScheduleBounds::loop_var(y, y.loops[size_t(l)]), y.loops[size_t(l)].kind);
  }
  return true;
}

// Sets the kind of the loops named in `kinds`; rebuilds only what leads to them (the
// mutator's defaults) and leaves expressions alone.
class LoopKindSetter : public IRMutator {
 public:
  explicit LoopKindSetter(const KindChanges& kinds) : kinds_(kinds) {}
  using IRMutator::mutate;
  Expr mutate(const Expr& e) override { return e; }

 protected:
  Stmt visit(const For* op) override {
    ForKind kind = op->kind;
    for (const auto& [name, k] : kinds_)
      if (name == op->name) kind = k;
    Stmt body = mutate(op->body);
    if (kind == op->kind && body.same_as(op->body)) return op;
    return For::make(op->name, op->min, op->extent, kind, body);
  }
  Stmt visit(const Store* op) override { return op; }  // no loops below a store

 private:
  const KindChanges& kinds_;
};

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
  KindChanges changes;
  if (previous && previous->kind_independent_body.defined() &&
      previous->options.allow_thread_binding == options.allow_thread_binding &&
      previous->options.simplify == options.simplify && differ_only_in_kinds(*previous->state, *state, &changes)) {
    TG_RETURN_IF_ERROR(check_target_support(*state, options));  // thread binding is not a kind
    out->nest.inputs = previous->nest.inputs;
    out->nest.outputs = previous->nest.outputs;
    out->kind_independent_body = LoopKindSetter(changes).mutate(previous->kind_independent_body);
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
