// Builds the loop nest of every stage from its schedule: the leaf loops in order, the
// root variables recovered from them, tail guards just inside the deepest loop they
// depend on, a reduction's initialization just outside its first reduction loop, and
// the stages computed at a loop allocated and produced at the top of that loop's body.
// Accesses come out flat (storage_flatten.cc's layouts).
#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "codegen/ir/ir_mutator.h"
#include "codegen/ir/substitute.h"
#include "codegen/lower/lowering_context.h"

namespace tensorgym {
namespace {

Expr combine(ReduceKind kind, const Expr& acc, const Expr& value) {
  switch (kind) {
    case ReduceKind::kSum: return Add::make(acc, value);
    case ReduceKind::kMax: return Max::make(acc, value);
    case ReduceKind::kMin: return Min::make(acc, value);
    case ReduceKind::kNone: break;
  }
  return value;
}

Expr identity(ReduceKind kind, DataType t) {
  switch (kind) {
    case ReduceKind::kMax: return make_lowest(t);
    case ReduceKind::kMin: return make_highest(t);
    default: return make_zero(t);
  }
}

Expr conjoin(const Expr& a, const Expr& b) { return a.defined() ? And::make(a, b) : b; }

// Root variables of a stage and their values at one point of its loops: a few per
// stage, searched by name (cheaper than a map built per stage and lowering).
using RootValues = std::vector<std::pair<std::string_view, Expr>>;

// Rewrites the accesses of an expression in one pass: with `roots`, a stage's body
// at one point of its loops (root variables replaced, reads of buffers that hold a
// shifted region made relative to it); then every access flattened.
class AccessRewriter : public IRMutator {
 public:
  AccessRewriter(const BufferLayouts& layouts, const RootValues* roots) : layouts_(layouts), roots_(roots) {}

 protected:
  Expr visit(const Variable* op) override {
    if (roots_)
      for (const auto& [name, value] : *roots_)
        if (name == op->name) return value;
    return op;
  }

  Expr visit(const Load* op) override {
    std::vector<Expr> idx;
    if (!mutate_all(op->indices, &idx)) idx = op->indices;
    const BufferLayouts::Layout& layout = layouts_.at(op->name);
    if (roots_ && layout.region) {
      const Region& r = *layout.region;
      for (size_t d = 0; d < idx.size(); ++d)
        if (!is_const(r.min[d], 0)) idx[d] = Sub::make(idx[d], r.min[d]);
    }
    return Load::make(op->type, op->name, {layouts_.flat_index(layout, idx)});
  }

 private:
  const BufferLayouts& layouts_;
  const RootValues* roots_;
};

class NestBuilder {
 public:
  NestBuilder(LoweringContext& ctx, const LoopNest& nest) : ctx_(ctx), layouts_(ctx, nest), zero_(make_int(0)) {
    for (const StageSchedule* t : ctx_.stages)
      if (t->attach == AttachKind::kAt) computed_at_.push_back(t);
  }

  Stmt build() {
    std::vector<Stmt> root;
    for (const StageSchedule* s : ctx_.stages)
      if (s->attach == AttachKind::kRoot) root.push_back(emit_stage(*s));
    Stmt body = Block::make(std::move(root));
    // Intermediate root stages live for the whole function.
    for (auto it = ctx_.stages.rbegin(); it != ctx_.stages.rend(); ++it) {
      const StageSchedule& s = **it;
      if (s.attach == AttachKind::kRoot && !s.is_output)
        body = Allocate::make(s.name(), s.def->dtype, {layouts_.size(s.name())}, body, s.scope);
    }
    return body;
  }

 private:
  LoweringContext& ctx_;
  BufferLayouts layouts_;
  Expr zero_;  // every loop's minimum
  std::vector<const StageSchedule*> computed_at_;  // stages computed at a loop, producers first

  // Loads in expressions placed in the nest as they are (guards, region minimums).
  Expr flattened(const Expr& e) { return AccessRewriter(layouts_, nullptr).mutate(e); }

  // The stages computed at `loop` of `c`, allocated and produced before `body`.
  Stmt with_attached(const StageSchedule& c, const Loop& loop, Stmt body) {
    for (auto it = computed_at_.rbegin(); it != computed_at_.rend(); ++it) {
      const StageSchedule& t = **it;
      if (t.attach_stage != c.name() || t.attach_loop != loop.name) continue;
      const Region& r = ctx_.regions.at(t.name());
      Stmt inner = Block::make({emit_stage(t), body});
      for (size_t d = r.min.size(); d-- > 0;)
        if (r.min_value[d].defined())
          inner = LetStmt::make(LoweringContext::min_var(t, d), flattened(r.min_value[d]), inner);
      body = Allocate::make(t.name(), t.def->dtype, {layouts_.size(t.name())}, inner, t.scope);
    }
    return body;
  }

  Stmt emit_stage(const StageSchedule& s) {
    const BufferLayouts::Layout& layout = layouts_.at(s.name());
    const Region& region = *layout.region;
    const LoopGeometry& g = ctx_.geometry.at(s.name());
    size_t n = s.def->axes.size();

    RootValues root_values;
    root_values.reserve(n + s.def->reduce_axes.size());
    std::vector<Expr> store_index;
    store_index.reserve(n);
    for (size_t d = 0; d < n; ++d) {
      root_values.emplace_back(s.def->axes[d].name,
                               is_const(region.min[d], 0) ? g.values[d] : Add::make(region.min[d], g.values[d]));
      store_index.push_back(g.values[d]);
    }
    for (size_t r = 0; r < s.def->reduce_axes.size(); ++r) {
      const IterVar& v = s.def->reduce_axes[r];
      root_values.emplace_back(v.name, v.min == 0 ? g.values[n + r] : Add::make(g.values[n + r], make_int(v.min)));
    }
    Expr value = AccessRewriter(layouts_, &root_values).mutate(ctx_.bodies.at(s.name()));
    // The stage's own buffer, written at its loops' position in the region it holds.
    Expr flat = layouts_.flat_index(layout, store_index);

    bool reduction = s.def->is_reduction();
    Stmt update, init;
    if (reduction) {
      Expr acc = Load::make(s.def->dtype, s.name(), {flat});
      update = Store::make(s.name(), {flat}, combine(s.def->reduce, acc, value));
      init = Store::make(s.name(), {flat}, identity(s.def->reduce, s.def->dtype));
    } else {
      update = Store::make(s.name(), {flat}, value);
    }

    // The variable of the leaf loop at position p: its value in the geometry, so that
    // its name ("C.io", ScheduleBounds::loop_var) is not built again.
    size_t depth = s.leaf.size();
    auto var_at = [&](size_t p) -> const std::string& { return g.values[size_t(s.leaf[p])].as<Variable>()->name; };

    // Each guard goes just inside the deepest loop it depends on.
    std::vector<Expr> guard_at(depth);
    for (const LoopGeometry::Guard& guard : g.guards) {
      int deepest = 0;
      for (size_t p = 0; p < depth; ++p)
        if (uses_var(guard.condition, var_at(p))) deepest = int(p);
      guard_at[size_t(deepest)] = conjoin(guard_at[size_t(deepest)], flattened(guard.condition));
    }
    auto make_loop = [&](size_t p, Stmt body) {
      const Loop& loop = s.loops[size_t(s.leaf[p])];
      return For::make(var_at(p), zero_, make_int(g.extents[size_t(s.leaf[p])]), loop.kind, std::move(body),
                       loop.thread_tag);
    };

    // A reduction initializes its output just outside the first reduction loop, over
    // the spatial loops that come after it.
    size_t first_reduce = depth;
    for (size_t p = 0; p < depth; ++p) {
      if (s.loops[size_t(s.leaf[p])].is_reduce) {
        first_reduce = p;
        break;
      }
    }
    Stmt init_nest = init;
    if (reduction) {
      for (size_t p = depth; p-- > first_reduce;) {
        if (s.loops[size_t(s.leaf[p])].is_reduce) continue;
        if (guard_at[p].defined()) init_nest = IfThenElse::make(guard_at[p], init_nest);
        init_nest = make_loop(p, init_nest);
      }
    }

    Stmt body = update;
    for (size_t p = depth; p-- > 0;) {
      const Loop& loop = s.loops[size_t(s.leaf[p])];
      if (reduction && p + 1 == first_reduce) body = Block::make({init_nest, body});
      body = with_attached(s, loop, body);
      if (guard_at[p].defined()) body = IfThenElse::make(guard_at[p], body);
      body = make_loop(p, body);
    }
    if (reduction && first_reduce == 0) body = Block::make({init_nest, body});
    return body;
  }
};

}  // namespace

Stmt build_loop_nest(LoweringContext& ctx, const LoopNest& nest) {
  return NestBuilder(ctx, nest).build();
}

}  // namespace tensorgym
