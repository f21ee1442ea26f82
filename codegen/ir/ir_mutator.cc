#include "codegen/ir/ir_mutator.h"

namespace tensorgym {

Expr IRMutator::mutate(const Expr& e) {
  if (!e.defined()) return e;
  switch (e.kind()) {
#define TG_DISPATCH(Node) \
  case NodeKind::k##Node: return visit(static_cast<const Node*>(e.get()));
    TG_FOR_EACH_EXPR_NODE(TG_DISPATCH)
#undef TG_DISPATCH
    default: return e;
  }
}

Stmt IRMutator::mutate(const Stmt& s) {
  if (!s.defined()) return s;
  switch (s.kind()) {
#define TG_DISPATCH(Node) \
  case NodeKind::k##Node: return visit(static_cast<const Node*>(s.get()));
    TG_FOR_EACH_STMT_NODE(TG_DISPATCH)
#undef TG_DISPATCH
    default: return s;
  }
}

bool IRMutator::mutate_all(const std::vector<Expr>& in, std::vector<Expr>* out) {
  return map_if_changed(in, out, [&](const Expr& e) { return mutate(e); });
}

Expr IRMutator::visit(const IntImm* op) { return op; }
Expr IRMutator::visit(const FloatImm* op) { return op; }
Expr IRMutator::visit(const Variable* op) { return op; }
Expr IRMutator::visit(const Cast* op) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? Expr(op) : Cast::make(op->type.with_lanes(v.type().lanes), v);
}
#define TG_BINARY_MUTATE(Node)                                  \
  Expr IRMutator::visit(const Node* op) {                       \
    Expr a = mutate(op->a), b = mutate(op->b);                  \
    if (a.same_as(op->a) && b.same_as(op->b)) return op;        \
    return Node::make(a, b);                                    \
  }
TG_BINARY_MUTATE(Add)
TG_BINARY_MUTATE(Sub)
TG_BINARY_MUTATE(Mul)
TG_BINARY_MUTATE(Div)
TG_BINARY_MUTATE(Mod)
TG_BINARY_MUTATE(Min)
TG_BINARY_MUTATE(Max)
TG_BINARY_MUTATE(EQ)
TG_BINARY_MUTATE(NE)
TG_BINARY_MUTATE(LT)
TG_BINARY_MUTATE(LE)
TG_BINARY_MUTATE(GT)
TG_BINARY_MUTATE(GE)
TG_BINARY_MUTATE(And)
TG_BINARY_MUTATE(Or)
#undef TG_BINARY_MUTATE
Expr IRMutator::visit(const Not* op) {
  Expr a = mutate(op->a);
  return a.same_as(op->a) ? Expr(op) : Not::make(a);
}
Expr IRMutator::visit(const Select* op) {
  Expr c = mutate(op->condition), t = mutate(op->true_value), f = mutate(op->false_value);
  if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) return op;
  return Select::make(c, t, f);
}
Expr IRMutator::visit(const Load* op) {
  std::vector<Expr> idx;
  if (!mutate_all(op->indices, &idx)) return op;
  DataType t = op->type;
  if (idx.size() == 1) t = t.with_lanes(idx[0].type().lanes);
  return Load::make(t, op->name, std::move(idx));
}
Expr IRMutator::visit(const Call* op) {
  std::vector<Expr> args;
  if (!mutate_all(op->args, &args)) return op;
  return Call::make(op->op, std::move(args));
}
Expr IRMutator::visit(const Ramp* op) {
  Expr b = mutate(op->base), s = mutate(op->stride);
  if (b.same_as(op->base) && s.same_as(op->stride)) return op;
  return Ramp::make(b, s, op->lanes);
}
Expr IRMutator::visit(const Broadcast* op) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? Expr(op) : Broadcast::make(v, op->lanes);
}

Stmt IRMutator::visit(const LetStmt* op) {
  Expr v = mutate(op->value);
  Stmt b = mutate(op->body);
  if (v.same_as(op->value) && b.same_as(op->body)) return op;
  return LetStmt::make(op->name, v, b);
}
Stmt IRMutator::visit(const For* op) {
  Expr m = mutate(op->min), e = mutate(op->extent);
  Stmt b = mutate(op->body);
  if (m.same_as(op->min) && e.same_as(op->extent) && b.same_as(op->body)) return op;
  return For::make(op->name, m, e, op->kind, b, op->thread_tag);
}
Stmt IRMutator::visit(const Store* op) {
  std::vector<Expr> idx;
  bool changed = mutate_all(op->indices, &idx);
  Expr v = mutate(op->value);
  if (!changed && v.same_as(op->value)) return op;
  return Store::make(op->name, changed ? std::move(idx) : op->indices, v);
}
Stmt IRMutator::visit(const Allocate* op) {
  Stmt b = mutate(op->body);
  return b.same_as(op->body) ? Stmt(op) : op->with_body(b);
}
Stmt IRMutator::visit(const IfThenElse* op) {
  Expr c = mutate(op->condition);
  Stmt t = mutate(op->then_case), e = mutate(op->else_case);
  if (c.same_as(op->condition) && t.same_as(op->then_case) && e.same_as(op->else_case)) return op;
  return IfThenElse::make(c, t, e);
}
Stmt IRMutator::visit(const Block* op) {
  std::vector<Stmt> out;
  if (!map_if_changed(op->stmts, &out, [&](const Stmt& s) { return mutate(s); })) return op;
  return Block::make(std::move(out));
}
Stmt IRMutator::visit(const Barrier* op) { return op; }

}  // namespace tensorgym
