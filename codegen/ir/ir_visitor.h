// Read-only traversal of expressions and statements. Override the visit methods of
// the nodes you care about; the defaults visit the children.
#pragma once

#include "codegen/ir/expr.h"
#include "codegen/ir/stmt.h"

namespace tensorgym {

// X-macros over every node type, so visitors, mutators, printers and equality stay
// complete when a node is added.
#define TG_FOR_EACH_EXPR_NODE(X)                                                       \
  X(IntImm) X(FloatImm) X(Variable) X(Cast) X(Add) X(Sub) X(Mul) X(Div) X(Mod) X(Min) \
  X(Max) X(EQ) X(NE) X(LT) X(LE) X(GT) X(GE) X(And) X(Or) X(Not) X(Select) X(Load)     \
  X(Call) X(Ramp) X(Broadcast)
#define TG_FOR_EACH_STMT_NODE(X) X(LetStmt) X(For) X(Store) X(Allocate) X(IfThenElse) X(Block) X(Barrier)

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  void visit_expr(const Expr& e);
  void visit_stmt(const Stmt& s);

#define TG_DECLARE_VISIT(Node) virtual void visit(const Node* op);
  TG_FOR_EACH_EXPR_NODE(TG_DECLARE_VISIT)
  TG_FOR_EACH_STMT_NODE(TG_DECLARE_VISIT)
#undef TG_DECLARE_VISIT
};

// Calls `f` on every expression node in pre-order (children after their parent).
template <class F>
void visit_exprs(const Expr& e, F&& f);
template <class F>
void visit_exprs(const Stmt& s, F&& f);

namespace detail {
template <class F>
class ExprCallbackVisitor : public IRVisitor {
 public:
  explicit ExprCallbackVisitor(F& f) : f_(f) {}
#define TG_CALLBACK_VISIT(Node)   \
  void visit(const Node* op) override { \
    f_(Expr(op));                 \
    IRVisitor::visit(op);         \
  }
  TG_FOR_EACH_EXPR_NODE(TG_CALLBACK_VISIT)
#undef TG_CALLBACK_VISIT
 private:
  F& f_;
};
}  // namespace detail

template <class F>
void visit_exprs(const Expr& e, F&& f) {
  detail::ExprCallbackVisitor<F> v(f);
  v.visit_expr(e);
}
template <class F>
void visit_exprs(const Stmt& s, F&& f) {
  detail::ExprCallbackVisitor<F> v(f);
  v.visit_stmt(s);
}

}  // namespace tensorgym
