#include "codegen/ir/expr.h"

#include <cassert>
#include <cmath>
#include <limits>
#include <vector>

namespace tensorgym {
namespace {

[[maybe_unused]] bool same_type(const Expr& a, const Expr& b) { return a.defined() && b.defined() && a.type() == b.type(); }

DataType bool_like(DataType t) { return DataType::boolean().with_lanes(t.lanes); }

}  // namespace

namespace {
// Small i32 and bool constants are shared: lowering makes millions of them.
constexpr int64_t kCachedMin = -256, kCachedMax = 4096;
const std::vector<Expr>& cached_i32() {
  static const std::vector<Expr> cache = [] {
    std::vector<Expr> c;
    for (int64_t v = kCachedMin; v <= kCachedMax; ++v) c.push_back(Expr(new IntImm(DataType::i32(), v)));
    return c;
  }();
  return cache;
}
}  // namespace

int64_t IntImm::wrap(DataType t, int64_t v) {
  if (t.is_bool()) return v != 0;
  if (t.bits < 64) {
    // Two's complement at the type's width.
    const int shift = 64 - t.bits;
    uint64_t u = uint64_t(v) << shift;
    return t.code == TypeCode::kInt ? int64_t(u) >> shift : int64_t(u >> shift);
  }
  return v;
}

Expr IntImm::make(DataType t, int64_t v) {
  assert(!t.is_float() && t.is_scalar());
  if (t == DataType::i32() && v >= kCachedMin && v <= kCachedMax) return cached_i32()[size_t(v - kCachedMin)];
  return new IntImm(t, wrap(t, v));
}

Expr FloatImm::make(DataType t, double v) {
  assert(t.is_float() && t.is_scalar());
  if (t.bits == 32) v = double(float(v));
  return new FloatImm(t, v);
}

Expr Variable::make(DataType t, std::string name) { return new Variable(t, std::move(name)); }

Expr Cast::make(DataType t, Expr v) {
  assert(v.defined() && t.lanes == v.type().lanes);
  return new Cast(t, std::move(v));
}

#define TG_ARITH_MAKE(Node)                             \
  Expr Node::make(Expr a, Expr b) {                     \
    assert(same_type(a, b));                            \
    DataType t = a.type();                              \
    return new Node(t, std::move(a), std::move(b));     \
  }
TG_ARITH_MAKE(Add)
TG_ARITH_MAKE(Sub)
TG_ARITH_MAKE(Mul)
TG_ARITH_MAKE(Div)
TG_ARITH_MAKE(Mod)
TG_ARITH_MAKE(Min)
TG_ARITH_MAKE(Max)
#undef TG_ARITH_MAKE

#define TG_CMP_MAKE(Node)                                      \
  Expr Node::make(Expr a, Expr b) {                            \
    assert(same_type(a, b));                                   \
    DataType t = bool_like(a.type());                          \
    return new Node(t, std::move(a), std::move(b));            \
  }
TG_CMP_MAKE(EQ)
TG_CMP_MAKE(NE)
TG_CMP_MAKE(LT)
TG_CMP_MAKE(LE)
TG_CMP_MAKE(GT)
TG_CMP_MAKE(GE)
#undef TG_CMP_MAKE

Expr And::make(Expr a, Expr b) {
  assert(same_type(a, b) && a.type().is_bool());
  DataType t = a.type();
  return new And(t, std::move(a), std::move(b));
}

Expr Or::make(Expr a, Expr b) {
  assert(same_type(a, b) && a.type().is_bool());
  DataType t = a.type();
  return new Or(t, std::move(a), std::move(b));
}

Expr Not::make(Expr a) {
  assert(a.defined() && a.type().is_bool());
  DataType t = a.type();
  return new Not(t, std::move(a));
}

Expr Select::make(Expr c, Expr t, Expr f) {
  assert(c.defined() && c.type().is_bool() && same_type(t, f));
  DataType ty = t.type();
  return new Select(ty, std::move(c), std::move(t), std::move(f));
}

Expr Load::make(DataType t, std::string name, std::vector<Expr> indices) {
  return new Load(t, std::move(name), std::move(indices));
}

const char* call_op_name(CallOp op) {
  switch (op) {
    case CallOp::kAbs: return "abs";
    case CallOp::kExp: return "exp";
    case CallOp::kLog: return "log";
    case CallOp::kSqrt: return "sqrt";
    case CallOp::kTanh: return "tanh";
  }
  return "?";
}

Expr Call::make(CallOp op, std::vector<Expr> args) {
  assert(args.size() == 1 && args[0].defined());
  DataType t = args[0].type();
  return new Call(t, op, std::move(args));
}

Expr Ramp::make(Expr base, Expr stride, int lanes) {
  assert(same_type(base, stride) && base.type().is_scalar() && lanes > 1);
  DataType t = base.type().with_lanes(lanes);
  return new Ramp(t, std::move(base), std::move(stride), lanes);
}

Expr Broadcast::make(Expr value, int lanes) {
  assert(value.defined() && value.type().is_scalar() && lanes > 1);
  DataType t = value.type().with_lanes(lanes);
  return new Broadcast(t, std::move(value), lanes);
}

const int64_t* as_const_int(const Expr& e) {
  const IntImm* imm = e.as<IntImm>();
  return imm ? &imm->value : nullptr;
}

bool is_const(const Expr& e, int64_t v) {
  if (const IntImm* i = e.as<IntImm>()) return i->value == v;
  if (const FloatImm* f = e.as<FloatImm>()) return f->value == double(v);
  return false;
}

bool is_const(const Expr& e) { return e.as<IntImm>() || e.as<FloatImm>(); }

Expr make_zero(DataType t) {
  return t.is_float() ? FloatImm::make(t, 0.0) : IntImm::make(t, 0);
}

Expr make_lowest(DataType t) {
  if (t.is_float()) return FloatImm::make(t, -std::numeric_limits<double>::infinity());
  if (t.is_bool()) return make_bool(false);
  if (t.code == TypeCode::kUInt) return IntImm::make(t, 0);
  return IntImm::make(t, t.bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (t.bits - 1)));
}

Expr make_highest(DataType t) {
  if (t.is_float()) return FloatImm::make(t, std::numeric_limits<double>::infinity());
  if (t.is_bool()) return make_bool(true);
  if (t.code == TypeCode::kUInt) return IntImm::make(t, t.bits == 64 ? -1 : int64_t((uint64_t(1) << t.bits) - 1));
  return IntImm::make(t, t.bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t(1) << (t.bits - 1)) - 1);
}

}  // namespace tensorgym
