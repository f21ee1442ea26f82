// Builds the loop nest of every stage from its schedule: the leaf loops in order, the
// root variables recovered from them, tail guards just inside the deepest loop they
// depend on, a reduction's initialization just outside its first reduction loop, and
// the stages computed at a loop allocated and produced at the top of that loop's body.
#include <algorithm>

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

class NestBuilder {
 public:
  explicit NestBuilder(LoweringContext& ctx) : ctx_(ctx) {}

  Stmt build() {
    std::vector<Stmt> root;
    for (const StageSchedule* s : ctx_.stages)
      if (s->attach == AttachKind::kRoot) root.push_back(emit_stage(*s));
    Stmt body = Block::make(std::move(root));
    // Intermediate root stages live for the whole function.
    for (auto it = ctx_.stages.rbegin(); it != ctx_.stages.rend(); ++it) {
      const StageSchedule& s = **it;
      if (s.attach == AttachKind::kRoot && !s.is_output)
        body = Allocate::make(s.name(), s.def.dtype, ctx_.regions.at(s.name()).extent, body);
    }
    return body;
  }

 private:
  LoweringContext& ctx_;

  // Reads of stages with buffers become reads relative to the region they hold.
  Expr relative_reads(const Expr& body) {
    Expr out = body;
    for (const StageSchedule* t : ctx_.stages) {
      const Region& r = ctx_.regions.at(t->name());
      bool shifted = false;
      for (const Expr& m : r.min) shifted |= !is_const(m, 0);
      if (!shifted || !expr_reads(out, t->name())) continue;
      out = replace_loads(out, t->name(), [&](const Load* l) {
        std::vector<Expr> idx;
        for (size_t d = 0; d < l->indices.size(); ++d)
          idx.push_back(is_const(r.min[d], 0) ? l->indices[d] : Sub::make(l->indices[d], r.min[d]));
        return Load::make(l->type, l->name, idx);
      });
    }
    return out;
  }

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
        if (r.min_value[d].defined()) inner = LetStmt::make(LoweringContext::min_var(t, d), r.min_value[d], inner);
      body = Allocate::make(t.name(), t.def.dtype, r.extent, inner);
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
    Expr value = relative_reads(substitute(ctx_.bodies.at(s.name()), root_values));

    bool reduction = s.def.is_reduction();
    Stmt update, init;
    if (reduction) {
      Expr acc = Load::make(s.def.dtype, s.name(), store_index);
      update = Store::make(s.name(), store_index, combine(s.def.reduce, acc, value));
      init = Store::make(s.name(), store_index, identity(s.def.reduce, s.def.dtype));
    } else {
      update = Store::make(s.name(), store_index, value);
    }

    // Each guard goes just inside the deepest loop it depends on.
    size_t depth = s.leaf.size();
    std::vector<Expr> guard_at(depth);
    for (const LoopGeometry::Guard& guard : g.guards) {
      int deepest = 0;
      for (size_t p = 0; p < depth; ++p)
        if (uses_var(guard.condition, LoweringContext::loop_var(s, s.loops[size_t(s.leaf[p])]))) deepest = int(p);
      guard_at[size_t(deepest)] = conjoin(guard_at[size_t(deepest)], guard.condition);
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

Stmt build_loop_nest(LoweringContext& ctx) { return NestBuilder(ctx).build(); }

}  // namespace tensorgym
