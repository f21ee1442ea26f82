// Expression nodes of the tensor IR (Halide-like). Nodes are immutable and shared;
// `Expr` is the handle. Build nodes through the `make` functions, which check types.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/ir/intrusive_ptr.h"
#include "codegen/ir/node_pool.h"
#include "codegen/ir/type.h"

namespace tensorgym {

enum class NodeKind : uint8_t {
  // Expressions.
  kIntImm, kFloatImm, kVariable, kCast,
  kAdd, kSub, kMul, kDiv, kMod, kMin, kMax,
  kEQ, kNE, kLT, kLE, kGT, kGE, kAnd, kOr, kNot,
  kSelect, kLoad, kCall, kRamp, kBroadcast,
  // Statements.
  kLetStmt, kFor, kStore, kAllocate, kIfThenElse, kBlock, kBarrier,
};

struct IRNode : RefCounted {
  explicit IRNode(NodeKind k) : kind(k) {}
  const NodeKind kind;
  // Nodes come from a per-thread cache of blocks (node_pool.h).
  static void* operator new(std::size_t size) { return node_pool::allocate(size); }
  static void operator delete(void* p, std::size_t size) noexcept { node_pool::deallocate(p, size); }
};

struct BaseExprNode : IRNode {
  BaseExprNode(NodeKind k, DataType t) : IRNode(k), type(t) {}
  const DataType type;
};

class Expr {
 public:
  Expr() = default;
  Expr(const BaseExprNode* n) : ptr_(n) {}  // NOLINT(google-explicit-constructor)

  bool defined() const { return bool(ptr_); }
  const BaseExprNode* get() const { return ptr_.get(); }
  const BaseExprNode* operator->() const { return ptr_.get(); }
  DataType type() const { return ptr_->type; }
  NodeKind kind() const { return ptr_->kind; }
  bool same_as(const Expr& o) const { return ptr_.same_as(o.ptr_); }

  // The node as T when it is one, otherwise null.
  template <class T>
  const T* as() const {
    return ptr_ && ptr_->kind == T::kKind ? static_cast<const T*>(ptr_.get()) : nullptr;
  }

 private:
  IntrusivePtr<const BaseExprNode> ptr_;
};

template <NodeKind K>
struct ExprNode : BaseExprNode {
  static constexpr NodeKind kKind = K;
  explicit ExprNode(DataType t) : BaseExprNode(K, t) {}
};

struct IntImm : ExprNode<NodeKind::kIntImm> {
  IntImm(DataType t, int64_t v) : ExprNode(t), value(v) {}
  const int64_t value;
  // Wraps `v` to the width of `t` (two's complement), as the hardware does.
  static Expr make(DataType t, int64_t v);
  // The value make(t, v) holds, without making it.
  static int64_t wrap(DataType t, int64_t v);
};

struct FloatImm : ExprNode<NodeKind::kFloatImm> {
  FloatImm(DataType t, double v) : ExprNode(t), value(v) {}
  const double value;
  static Expr make(DataType t, double v);
};

// A named scalar: a loop variable, a let-bound value, or a stage's iteration variable.
struct Variable : ExprNode<NodeKind::kVariable> {
  Variable(DataType t, std::string n) : ExprNode(t), name(std::move(n)) {}
  const std::string name;
  static Expr make(DataType t, std::string name);
};

struct Cast : ExprNode<NodeKind::kCast> {
  Cast(DataType t, Expr v) : ExprNode(t), value(std::move(v)) {}
  const Expr value;
  static Expr make(DataType t, Expr v);
};

template <NodeKind K>
struct BinaryNode : ExprNode<K> {
  BinaryNode(DataType t, Expr x, Expr y) : ExprNode<K>(t), a(std::move(x)), b(std::move(y)) {}
  const Expr a, b;
};

// Arithmetic: both operands of one type, the result of that type.
// Integer Div and Mod round toward negative infinity (floor), so x == (x / c) * c + x % c
// with 0 <= x % c < c for c > 0: the form index arithmetic needs.
struct Add : BinaryNode<NodeKind::kAdd> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct Sub : BinaryNode<NodeKind::kSub> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct Mul : BinaryNode<NodeKind::kMul> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct Div : BinaryNode<NodeKind::kDiv> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct Mod : BinaryNode<NodeKind::kMod> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct Min : BinaryNode<NodeKind::kMin> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct Max : BinaryNode<NodeKind::kMax> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
// Comparisons: operands of one type, the result bool (with the operands' lanes).
struct EQ : BinaryNode<NodeKind::kEQ> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct NE : BinaryNode<NodeKind::kNE> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct LT : BinaryNode<NodeKind::kLT> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct LE : BinaryNode<NodeKind::kLE> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct GT : BinaryNode<NodeKind::kGT> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct GE : BinaryNode<NodeKind::kGE> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
// Logic on bools.
struct And : BinaryNode<NodeKind::kAnd> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct Or : BinaryNode<NodeKind::kOr> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };

struct Not : ExprNode<NodeKind::kNot> {
  Not(DataType t, Expr v) : ExprNode(t), a(std::move(v)) {}
  const Expr a;
  static Expr make(Expr a);
};

// Only the chosen side is evaluated, so a side may hold a load that is out of bounds
// when the condition does not select it (padding).
struct Select : ExprNode<NodeKind::kSelect> {
  Select(DataType t, Expr c, Expr x, Expr y)
      : ExprNode(t), condition(std::move(c)), true_value(std::move(x)), false_value(std::move(y)) {}
  const Expr condition, true_value, false_value;
  static Expr make(Expr condition, Expr true_value, Expr false_value);
};

// Reads element `indices` of buffer `name`: one index per dimension before storage
// flattening, a single flat index after it.
struct Load : ExprNode<NodeKind::kLoad> {
  Load(DataType t, std::string n, std::vector<Expr> idx)
      : ExprNode(t), name(std::move(n)), indices(std::move(idx)) {}
  const std::string name;
  const std::vector<Expr> indices;
  static Expr make(DataType t, std::string name, std::vector<Expr> indices);
};

enum class CallOp : uint8_t { kAbs, kExp, kLog, kSqrt, kTanh };
const char* call_op_name(CallOp op);

// A pure math function of its arguments.
struct Call : ExprNode<NodeKind::kCall> {
  Call(DataType t, CallOp o, std::vector<Expr> a) : ExprNode(t), op(o), args(std::move(a)) {}
  const CallOp op;
  const std::vector<Expr> args;
  static Expr make(CallOp op, std::vector<Expr> args);
};

// The vector base, base + stride, ..., base + (lanes - 1) * stride.
struct Ramp : ExprNode<NodeKind::kRamp> {
  Ramp(DataType t, Expr b, Expr s, int l) : ExprNode(t), base(std::move(b)), stride(std::move(s)), lanes(l) {}
  const Expr base, stride;
  const int lanes;
  static Expr make(Expr base, Expr stride, int lanes);
};

// A scalar repeated in every lane.
struct Broadcast : ExprNode<NodeKind::kBroadcast> {
  Broadcast(DataType t, Expr v, int l) : ExprNode(t), value(std::move(v)), lanes(l) {}
  const Expr value;
  const int lanes;
  static Expr make(Expr value, int lanes);
};

// Small helpers used everywhere.
inline Expr make_int(int64_t v) { return IntImm::make(DataType::i32(), v); }
inline Expr make_bool(bool v) { return IntImm::make(DataType::boolean(), v ? 1 : 0); }
inline Expr make_var(std::string name) { return Variable::make(DataType::i32(), std::move(name)); }
// The constant value of an IntImm, or null.
const int64_t* as_const_int(const Expr& e);
bool is_const(const Expr& e, int64_t v);
bool is_const(const Expr& e);
// The zero / lowest / highest value of a type (for reduction identities).
Expr make_zero(DataType t);
Expr make_lowest(DataType t);
Expr make_highest(DataType t);

}  // namespace tensorgym
