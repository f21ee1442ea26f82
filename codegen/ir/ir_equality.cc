#include "codegen/ir/ir_equality.h"

#include <bit>
#include <string_view>

#include "codegen/ir/ir_visitor.h"
#include "support/fnv.h"

namespace tensorgym {
namespace {

template <class T>
const T& cast(const IRNode* n) {
  return *static_cast<const T*>(n);
}

bool equal_exprs(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!structural_equal(a[i], b[i])) return false;
  return true;
}

template <class T>
bool equal_binary(const Expr& a, const Expr& b) {
  const T& x = cast<T>(a.get());
  const T& y = cast<T>(b.get());
  return structural_equal(x.a, y.a) && structural_equal(x.b, y.b);
}

// Mixes 64-bit words (names hashed with FNV-1a first).
struct Hasher {
  uint64_t h = kFnvOffset;
  void mix(uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  }
  void mix(std::string_view s) { mix(fnv1a64(s)); }
  void mix(DataType t) { mix(uint64_t(t.code) | uint64_t(t.bits) << 8 | uint64_t(t.lanes) << 16); }
};

// Mixes every node's kind, type and payload in pre-order.
class HashVisitor : public IRVisitor {
 public:
  Hasher hasher;

 private:
  void node(const BaseExprNode* e) {
    hasher.mix(uint64_t(e->kind) + 1);
    hasher.mix(e->type);
  }
  void node(const BaseStmtNode* s) { hasher.mix(uint64_t(s->kind) + 1); }

#define TG_HASH_PLAIN(Node)               \
  void visit(const Node* op) override {   \
    node(op);                             \
    IRVisitor::visit(op);                 \
  }
  TG_HASH_PLAIN(Cast) TG_HASH_PLAIN(Add) TG_HASH_PLAIN(Sub) TG_HASH_PLAIN(Mul) TG_HASH_PLAIN(Div)
  TG_HASH_PLAIN(Mod) TG_HASH_PLAIN(Min) TG_HASH_PLAIN(Max) TG_HASH_PLAIN(EQ) TG_HASH_PLAIN(NE)
  TG_HASH_PLAIN(LT) TG_HASH_PLAIN(LE) TG_HASH_PLAIN(GT) TG_HASH_PLAIN(GE) TG_HASH_PLAIN(And)
  TG_HASH_PLAIN(Or) TG_HASH_PLAIN(Not) TG_HASH_PLAIN(Select)
#undef TG_HASH_PLAIN

  void visit(const IntImm* op) override {
    node(op);
    hasher.mix(uint64_t(op->value));
  }
  void visit(const FloatImm* op) override {
    node(op);
    hasher.mix(std::bit_cast<uint64_t>(op->value));
  }
  void visit(const Variable* op) override {
    node(op);
    hasher.mix(op->name);
  }
  void visit(const Load* op) override {
    node(op);
    hasher.mix(op->name);
    hasher.mix(uint64_t(op->indices.size()));
    IRVisitor::visit(op);
  }
  void visit(const Call* op) override {
    node(op);
    hasher.mix(uint64_t(op->op));
    IRVisitor::visit(op);
  }
  void visit(const Ramp* op) override {
    node(op);
    hasher.mix(uint64_t(op->lanes));
    IRVisitor::visit(op);
  }
  void visit(const Broadcast* op) override {
    node(op);
    hasher.mix(uint64_t(op->lanes));
    IRVisitor::visit(op);
  }
  void visit(const LetStmt* op) override {
    node(op);
    hasher.mix(op->name);
    IRVisitor::visit(op);
  }
  void visit(const For* op) override {
    node(op);
    hasher.mix(op->name);
    hasher.mix(uint64_t(op->kind));
    if (!op->thread_tag.empty()) hasher.mix(op->thread_tag);  // unbound loops hash as they always did
    IRVisitor::visit(op);
  }
  void visit(const Store* op) override {
    node(op);
    hasher.mix(op->name);
    hasher.mix(uint64_t(op->indices.size()));
    IRVisitor::visit(op);
  }
  void visit(const Allocate* op) override {
    node(op);
    hasher.mix(op->name);
    hasher.mix(op->dtype);
    for (int64_t e : op->extents) hasher.mix(uint64_t(e));
    IRVisitor::visit(op);
  }
  void visit(const IfThenElse* op) override {
    node(op);
    hasher.mix(uint64_t(op->else_case.defined()));
    IRVisitor::visit(op);
  }
  void visit(const Block* op) override {
    node(op);
    hasher.mix(uint64_t(op->stmts.size()));
    IRVisitor::visit(op);
  }
};

}  // namespace

bool structural_equal(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a.kind() != b.kind() || a.type() != b.type()) return false;
  switch (a.kind()) {
    case NodeKind::kIntImm: return cast<IntImm>(a.get()).value == cast<IntImm>(b.get()).value;
    case NodeKind::kFloatImm: {
      double x = cast<FloatImm>(a.get()).value, y = cast<FloatImm>(b.get()).value;
      return std::bit_cast<uint64_t>(x) == std::bit_cast<uint64_t>(y);
    }
    case NodeKind::kVariable: return cast<Variable>(a.get()).name == cast<Variable>(b.get()).name;
    case NodeKind::kCast: return structural_equal(cast<Cast>(a.get()).value, cast<Cast>(b.get()).value);
    case NodeKind::kAdd: return equal_binary<Add>(a, b);
    case NodeKind::kSub: return equal_binary<Sub>(a, b);
    case NodeKind::kMul: return equal_binary<Mul>(a, b);
    case NodeKind::kDiv: return equal_binary<Div>(a, b);
    case NodeKind::kMod: return equal_binary<Mod>(a, b);
    case NodeKind::kMin: return equal_binary<Min>(a, b);
    case NodeKind::kMax: return equal_binary<Max>(a, b);
    case NodeKind::kEQ: return equal_binary<EQ>(a, b);
    case NodeKind::kNE: return equal_binary<NE>(a, b);
    case NodeKind::kLT: return equal_binary<LT>(a, b);
    case NodeKind::kLE: return equal_binary<LE>(a, b);
    case NodeKind::kGT: return equal_binary<GT>(a, b);
    case NodeKind::kGE: return equal_binary<GE>(a, b);
    case NodeKind::kAnd: return equal_binary<And>(a, b);
    case NodeKind::kOr: return equal_binary<Or>(a, b);
    case NodeKind::kNot: return structural_equal(cast<Not>(a.get()).a, cast<Not>(b.get()).a);
    case NodeKind::kSelect: {
      const Select &x = cast<Select>(a.get()), &y = cast<Select>(b.get());
      return structural_equal(x.condition, y.condition) && structural_equal(x.true_value, y.true_value) &&
             structural_equal(x.false_value, y.false_value);
    }
    case NodeKind::kLoad: {
      const Load &x = cast<Load>(a.get()), &y = cast<Load>(b.get());
      return x.name == y.name && equal_exprs(x.indices, y.indices);
    }
    case NodeKind::kCall: {
      const Call &x = cast<Call>(a.get()), &y = cast<Call>(b.get());
      return x.op == y.op && equal_exprs(x.args, y.args);
    }
    case NodeKind::kRamp: {
      const Ramp &x = cast<Ramp>(a.get()), &y = cast<Ramp>(b.get());
      return x.lanes == y.lanes && structural_equal(x.base, y.base) && structural_equal(x.stride, y.stride);
    }
    case NodeKind::kBroadcast: {
      const Broadcast &x = cast<Broadcast>(a.get()), &y = cast<Broadcast>(b.get());
      return x.lanes == y.lanes && structural_equal(x.value, y.value);
    }
    default: return false;
  }
}

bool structural_equal(const Stmt& a, const Stmt& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case NodeKind::kLetStmt: {
      const LetStmt &x = cast<LetStmt>(a.get()), &y = cast<LetStmt>(b.get());
      return x.name == y.name && structural_equal(x.value, y.value) && structural_equal(x.body, y.body);
    }
    case NodeKind::kFor: {
      const For &x = cast<For>(a.get()), &y = cast<For>(b.get());
      return x.name == y.name && x.kind == y.kind && x.thread_tag == y.thread_tag && structural_equal(x.min, y.min) &&
             structural_equal(x.extent, y.extent) && structural_equal(x.body, y.body);
    }
    case NodeKind::kStore: {
      const Store &x = cast<Store>(a.get()), &y = cast<Store>(b.get());
      return x.name == y.name && equal_exprs(x.indices, y.indices) && structural_equal(x.value, y.value);
    }
    case NodeKind::kAllocate: {
      const Allocate &x = cast<Allocate>(a.get()), &y = cast<Allocate>(b.get());
      return x.name == y.name && x.dtype == y.dtype && x.extents == y.extents && x.scope == y.scope &&
             structural_equal(x.body, y.body);
    }
    case NodeKind::kIfThenElse: {
      const IfThenElse &x = cast<IfThenElse>(a.get()), &y = cast<IfThenElse>(b.get());
      return structural_equal(x.condition, y.condition) && structural_equal(x.then_case, y.then_case) &&
             structural_equal(x.else_case, y.else_case);
    }
    case NodeKind::kBlock: {
      const Block &x = cast<Block>(a.get()), &y = cast<Block>(b.get());
      if (x.stmts.size() != y.stmts.size()) return false;
      for (size_t i = 0; i < x.stmts.size(); ++i)
        if (!structural_equal(x.stmts[i], y.stmts[i])) return false;
      return true;
    }
    case NodeKind::kBarrier: return true;
    default: return false;
  }
}

uint64_t structural_hash(const Expr& e) {
  HashVisitor v;
  v.visit_expr(e);
  return v.hasher.h;
}

uint64_t structural_hash(const Stmt& s) {
  HashVisitor v;
  v.visit_stmt(s);
  return v.hasher.h;
}

}  // namespace tensorgym
