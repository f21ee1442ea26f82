// Builds the loop nest of every stage from its schedule: the leaf loops in order, the
// root variables recovered from them, tail guards just inside the deepest loop they
// depend on, a reduction's initialization just outside its first reduction loop, and
// the stages computed at a loop allocated and produced at the top of that loop's body.
// Accesses come out flat (storage_flatten.cc's layouts).
#include <algorithm>

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

// Rewrites the accesses of an expression in one pass: with `roots`, a stage's body
// at one point of its loops (root variables replaced, reads of buffers that hold a
// shifted region made relative to it); then every access flattened.
class AccessRewriter : public IRMutator {
 public:
  AccessRewriter(const LoweringContext& ctx, const BufferLayouts& layouts, const VarMap* roots)
      : ctx_(ctx), layouts_(layouts), roots_(roots) {}

 protected:
  Expr visit(const Variable* op) override {
    if (!roots_) return op;
    auto it = roots_->find(op->name);
    return it == roots_->end() ? Expr(op) : it->second;
  }

  Expr visit(const Load* op) override {
    std::vector<Expr> idx;
    if (!mutate_all(op->indices, &idx)) idx = op->indices;
    if (roots_) {
      if (auto it = ctx_.regions.find(op->name); it != ctx_.regions.end()) {
        const Region& r = it->second;
        for (size_t d = 0; d < idx.size(); ++d)
          if (!is_const(r.min[d], 0)) idx[d] = Sub::make(idx[d], r.min[d]);
      }
    }
    return Load::make(op->type, op->name, {layouts_.flat_index(op->name, idx)});
  }

 private:
  const LoweringContext& ctx_;
  const BufferLayouts& layouts_;
  const VarMap* roots_;
};

class NestBuilder {
 public:
  NestBuilder(LoweringContext& ctx, const LoopNest& nest) : ctx_(ctx), layouts_(ctx, nest) {}

  Stmt build() {
    std::vector<Stmt> root;
    for (const StageSchedule* s : ctx_.stages)
      if (s->attach == AttachKind::kRoot) root.push_back(emit_stage(*s));
    Stmt body = Block::make(std::move(root));
    // Intermediate root stages live for the whole function.
    for (auto it = ctx_.stages.rbegin(); it != ctx_.stages.rend(); ++it) {
      const StageSchedule& s = **it;
      if (s.attach == AttachKind::kRoot && !s.is_output)
        body = Allocate::make(s.name(), s.def.dtype, {layouts_.size(s.name())}, body);
    }
    return body;
  }

 private:
  LoweringContext& ctx_;
  BufferLayouts layouts_;

  // Loads in expressions placed in the nest as they are (guards, region minimums).
  Expr flattened(const Expr& e) { return AccessRewriter(ctx_, layouts_, nullptr).mutate(e); }

  // The stages computed at `loop` of `c`, allocated and produced before `body`.
  Stmt with_attached(const StageSchedule& c, const Loop& loop, Stmt body) {
    std::vector<const StageSchedule*> attached;
    for (const StageSchedule* t : ctx_.stages)
      if (t->attach == AttachKind::kAt && t->attach_stage == c.name() && t->attach_loop == loop.name)
        attached.push_back(t);
    for (auto it = attached.rbegin(); it != attached.rend(); ++it) {
      const StageSchedule& t = **it;
      const Region& r = ctx_.regions.at(t.name());
      Stmt inner = Block::make({emit_stage(t), body});
      for (size_t d = r.min.size(); d-- > 0;)
        if (r.min_value[d].defined())
          inner = LetStmt::make(LoweringContext::min_var(t, d), flattened(r.min_value[d]), inner);
      body = Allocate::make(t.name(), t.def.dtype, {layouts_.size(t.name())}, inner);
    }
    return body;
  }

  Stmt emit_stage(const StageSchedule& s) {
    const Region& region = ctx_.regions.at(s.name());
    const LoopGeometry& g = ctx_.geometry.at(s.name());
    size_t n = s.def.axes.size();

    VarMap root_values;
    std::vector<Expr> store_index;
    for (size_t d = 0; d < n; ++d) {
      root_values[s.def.axes[d].name] = is_const(region.min[d], 0) ? g.values[d] : Add::make(region.min[d], g.values[d]);
      store_index.push_back(g.values[d]);
    }
    for (size_t r = 0; r < s.def.reduce_axes.size(); ++r) {
      const IterVar& v = s.def.reduce_axes[r];
      root_values[v.name] = v.min == 0 ? g.values[n + r] : Add::make(g.values[n + r], make_int(v.min));
    }
    Expr value = AccessRewriter(ctx_, layouts_, &root_values).mutate(ctx_.bodies.at(s.name()));
    // The stage's own buffer, written at its loops' position in the region it holds.
    Expr flat = layouts_.flat_index(s.name(), store_index);

    bool reduction = s.def.is_reduction();
    Stmt update, init;
    if (reduction) {
      Expr acc = Load::make(s.def.dtype, s.name(), {flat});
      update = Store::make(s.name(), {flat}, combine(s.def.reduce, acc, value));
      init = Store::make(s.name(), {flat}, identity(s.def.reduce, s.def.dtype));
    } else {
      update = Store::make(s.name(), {flat}, value);
    }

    // Each guard goes just inside the deepest loop it depends on.
    size_t depth = s.leaf.size();
    std::vector<Expr> guard_at(depth);
    for (const LoopGeometry::Guard& guard : g.guards) {
      int deepest = 0;
      for (size_t p = 0; p < depth; ++p)
        if (uses_var(guard.condition, LoweringContext::loop_var(s, s.loops[size_t(s.leaf[p])]))) deepest = int(p);
      guard_at[size_t(deepest)] = conjoin(guard_at[size_t(deepest)], flattened(guard.condition));
    }
    auto make_loop = [&](size_t p, Stmt body) {
      const Loop& loop = s.loops[size_t(s.leaf[p])];
      return For::make(LoweringContext::loop_var(s, loop), make_int(0), make_int(g.extents[size_t(s.leaf[p])]),
                       loop.kind, body);
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
