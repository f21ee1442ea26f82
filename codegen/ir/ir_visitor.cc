#include "codegen/ir/ir_visitor.h"

namespace tensorgym {

void IRVisitor::visit_expr(const Expr& e) {
  if (!e.defined()) return;
  switch (e.kind()) {
#define TG_DISPATCH(Node) \
  case NodeKind::k##Node: return visit(static_cast<const Node*>(e.get()));
    TG_FOR_EACH_EXPR_NODE(TG_DISPATCH)
#undef TG_DISPATCH
    default: break;
  }
}

void IRVisitor::visit_stmt(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
#define TG_DISPATCH(Node) \
  case NodeKind::k##Node: return visit(static_cast<const Node*>(s.get()));
    TG_FOR_EACH_STMT_NODE(TG_DISPATCH)
#undef TG_DISPATCH
    default: break;
  }
}

void IRVisitor::visit(const IntImm*) {}
void IRVisitor::visit(const FloatImm*) {}
void IRVisitor::visit(const Variable*) {}
void IRVisitor::visit(const Cast* op) { visit_expr(op->value); }
#define TG_BINARY_VISIT(Node)              \
  void IRVisitor::visit(const Node* op) {  \
    visit_expr(op->a);                     \
    visit_expr(op->b);                     \
  }
TG_BINARY_VISIT(Add)
TG_BINARY_VISIT(Sub)
TG_BINARY_VISIT(Mul)
TG_BINARY_VISIT(Div)
TG_BINARY_VISIT(Mod)
TG_BINARY_VISIT(Min)
TG_BINARY_VISIT(Max)
TG_BINARY_VISIT(EQ)
TG_BINARY_VISIT(NE)
TG_BINARY_VISIT(LT)
TG_BINARY_VISIT(LE)
TG_BINARY_VISIT(GT)
TG_BINARY_VISIT(GE)
TG_BINARY_VISIT(And)
TG_BINARY_VISIT(Or)
#undef TG_BINARY_VISIT
void IRVisitor::visit(const Not* op) { visit_expr(op->a); }
void IRVisitor::visit(const Select* op) {
  visit_expr(op->condition);
  visit_expr(op->true_value);
  visit_expr(op->false_value);
}
void IRVisitor::visit(const Load* op) {
  for (const Expr& i : op->indices) visit_expr(i);
}
void IRVisitor::visit(const Call* op) {
  for (const Expr& a : op->args) visit_expr(a);
}
void IRVisitor::visit(const Ramp* op) {
  visit_expr(op->base);
  visit_expr(op->stride);
}
void IRVisitor::visit(const Broadcast* op) { visit_expr(op->value); }

void IRVisitor::visit(const LetStmt* op) {
  visit_expr(op->value);
  visit_stmt(op->body);
}
void IRVisitor::visit(const For* op) {
  visit_expr(op->min);
  visit_expr(op->extent);
  visit_stmt(op->body);
}
void IRVisitor::visit(const Store* op) {
  for (const Expr& i : op->indices) visit_expr(i);
  visit_expr(op->value);
}
void IRVisitor::visit(const Allocate* op) { visit_stmt(op->body); }
void IRVisitor::visit(const IfThenElse* op) {
  visit_expr(op->condition);
  visit_stmt(op->then_case);
  visit_stmt(op->else_case);
}
void IRVisitor::visit(const Block* op) {
  for (const Stmt& s : op->stmts) visit_stmt(s);
}
void IRVisitor::visit(const Barrier*) {}

}  // namespace tensorgym
