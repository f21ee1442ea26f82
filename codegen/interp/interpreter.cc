#include "codegen/interp/interpreter.h"

#include <algorithm>
#include <functional>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "codegen/ir/ir_printer.h"
#include "codegen/ir/ir_visitor.h"
#include "codegen/lower/gpu_launch.h"
#include "support/random.h"

namespace tensorgym {

// ---------------------------------------------------------------------------------
// Scalar semantics.

namespace scalar_semantics {

int64_t float_to_int(double v, DataType t) {
  if (t.is_bool()) return v != 0.0;
  if (std::isnan(v)) return 0;
  double lo, hi;
  int64_t ilo, ihi;
  if (t.code == TypeCode::kUInt) {
    ilo = 0;
    ihi = t.bits >= 64 ? std::numeric_limits<int64_t>::max() : int64_t((uint64_t(1) << t.bits) - 1);
  } else if (t.bits >= 64) {
    ilo = std::numeric_limits<int64_t>::min();
    ihi = std::numeric_limits<int64_t>::max();
  } else {
    ilo = -(int64_t(1) << (t.bits - 1));
    ihi = (int64_t(1) << (t.bits - 1)) - 1;
  }
  lo = double(ilo);
  hi = double(ihi);  // 2^63 for i64: v >= hi then covers every v that does not fit
  if (v <= lo) return ilo;
  if (v >= hi) return ihi;
  return int64_t(v);  // truncates toward zero
}

Value cast(Value v, DataType from, DataType to) {
  Value out;
  out.i = 0;
  if (from.is_float()) {
    const double x = from.bits == 32 ? double(v.f32) : v.f64;
    if (to.is_float()) {
      if (to.bits == 32) {
        out.f32 = float(x);
      } else {
        out.f64 = x;
      }
    } else {
      out.i = float_to_int(x, to);
    }
    return out;
  }
  const int64_t x = v.i;
  if (to.is_float()) {
    if (to.bits == 32) {
      out.f32 = float(x);
    } else {
      out.f64 = double(x);
    }
  } else if (to.is_bool()) {
    out.i = x != 0;
  } else {
    out.i = wrap_int(x, to);
  }
  return out;
}

namespace {

template <class F>
bool float_binary(NodeKind kind, F a, F b, F* r, int64_t* cmp) {
  switch (kind) {
    case NodeKind::kAdd: *r = a + b; return true;
    case NodeKind::kSub: *r = a - b; return true;
    case NodeKind::kMul: *r = a * b; return true;
    case NodeKind::kDiv: *r = a / b; return true;
    case NodeKind::kMod: *r = float_mod(a, b); return true;
    case NodeKind::kMin: *r = float_min(a, b); return true;
    case NodeKind::kMax: *r = float_max(a, b); return true;
    case NodeKind::kEQ: *cmp = a == b; return false;
    case NodeKind::kNE: *cmp = a != b; return false;
    case NodeKind::kLT: *cmp = a < b; return false;
    case NodeKind::kLE: *cmp = a <= b; return false;
    case NodeKind::kGT: *cmp = a > b; return false;
    case NodeKind::kGE: *cmp = a >= b; return false;
    default: *cmp = 0; return false;
  }
}

}  // namespace

bool binary(NodeKind kind, DataType t, Value a, Value b, Value* out) {
  out->i = 0;
  if (t.is_float()) {
    int64_t cmp = 0;
    if (t.bits == 32) {
      float r = 0;
      if (float_binary(kind, a.f32, b.f32, &r, &cmp)) {
        out->f32 = r;
      } else {
        out->i = cmp;
      }
    } else {
      double r = 0;
      if (float_binary(kind, a.f64, b.f64, &r, &cmp)) {
        out->f64 = r;
      } else {
        out->i = cmp;
      }
    }
    return true;
  }
  const int bits = t.bits;
  const bool sgn = t.code == TypeCode::kInt;
  const int64_t x = a.i, y = b.i;
  switch (kind) {
    case NodeKind::kAdd: out->i = wrap_int(int64_t(uint64_t(x) + uint64_t(y)), bits, sgn); break;
    case NodeKind::kSub: out->i = wrap_int(int64_t(uint64_t(x) - uint64_t(y)), bits, sgn); break;
    case NodeKind::kMul: out->i = wrap_int(int64_t(uint64_t(x) * uint64_t(y)), bits, sgn); break;
    case NodeKind::kDiv:
      if (y == 0) return false;
      out->i = int_div(x, y, bits, sgn);
      break;
    case NodeKind::kMod:
      if (y == 0) return false;
      out->i = int_mod(x, y);
      break;
    case NodeKind::kMin: out->i = x < y ? x : y; break;
    case NodeKind::kMax: out->i = x < y ? y : x; break;
    case NodeKind::kEQ: out->i = x == y; break;
    case NodeKind::kNE: out->i = x != y; break;
    case NodeKind::kLT: out->i = x < y; break;
    case NodeKind::kLE: out->i = x <= y; break;
    case NodeKind::kGT: out->i = x > y; break;
    case NodeKind::kGE: out->i = x >= y; break;
    case NodeKind::kAnd: out->i = (x != 0) && (y != 0); break;
    case NodeKind::kOr: out->i = (x != 0) || (y != 0); break;
    default: break;
  }
  return true;
}

namespace {

template <class F>
F float_call(CallOp op, F x) {
  switch (op) {
    case CallOp::kAbs: return std::fabs(x);
    case CallOp::kExp: return std::exp(x);
    case CallOp::kLog: return std::log(x);
    case CallOp::kSqrt: return std::sqrt(x);
    case CallOp::kTanh: return std::tanh(x);
  }
  return x;
}

}  // namespace

Value call(CallOp op, DataType t, Value a) {
  Value out;
  out.i = 0;
  if (t.is_float()) {
    if (t.bits == 32) {
      out.f32 = float_call<float>(op, a.f32);
    } else {
      out.f64 = float_call<double>(op, a.f64);
    }
    return out;
  }
  // Integers: only abs is defined (the checkers reject the others).
  out.i = a.i < 0 ? wrap_int(int64_t(0 - uint64_t(a.i)), t) : a.i;
  return out;
}

double to_double(Value v, DataType t) {
  if (t.is_float()) return t.bits == 32 ? double(v.f32) : v.f64;
  return double(v.i);
}

}  // namespace scalar_semantics

// ---------------------------------------------------------------------------------
// The compiled form: a register machine. Every expression node writes its own
// register (so no register is ever reused within one evaluation), variables are
// registers, constants are registers filled before the run, buffers are indices
// into a table. Control flow (loops, if, select) is jumps.

namespace {

using scalar_semantics::Value;
using scalar_semantics::wrap_int;

#define TG_INTERP_OPS(X)                                                                 \
  X(Halt) X(Mov) X(Jump) X(JumpIfZero) X(If) X(LoopBegin) X(LoopEnd) X(Alloc)          \
  /* sampled block loops (InterpreterOptions::sample_blocks) */                         \
  X(SampleCount) X(SamplePick) X(SampleCheck)                                           \
  /* i32 fast paths */                                                                  \
  X(AddI32) X(SubI32) X(MulI32)                                                         \
  /* any integer type (wrapped with bits / is_signed) */                                \
  X(AddInt) X(SubInt) X(MulInt) X(DivInt) X(ModInt) X(MinInt) X(MaxInt)                 \
  X(EqInt) X(NeInt) X(LtInt) X(LeInt) X(GtInt) X(GeInt) X(And) X(Or) X(Not) X(AbsInt)   \
  X(AddF32) X(SubF32) X(MulF32) X(DivF32) X(ModF32) X(MinF32) X(MaxF32)                 \
  X(EqF32) X(NeF32) X(LtF32) X(LeF32) X(GtF32) X(GeF32)                                 \
  X(AbsF32) X(ExpF32) X(LogF32) X(SqrtF32) X(TanhF32)                                   \
  X(AddF64) X(SubF64) X(MulF64) X(DivF64) X(ModF64) X(MinF64) X(MaxF64)                 \
  X(EqF64) X(NeF64) X(LtF64) X(LeF64) X(GtF64) X(GeF64)                                 \
  X(AbsF64) X(ExpF64) X(LogF64) X(SqrtF64) X(TanhF64)                                   \
  X(Cast) /* generic, through scalar_semantics::cast */                                 \
  X(CastIntToF32) X(CastIntToF64) X(CastF32ToF64) X(CastF64ToF32) X(WrapInt)            \
  X(LoadI8) X(LoadU8) X(LoadBool) X(LoadI16) X(LoadU16) X(LoadI32) X(LoadU32)           \
  X(LoadI64) X(LoadF32) X(LoadF64)                                                      \
  X(Store8) X(StoreBool) X(Store16) X(Store32) X(Store64) X(StoreF32) X(StoreF64)

enum Op : uint16_t {
#define TG_OP_ENUM(name) k##name,
  TG_INTERP_OPS(TG_OP_ENUM)
#undef TG_OP_ENUM
};

struct Instr {
  Op op = kHalt;
  uint8_t bits = 0;       // integer width for the *Int ops
  uint8_t is_signed = 0;  // signedness for the *Int ops
  int32_t dst = 0, a = 0, b = 0;
  int32_t aux = 0;     // buffer index; for LoopBegin the end register
  int32_t target = 0;  // jump target
  DataType from, to;   // for kCast
};

struct BufferInfo {
  std::string name;
  DataType dtype;
  int64_t size = 0;  // elements; for arguments set per run
  bool read_only = false;
  int alloc_index = -1;  // index into the owned allocation storage, or -1 for args
};

struct RuntimeBuffer {
  std::byte* data = nullptr;
  int64_t size = 0;
};

struct ScopeVar {
  std::string name;
  int reg;
  DataType type;
};

bool is_i32(DataType t) { return t.code == TypeCode::kInt && t.bits == 32 && t.lanes == 1; }

// Stores and loads by buffer name, and the names allocated, within a statement.
struct NameUses : IRVisitor {
  std::map<std::string, int64_t> stores, loads;
  std::set<std::string> allocated;
  void visit(const Store* op) override {
    ++stores[op->name];
    IRVisitor::visit(op);
  }
  void visit(const Load* op) override {
    ++loads[op->name];
    IRVisitor::visit(op);
  }
  void visit(const Allocate* op) override {
    allocated.insert(op->name);
    IRVisitor::visit(op);
  }
};

// The kernels whose blocks may be sampled: each global buffer they store to is a nest
// output that nothing outside the kernel stores to or loads (so no other statement
// sees the blocks left out, and every written point is final).
std::set<const For*> sampleable_kernels(const LoopNest& nest) {
  std::set<const For*> kernels;
  if (!nest.body.defined()) return kernels;
  std::set<std::string> outputs;
  for (const BufferArg& o : nest.outputs) outputs.insert(o.name);
  NameUses all;
  all.visit_stmt(nest.body);
  for_each_kernel(nest.body, [&](const For* kernel) {
    NameUses in;
    in.IRVisitor::visit(kernel);
    bool writes_output = false, ok = true;
    for (const auto& [name, count] : in.stores) {
      if (in.allocated.count(name)) continue;  // its own local or shared buffer
      writes_output = true;
      ok = ok && outputs.count(name) && all.stores[name] == count && all.loads[name] == in.loads[name];
    }
    if (ok && writes_output) kernels.insert(kernel);
  });
  return kernels;
}

// Iteration k of the n (< extent) sampled ones: 0 and extent - 1 at the ends, and in
// between one random iteration of each of n - 2 equal stretches of [1, extent - 1),
// so the picks are distinct.
int64_t sample_pick(int64_t k, int64_t n, int64_t extent, uint64_t seed, uint64_t salt) {
  if (n >= extent) return k;
  if (k == 0) return 0;
  if (k == n - 1) return extent - 1;
  const int64_t inner = n - 2, span = extent - 2;
  const int64_t lo = 1 + (k - 1) * span / inner, hi = 1 + k * span / inner;
  Rng rng(seed * 0x9e3779b97f4a7c15ull + salt * 1000003ull + uint64_t(k));
  return lo + int64_t(rng.below(uint64_t(hi - lo)));
}

}  // namespace

struct CompiledNest::Impl {
  LoopNest nest;  // kept for argument checks (and to keep the nodes alive)
  InterpreterOptions options;
  std::vector<Instr> code;
  std::vector<const IRNode*> origin;  // per instruction, the node it came from (for errors)
  std::vector<Value> initial_regs;
  std::vector<BufferInfo> buffers;   // args first (inputs then outputs), then allocations
  std::vector<HostBuffer> allocations;
  std::vector<RuntimeBuffer> runtime;

  Status execute(int64_t* steps_out);
  Status out_of_bounds(const Instr& in, int64_t index, bool store) const;
  Status division_by_zero(size_t pc) const;
};

namespace {

class Compiler {
 public:
  explicit Compiler(CompiledNest::Impl* impl) : m_(impl) {}

  Status compile_body(const Stmt& body) {
    const LoopNest& nest = m_->nest;
    for (const BufferArg& arg : nest.inputs) TG_RETURN_IF_ERROR(add_arg(arg, true));
    for (const BufferArg& arg : nest.outputs) TG_RETURN_IF_ERROR(add_arg(arg, false));
    if (m_->options.sample_blocks > 0) {
      sampleable_ = sampleable_kernels(nest);
      written_ = new_reg();
      zero_ = new_reg();
      one_ = new_reg();
      m_->initial_regs[size_t(one_)].i = 1;
    }
    if (body.defined()) TG_RETURN_IF_ERROR(stmt(body));
    emit(kHalt, nullptr);
    return Status();
  }

 private:
  Status add_arg(const BufferArg& arg, bool read_only) {
    if (!is_supported_element_type(arg.dtype))
      return unimplemented("buffer " + arg.name + " has type " + arg.dtype.str() + ", which the interpreter does not support");
    for (int64_t d : arg.shape)
      if (d < 0) return invalid_argument("buffer " + arg.name + " has a negative dimension");
    m_->buffers.push_back({arg.name, arg.dtype, 0, read_only, -1});
    buffer_scope_.push_back({arg.name, int(m_->buffers.size()) - 1});
    return Status();
  }

  int new_reg() {
    m_->initial_regs.push_back(Value{0});
    return int(m_->initial_regs.size()) - 1;
  }

  Instr& emit(Op op, const IRNode* origin) {
    m_->code.emplace_back();
    m_->origin.push_back(origin);
    Instr& in = m_->code.back();
    in.op = op;
    return in;
  }

  int here() const { return int(m_->code.size()); }

  Status check_scalar(const Expr& e) {
    DataType t = e.type();
    if (t.is_vector() || e.kind() == NodeKind::kRamp || e.kind() == NodeKind::kBroadcast)
      return unimplemented("vector expression " + to_string(e) + " (" + t.str() +
                           ") is not supported by the interpreter yet");
    if (!is_supported_element_type(t))
      return unimplemented("type " + t.str() + " of " + to_string(e) + " is not supported by the interpreter");
    return Status();
  }

  Status mismatch(const Expr& e, const std::string& what) {
    return invalid_argument("type mismatch in " + to_string(e) + ": " + what);
  }

  int find_buffer(const std::string& name) const {
    for (size_t i = buffer_scope_.size(); i-- > 0;)
      if (buffer_scope_[i].first == name) return buffer_scope_[i].second;
    return -1;
  }

  // ---- expressions ----

  Status expr(const Expr& e, int* out) {
    TG_RETURN_IF_ERROR(check_scalar(e));
    const DataType t = e.type();
    switch (e.kind()) {
      case NodeKind::kIntImm: {
        int r = new_reg();
        m_->initial_regs[size_t(r)].i = wrap_int(e.as<IntImm>()->value, t);
        *out = r;
        return Status();
      }
      case NodeKind::kFloatImm: {
        int r = new_reg();
        double v = e.as<FloatImm>()->value;
        if (t.bits == 32) {
          m_->initial_regs[size_t(r)].f32 = float(v);
        } else {
          m_->initial_regs[size_t(r)].f64 = v;
        }
        *out = r;
        return Status();
      }
      case NodeKind::kVariable: {
        const Variable* v = e.as<Variable>();
        for (size_t i = var_scope_.size(); i-- > 0;) {
          if (var_scope_[i].name != v->name) continue;
          if (var_scope_[i].type != t)
            return invalid_argument("variable " + v->name + " is used as " + t.str() + " but bound as " +
                                    var_scope_[i].type.str());
          *out = var_scope_[i].reg;
          return Status();
        }
        return invalid_argument("unbound variable " + v->name);
      }
      case NodeKind::kCast: return cast(e.as<Cast>(), out);
      case NodeKind::kAdd: return arith(e, e.as<Add>()->a, e.as<Add>()->b, out);
      case NodeKind::kSub: return arith(e, e.as<Sub>()->a, e.as<Sub>()->b, out);
      case NodeKind::kMul: return arith(e, e.as<Mul>()->a, e.as<Mul>()->b, out);
      case NodeKind::kDiv: return arith(e, e.as<Div>()->a, e.as<Div>()->b, out);
      case NodeKind::kMod: return arith(e, e.as<Mod>()->a, e.as<Mod>()->b, out);
      case NodeKind::kMin: return arith(e, e.as<Min>()->a, e.as<Min>()->b, out);
      case NodeKind::kMax: return arith(e, e.as<Max>()->a, e.as<Max>()->b, out);
      case NodeKind::kEQ: return compare(e, e.as<EQ>()->a, e.as<EQ>()->b, out);
      case NodeKind::kNE: return compare(e, e.as<NE>()->a, e.as<NE>()->b, out);
      case NodeKind::kLT: return compare(e, e.as<LT>()->a, e.as<LT>()->b, out);
      case NodeKind::kLE: return compare(e, e.as<LE>()->a, e.as<LE>()->b, out);
      case NodeKind::kGT: return compare(e, e.as<GT>()->a, e.as<GT>()->b, out);
      case NodeKind::kGE: return compare(e, e.as<GE>()->a, e.as<GE>()->b, out);
      case NodeKind::kAnd: return logic(e, e.as<And>()->a, e.as<And>()->b, kAnd, out);
      case NodeKind::kOr: return logic(e, e.as<Or>()->a, e.as<Or>()->b, kOr, out);
      case NodeKind::kNot: {
        const Not* n = e.as<Not>();
        if (!n->a.type().is_bool() || !t.is_bool()) return mismatch(e, "! needs a bool");
        int a;
        TG_RETURN_IF_ERROR(expr(n->a, &a));
        Instr& in = emit(kNot, e.get());
        in.a = a;
        in.dst = *out = new_reg();
        return Status();
      }
      case NodeKind::kSelect: return select(e.as<Select>(), out);
      case NodeKind::kLoad: return load(e.as<Load>(), out);
      case NodeKind::kCall: return call(e.as<Call>(), out);
      default: return internal_error("interpreter: unexpected node in " + to_string(e));
    }
  }

  Status cast(const Cast* c, int* out) {
    TG_RETURN_IF_ERROR(check_scalar(c->value));
    const DataType from = c->value.type(), to = c->type;
    int a;
    TG_RETURN_IF_ERROR(expr(c->value, &a));
    Op op = kCast;
    if (!from.is_float() && to.is_float()) {
      op = to.bits == 32 ? kCastIntToF32 : kCastIntToF64;
    } else if (from.is_float() && to.is_float()) {
      op = from.bits == to.bits ? kMov : (to.bits == 64 ? kCastF32ToF64 : kCastF64ToF32);
    } else if (!from.is_float() && !to.is_float() && !to.is_bool()) {
      op = kWrapInt;
    }
    Instr& in = emit(op, c);
    in.a = a;
    in.from = from;
    in.to = to;
    in.bits = to.bits;
    in.is_signed = to.code == TypeCode::kInt;
    in.dst = *out = new_reg();
    return Status();
  }

  Status operands(const Expr& e, const Expr& a, const Expr& b, int* ra, int* rb) {
    TG_RETURN_IF_ERROR(check_scalar(a));
    TG_RETURN_IF_ERROR(check_scalar(b));
    if (a.type() != b.type())
      return mismatch(e, "operands are " + a.type().str() + " and " + b.type().str());
    TG_RETURN_IF_ERROR(expr(a, ra));
    return expr(b, rb);
  }

  Status arith(const Expr& e, const Expr& a, const Expr& b, int* out) {
    int ra, rb;
    TG_RETURN_IF_ERROR(operands(e, a, b, &ra, &rb));
    const DataType t = a.type();
    if (e.type() != t) return mismatch(e, "result type " + e.type().str() + " differs from the operands'");
    const int k = int(e.kind()) - int(NodeKind::kAdd);  // Add, Sub, Mul, Div, Mod, Min, Max
    Op op;
    if (t.is_float()) {
      static constexpr Op f32[] = {kAddF32, kSubF32, kMulF32, kDivF32, kModF32, kMinF32, kMaxF32};
      static constexpr Op f64[] = {kAddF64, kSubF64, kMulF64, kDivF64, kModF64, kMinF64, kMaxF64};
      op = t.bits == 32 ? f32[k] : f64[k];
    } else {
      static constexpr Op i32[] = {kAddI32, kSubI32, kMulI32, kDivInt, kModInt, kMinInt, kMaxInt};
      static constexpr Op any[] = {kAddInt, kSubInt, kMulInt, kDivInt, kModInt, kMinInt, kMaxInt};
      op = is_i32(t) ? i32[k] : any[k];
    }
    Instr& in = emit(op, e.get());
    in.a = ra;
    in.b = rb;
    in.bits = t.bits;
    in.is_signed = t.code == TypeCode::kInt;
    in.dst = *out = new_reg();
    return Status();
  }

  Status compare(const Expr& e, const Expr& a, const Expr& b, int* out) {
    int ra, rb;
    TG_RETURN_IF_ERROR(operands(e, a, b, &ra, &rb));
    if (!e.type().is_bool()) return mismatch(e, "a comparison must be bool");
    const DataType t = a.type();
    const int k = int(e.kind()) - int(NodeKind::kEQ);  // EQ, NE, LT, LE, GT, GE
    static constexpr Op ints[] = {kEqInt, kNeInt, kLtInt, kLeInt, kGtInt, kGeInt};
    static constexpr Op f32[] = {kEqF32, kNeF32, kLtF32, kLeF32, kGtF32, kGeF32};
    static constexpr Op f64[] = {kEqF64, kNeF64, kLtF64, kLeF64, kGtF64, kGeF64};
    Op op = !t.is_float() ? ints[k] : t.bits == 32 ? f32[k] : f64[k];
    Instr& in = emit(op, e.get());
    in.a = ra;
    in.b = rb;
    in.dst = *out = new_reg();
    return Status();
  }

  Status logic(const Expr& e, const Expr& a, const Expr& b, Op op, int* out) {
    int ra, rb;
    TG_RETURN_IF_ERROR(operands(e, a, b, &ra, &rb));
    if (!a.type().is_bool() || !e.type().is_bool()) return mismatch(e, "&& and || need bools");
    Instr& in = emit(op, e.get());
    in.a = ra;
    in.b = rb;
    in.dst = *out = new_reg();
    return Status();
  }

  Status select(const Select* s, int* out) {
    TG_RETURN_IF_ERROR(check_scalar(s->condition));
    TG_RETURN_IF_ERROR(check_scalar(s->true_value));
    TG_RETURN_IF_ERROR(check_scalar(s->false_value));
    if (!s->condition.type().is_bool()) return mismatch(s, "the select condition must be bool");
    if (s->true_value.type() != s->type || s->false_value.type() != s->type)
      return mismatch(s, "select sides are " + s->true_value.type().str() + " and " + s->false_value.type().str());
    int c;
    TG_RETURN_IF_ERROR(expr(s->condition, &c));
    const int dst = new_reg();
    const int jz = here();
    emit(kJumpIfZero, s).a = c;
    int rt;
    TG_RETURN_IF_ERROR(expr(s->true_value, &rt));
    Instr& mt = emit(kMov, s);
    mt.dst = dst;
    mt.a = rt;
    const int jend = here();
    emit(kJump, s);
    m_->code[size_t(jz)].target = here();
    int rf;
    TG_RETURN_IF_ERROR(expr(s->false_value, &rf));
    Instr& mf = emit(kMov, s);
    mf.dst = dst;
    mf.a = rf;
    m_->code[size_t(jend)].target = here();
    *out = dst;
    return Status();
  }

  Status index_of(const std::string& what, const std::string& name, const std::vector<Expr>& indices,
                  int* out) {
    if (indices.size() != 1)
      return invalid_argument(
          fmt::format("{} {} has {} indices; the interpreter needs one flat index (run storage flattening first)", what,
                      name, indices.size()));
    const Expr& idx = indices[0];
    TG_RETURN_IF_ERROR(check_scalar(idx));
    if (idx.type().code != TypeCode::kInt)
      return invalid_argument(what + " " + name + " has a non-integer index " + to_string(idx));
    return expr(idx, out);
  }

  Status load(const Load* l, int* out) {
    const int buf = find_buffer(l->name);
    if (buf < 0) return invalid_argument("load from unknown buffer " + l->name);
    const BufferInfo& info = m_->buffers[size_t(buf)];
    if (info.dtype != l->type)
      return invalid_argument("load from " + l->name + " as " + l->type.str() + ", but the buffer is " +
                              info.dtype.str());
    int idx;
    TG_RETURN_IF_ERROR(index_of("load from", l->name, l->indices, &idx));
    const DataType t = info.dtype;
    Op op;
    if (t.is_float()) {
      op = t.bits == 32 ? kLoadF32 : kLoadF64;
    } else if (t.is_bool()) {
      op = kLoadBool;
    } else if (t.code == TypeCode::kInt) {
      op = t.bits == 8 ? kLoadI8 : t.bits == 16 ? kLoadI16 : t.bits == 32 ? kLoadI32 : kLoadI64;
    } else {
      op = t.bits == 8 ? kLoadU8 : t.bits == 16 ? kLoadU16 : kLoadU32;
    }
    Instr& in = emit(op, l);
    in.a = idx;
    in.aux = buf;
    in.dst = *out = new_reg();
    return Status();
  }

  Status call(const Call* c, int* out) {
    if (c->args.size() != 1) return invalid_argument(std::string(call_op_name(c->op)) + " takes one argument");
    TG_RETURN_IF_ERROR(check_scalar(c->args[0]));
    const DataType t = c->type;
    if (c->args[0].type() != t) return mismatch(c, "argument and result types differ");
    if (!t.is_float() && c->op != CallOp::kAbs)
      return invalid_argument(std::string(call_op_name(c->op)) + " of integer type " + t.str() + " in " +
                              to_string(Expr(c)));
    int a;
    TG_RETURN_IF_ERROR(expr(c->args[0], &a));
    Op op = kAbsInt;
    if (t.is_float()) {
      const int k = int(c->op);  // abs, exp, log, sqrt, tanh
      static constexpr Op f32[] = {kAbsF32, kExpF32, kLogF32, kSqrtF32, kTanhF32};
      static constexpr Op f64[] = {kAbsF64, kExpF64, kLogF64, kSqrtF64, kTanhF64};
      op = t.bits == 32 ? f32[k] : f64[k];
    }
    Instr& in = emit(op, c);
    in.a = a;
    in.bits = t.bits;
    in.is_signed = t.code == TypeCode::kInt;
    in.dst = *out = new_reg();
    return Status();
  }

  // ---- statements ----

  Status stmt(const Stmt& s) {
    switch (s.kind()) {
      case NodeKind::kLetStmt: {
        const LetStmt* l = s.as<LetStmt>();
        TG_RETURN_IF_ERROR(check_scalar(l->value));
        int r;
        TG_RETURN_IF_ERROR(expr(l->value, &r));
        // Registers are never overwritten within the let's body (each node writes
        // its own), so the name can alias the value's register.
        var_scope_.push_back({l->name, r, l->value.type()});
        Status st = stmt(l->body);
        var_scope_.pop_back();
        return st;
      }
      case NodeKind::kFor: {
        const For* f = s.as<For>();
        if (!is_i32(f->min.type()) || !is_i32(f->extent.type()))
          return invalid_argument("loop " + f->name + " needs i32 min and extent");
        const bool kernel = !in_kernel_ && is_launch_loop(f);
        if (kernel) {
          in_kernel_ = true;
          sampling_ = sampleable_.count(f) > 0;
        }
        Status st = (sampling_ && parse_gpu_tag(f->thread_tag).dim == GpuDim::kBlock) ? sampled_loop(f) : loop(f);
        if (kernel) in_kernel_ = sampling_ = false;
        return st;
      }
      case NodeKind::kStore: {
        const Store* st = s.as<Store>();
        const int buf = find_buffer(st->name);
        if (buf < 0) return invalid_argument("store to unknown buffer " + st->name);
        const BufferInfo& info = m_->buffers[size_t(buf)];
        if (info.read_only) return invalid_argument("store to input " + st->name);
        TG_RETURN_IF_ERROR(check_scalar(st->value));
        if (st->value.type() != info.dtype)
          return invalid_argument("store of " + st->value.type().str() + " to " + st->name + ", which is " +
                                  info.dtype.str());
        int idx, val;
        TG_RETURN_IF_ERROR(index_of("store to", st->name, st->indices, &idx));
        TG_RETURN_IF_ERROR(expr(st->value, &val));
        const DataType t = info.dtype;
        Op op;
        if (t.is_float()) {
          op = t.bits == 32 ? kStoreF32 : kStoreF64;
        } else if (t.is_bool()) {
          op = kStoreBool;
        } else {
          op = t.bits == 8 ? kStore8 : t.bits == 16 ? kStore16 : t.bits == 32 ? kStore32 : kStore64;
        }
        const bool to_output = info.alloc_index < 0;
        Instr& in = emit(op, st);
        in.a = idx;
        in.b = val;
        in.aux = buf;
        if (sampling_ && to_output) {
          Instr& count = emit(kAddInt, st);
          count.dst = count.a = written_;
          count.b = one_;
          count.bits = 64;
          count.is_signed = 1;
        }
        return Status();
      }
      case NodeKind::kAllocate: {
        const Allocate* a = s.as<Allocate>();
        if (!is_supported_element_type(a->dtype))
          return unimplemented("allocation " + a->name + " has type " + a->dtype.str() +
                               ", which the interpreter does not support");
        int64_t n = 1;
        for (int64_t e : a->extents) {
          if (e < 0) return invalid_argument("allocation " + a->name + " has a negative extent");
          if (e > 0 && n > m_->options.max_allocation_bytes / e)
            return resource_exhausted("allocation " + a->name + " is too large");
          n *= e;
        }
        allocated_bytes_ += n * a->dtype.bytes();
        if (allocated_bytes_ > m_->options.max_allocation_bytes)
          return resource_exhausted(fmt::format("allocations need {} bytes, over the interpreter's cap of {}",
                                                allocated_bytes_, m_->options.max_allocation_bytes));
        m_->allocations.emplace_back(a->dtype, std::vector<int64_t>{n});
        m_->buffers.push_back({a->name, a->dtype, n, false, int(m_->allocations.size()) - 1});
        const int buf = int(m_->buffers.size()) - 1;
        emit(kAlloc, a).aux = buf;
        buffer_scope_.push_back({a->name, buf});
        Status st = stmt(a->body);
        buffer_scope_.pop_back();
        return st;
      }
      case NodeKind::kIfThenElse: {
        const IfThenElse* i = s.as<IfThenElse>();
        TG_RETURN_IF_ERROR(check_scalar(i->condition));
        if (!i->condition.type().is_bool()) return invalid_argument("if condition " + to_string(i->condition) + " is not bool");
        int c;
        TG_RETURN_IF_ERROR(expr(i->condition, &c));
        const int jz = here();
        emit(kIf, i).a = c;
        TG_RETURN_IF_ERROR(stmt(i->then_case));
        if (i->else_case.defined()) {
          const int jend = here();
          emit(kJump, i);
          m_->code[size_t(jz)].target = here();
          TG_RETURN_IF_ERROR(stmt(i->else_case));
          m_->code[size_t(jend)].target = here();
        } else {
          m_->code[size_t(jz)].target = here();
        }
        return Status();
      }
      case NodeKind::kBlock:
        for (const Stmt& c : s.as<Block>()->stmts)
          if (c.defined()) TG_RETURN_IF_ERROR(stmt(c));
        return Status();
      case NodeKind::kBarrier:
        // Thread loops run one after the other and barriers sit outside them
        // (insert_gpu_barriers.cc): every write before it is already done.
        return Status();
      default: return internal_error("interpreter: unexpected statement kind");
    }
  }

  Status loop(const For* f) {
    int rmin, rext;
    TG_RETURN_IF_ERROR(expr(f->min, &rmin));
    TG_RETURN_IF_ERROR(expr(f->extent, &rext));
    const int var = new_reg();
    return counted_loop(f, var, rmin, rext, [&] { return loop_body(f, var); });
  }

  // A blockIdx loop of a sampled kernel: a counter k over the n sampled iterations,
  // the loop variable picked from k, and after each iteration a check that it stored
  // at least one output element (written_ counts output stores).
  Status sampled_loop(const For* f) {
    int rmin, rext;
    TG_RETURN_IF_ERROR(expr(f->min, &rmin));
    TG_RETURN_IF_ERROR(expr(f->extent, &rext));
    const int var = new_reg(), n = new_reg(), k = new_reg(), saved = new_reg();
    Instr& c = emit(kSampleCount, f);
    c.dst = n;
    c.a = rext;
    return counted_loop(f, k, zero_, n, [&]() -> Status {
      Instr& p = emit(kSamplePick, f);
      p.dst = var;
      p.a = k;
      p.b = rext;
      p.aux = n;
      p.target = rmin;  // not a jump: the loop's min
      Instr& mv = emit(kMov, f);
      mv.dst = saved;
      mv.a = written_;
      TG_RETURN_IF_ERROR(loop_body(f, var));
      Instr& chk = emit(kSampleCheck, f);
      chk.dst = var;
      chk.a = written_;
      chk.b = saved;
      return Status();
    });
  }

  // kLoopBegin / kLoopEnd around what `body` emits, counting `counter` from `lo` for
  // `count` iterations.
  Status counted_loop(const For* f, int counter, int lo, int count, const std::function<Status()>& body) {
    const int end = new_reg();
    const int begin = here();
    Instr& b = emit(kLoopBegin, f);
    b.dst = counter;
    b.a = lo;
    b.b = count;
    b.aux = end;
    const int body_start = here();
    TG_RETURN_IF_ERROR(body());
    Instr& e = emit(kLoopEnd, f);
    e.dst = counter;
    e.aux = end;
    e.target = body_start;
    m_->code[size_t(begin)].target = here();
    return Status();
  }

  // The loop's statements, with its variable in scope as `var`.
  Status loop_body(const For* f, int var) {
    var_scope_.push_back({f->name, var, DataType::i32()});
    Status st = stmt(f->body);
    var_scope_.pop_back();
    return st;
  }

  CompiledNest::Impl* m_;
  std::set<const For*> sampleable_;
  bool in_kernel_ = false, sampling_ = false;
  int written_ = -1, zero_ = -1, one_ = -1;  // registers of block sampling
  std::vector<ScopeVar> var_scope_;
  std::vector<std::pair<std::string, int>> buffer_scope_;
  int64_t allocated_bytes_ = 0;
};

[[gnu::noinline, gnu::cold]] Status step_limit(int64_t max_steps) {
  return resource_exhausted(fmt::format("interpreter step limit of {} exceeded", max_steps));
}

[[gnu::noinline, gnu::cold]] Status loop_overflow(const IRNode* node) {
  const For* f = static_cast<const For*>(node);
  return invalid_argument("loop " + f->name + " runs past the i32 range");
}

[[gnu::noinline, gnu::cold]] Status silent_block(const IRNode* node, int64_t block) {
  const For* f = static_cast<const For*>(node);
  return failed_precondition(fmt::format("sampled block {} = {} (loop {}) stored no output element", f->thread_tag,
                                         block, f->name));
}

}  // namespace

Status CompiledNest::Impl::out_of_bounds(const Instr& in, int64_t index, bool store) const {
  const BufferInfo& b = buffers[size_t(in.aux)];
  return invalid_argument(fmt::format("out of bounds {} {}: index {}, size {}", store ? "store to" : "load from", b.name,
                                      index, runtime[size_t(in.aux)].size));
}

Status CompiledNest::Impl::division_by_zero(size_t pc) const {
  const IRNode* n = origin[pc];
  std::string where = n ? to_string(Expr(static_cast<const BaseExprNode*>(n))) : std::string("?");
  return invalid_argument("integer division by zero in " + where);
}

Status CompiledNest::Impl::execute(int64_t* steps_out) {
  const Instr* const code = this->code.data();
  const Instr* ip = code;
  std::vector<Value> regs = initial_regs;
  Value* R = regs.data();
  RuntimeBuffer* const B = runtime.data();
  const int64_t max_steps = options.max_steps;
  int64_t steps = 0;
  Status status;

#define TG_STEP()                          \
  if (++steps > max_steps) {               \
    status = step_limit(max_steps);        \
    goto done;                             \
  }
#define TG_LOAD(T, field)                                                   \
  {                                                                         \
    const int64_t idx = R[in.a].i;                                          \
    const RuntimeBuffer& buf = B[in.aux];                                   \
    if (uint64_t(idx) >= uint64_t(buf.size)) {                              \
      status = out_of_bounds(in, idx, false);                               \
      goto done;                                                            \
    }                                                                       \
    R[in.dst].field = reinterpret_cast<const T*>(buf.data)[idx];            \
    break;                                                                  \
  }
#define TG_STORE(T, expr)                                                   \
  {                                                                         \
    TG_STEP();                                                              \
    const int64_t idx = R[in.a].i;                                          \
    const RuntimeBuffer& buf = B[in.aux];                                   \
    if (uint64_t(idx) >= uint64_t(buf.size)) {                              \
      status = out_of_bounds(in, idx, true);                                \
      goto done;                                                            \
    }                                                                       \
    reinterpret_cast<T*>(buf.data)[idx] = (expr);                           \
    break;                                                                  \
  }
#define TG_BIN(field, expr)      \
  {                              \
    const auto x = R[in.a].field; \
    const auto y = R[in.b].field; \
    R[in.dst].field = (expr);    \
    break;                       \
  }
#define TG_CMP(field, op)                          \
  R[in.dst].i = R[in.a].field op R[in.b].field;    \
  break;
#define TG_UN(field, expr)       \
  {                              \
    const auto x = R[in.a].field; \
    R[in.dst].field = (expr);    \
    break;                       \
  }

  for (;;) {
    const Instr& in = *ip++;
    switch (in.op) {
      case kHalt: goto done;
      case kMov: R[in.dst] = R[in.a]; break;
      case kJump: ip = code + in.target; break;
      case kJumpIfZero:
        if (R[in.a].i == 0) ip = code + in.target;
        break;
      case kIf:
        TG_STEP();
        if (R[in.a].i == 0) ip = code + in.target;
        break;
      case kLoopBegin: {
        const int64_t lo = R[in.a].i, end = lo + R[in.b].i;
        if (end <= lo) {
          ip = code + in.target;
          break;
        }
        if (end - 1 > std::numeric_limits<int32_t>::max()) {
          status = loop_overflow(origin[size_t(&in - code)]);
          goto done;
        }
        TG_STEP();
        R[in.dst].i = lo;
        R[in.aux].i = end;
        break;
      }
      case kLoopEnd: {
        const int64_t next = R[in.dst].i + 1;
        if (next < R[in.aux].i) {
          TG_STEP();
          R[in.dst].i = next;
          ip = code + in.target;
        }
        break;
      }
      case kSampleCount: {
        const int64_t extent = R[in.a].i;
        R[in.dst].i = extent <= 0 ? 0 : std::min(extent, options.sample_blocks);
        break;
      }
      case kSamplePick: {
        const int64_t lo = R[in.target].i, extent = R[in.b].i;
        if (lo + extent - 1 > std::numeric_limits<int32_t>::max()) {
          status = loop_overflow(origin[size_t(&in - code)]);
          goto done;
        }
        R[in.dst].i = lo + sample_pick(R[in.a].i, R[in.aux].i, extent, options.sample_seed, uint64_t(&in - code));
        break;
      }
      case kSampleCheck:
        if (R[in.a].i == R[in.b].i) {
          status = silent_block(origin[size_t(&in - code)], R[in.dst].i);
          goto done;
        }
        break;
      case kAlloc: {
        HostBuffer& storage = allocations[size_t(buffers[size_t(in.aux)].alloc_index)];
        steps += storage.num_elements() / 64;
        TG_STEP();
        fill_poison(storage);
        break;
      }

      case kAddI32: TG_BIN(i, int64_t(int32_t(uint32_t(x) + uint32_t(y))))
      case kSubI32: TG_BIN(i, int64_t(int32_t(uint32_t(x) - uint32_t(y))))
      case kMulI32: TG_BIN(i, int64_t(int32_t(uint32_t(x) * uint32_t(y))))
      case kAddInt: TG_BIN(i, wrap_int(int64_t(uint64_t(x) + uint64_t(y)), in.bits, in.is_signed))
      case kSubInt: TG_BIN(i, wrap_int(int64_t(uint64_t(x) - uint64_t(y)), in.bits, in.is_signed))
      case kMulInt: TG_BIN(i, wrap_int(int64_t(uint64_t(x) * uint64_t(y)), in.bits, in.is_signed))
      case kDivInt: {
        const int64_t y = R[in.b].i;
        if (y == 0) {
          status = division_by_zero(size_t(&in - code));
          goto done;
        }
        R[in.dst].i = scalar_semantics::int_div(R[in.a].i, y, in.bits, in.is_signed);
        break;
      }
      case kModInt: {
        const int64_t y = R[in.b].i;
        if (y == 0) {
          status = division_by_zero(size_t(&in - code));
          goto done;
        }
        R[in.dst].i = scalar_semantics::int_mod(R[in.a].i, y);
        break;
      }
      case kMinInt: TG_BIN(i, x < y ? x : y)
      case kMaxInt: TG_BIN(i, x < y ? y : x)
      case kEqInt: TG_CMP(i, ==)
      case kNeInt: TG_CMP(i, !=)
      case kLtInt: TG_CMP(i, <)
      case kLeInt: TG_CMP(i, <=)
      case kGtInt: TG_CMP(i, >)
      case kGeInt: TG_CMP(i, >=)
      case kAnd: TG_BIN(i, int64_t(x != 0 && y != 0))
      case kOr: TG_BIN(i, int64_t(x != 0 || y != 0))
      case kNot: TG_UN(i, int64_t(x == 0))
      case kAbsInt: TG_UN(i, x < 0 ? wrap_int(int64_t(0 - uint64_t(x)), in.bits, in.is_signed) : x)

      case kAddF32: TG_BIN(f32, x + y)
      case kSubF32: TG_BIN(f32, x - y)
      case kMulF32: TG_BIN(f32, x * y)
      case kDivF32: TG_BIN(f32, x / y)
      case kModF32: TG_BIN(f32, scalar_semantics::float_mod(x, y))
      case kMinF32: TG_BIN(f32, scalar_semantics::float_min(x, y))
      case kMaxF32: TG_BIN(f32, scalar_semantics::float_max(x, y))
      case kEqF32: TG_CMP(f32, ==)
      case kNeF32: TG_CMP(f32, !=)
      case kLtF32: TG_CMP(f32, <)
      case kLeF32: TG_CMP(f32, <=)
      case kGtF32: TG_CMP(f32, >)
      case kGeF32: TG_CMP(f32, >=)
      case kAbsF32: TG_UN(f32, std::fabs(x))
      case kExpF32: TG_UN(f32, std::exp(x))
      case kLogF32: TG_UN(f32, std::log(x))
      case kSqrtF32: TG_UN(f32, std::sqrt(x))
      case kTanhF32: TG_UN(f32, std::tanh(x))

      case kAddF64: TG_BIN(f64, x + y)
      case kSubF64: TG_BIN(f64, x - y)
      case kMulF64: TG_BIN(f64, x * y)
      case kDivF64: TG_BIN(f64, x / y)
      case kModF64: TG_BIN(f64, scalar_semantics::float_mod(x, y))
      case kMinF64: TG_BIN(f64, scalar_semantics::float_min(x, y))
      case kMaxF64: TG_BIN(f64, scalar_semantics::float_max(x, y))
      case kEqF64: TG_CMP(f64, ==)
      case kNeF64: TG_CMP(f64, !=)
      case kLtF64: TG_CMP(f64, <)
      case kLeF64: TG_CMP(f64, <=)
      case kGtF64: TG_CMP(f64, >)
      case kGeF64: TG_CMP(f64, >=)
      case kAbsF64: TG_UN(f64, std::fabs(x))
      case kExpF64: TG_UN(f64, std::exp(x))
      case kLogF64: TG_UN(f64, std::log(x))
      case kSqrtF64: TG_UN(f64, std::sqrt(x))
      case kTanhF64: TG_UN(f64, std::tanh(x))

      case kCast: R[in.dst] = scalar_semantics::cast(R[in.a], in.from, in.to); break;
      case kCastIntToF32: R[in.dst].f32 = float(R[in.a].i); break;
      case kCastIntToF64: R[in.dst].f64 = double(R[in.a].i); break;
      case kCastF32ToF64: R[in.dst].f64 = double(R[in.a].f32); break;
      case kCastF64ToF32: R[in.dst].f32 = float(R[in.a].f64); break;
      case kWrapInt: R[in.dst].i = wrap_int(R[in.a].i, in.bits, in.is_signed); break;

      case kLoadI8: TG_LOAD(int8_t, i)
      case kLoadU8: TG_LOAD(uint8_t, i)
      case kLoadBool: {
        const int64_t idx = R[in.a].i;
        const RuntimeBuffer& buf = B[in.aux];
        if (uint64_t(idx) >= uint64_t(buf.size)) {
          status = out_of_bounds(in, idx, false);
          goto done;
        }
        R[in.dst].i = reinterpret_cast<const uint8_t*>(buf.data)[idx] != 0;
        break;
      }
      case kLoadI16: TG_LOAD(int16_t, i)
      case kLoadU16: TG_LOAD(uint16_t, i)
      case kLoadI32: TG_LOAD(int32_t, i)
      case kLoadU32: TG_LOAD(uint32_t, i)
      case kLoadI64: TG_LOAD(int64_t, i)
      case kLoadF32: TG_LOAD(float, f32)
      case kLoadF64: TG_LOAD(double, f64)

      case kStore8: TG_STORE(uint8_t, uint8_t(uint64_t(R[in.b].i)))
      case kStoreBool: TG_STORE(uint8_t, uint8_t(R[in.b].i != 0))
      case kStore16: TG_STORE(uint16_t, uint16_t(uint64_t(R[in.b].i)))
      case kStore32: TG_STORE(uint32_t, uint32_t(uint64_t(R[in.b].i)))
      case kStore64: TG_STORE(int64_t, R[in.b].i)
      case kStoreF32: TG_STORE(float, R[in.b].f32)
      case kStoreF64: TG_STORE(double, R[in.b].f64)
    }
  }
#undef TG_STEP
#undef TG_LOAD
#undef TG_STORE
#undef TG_BIN
#undef TG_CMP
#undef TG_UN

done:
  *steps_out = steps;
  return status;
}

// ---------------------------------------------------------------------------------

CompiledNest::CompiledNest(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CompiledNest::~CompiledNest() = default;

int64_t CompiledNest::num_instructions() const { return int64_t(impl_->code.size()); }

Expected<std::unique_ptr<CompiledNest>> CompiledNest::compile(const LoopNest& nest,
                                                              const InterpreterOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->nest = nest;
  impl->options = options;
  Compiler compiler(impl.get());
  TG_RETURN_IF_ERROR(compiler.compile_body(nest.body));
  impl->runtime.resize(impl->buffers.size());
  for (size_t i = 0; i < impl->buffers.size(); ++i) {
    const BufferInfo& b = impl->buffers[i];
    if (b.alloc_index >= 0) {
      HostBuffer& storage = impl->allocations[size_t(b.alloc_index)];
      impl->runtime[i] = {static_cast<std::byte*>(storage.data()), storage.num_elements()};
    }
  }
  return std::unique_ptr<CompiledNest>(new CompiledNest(std::move(impl)));
}

namespace {

std::string shape_text(DataType t, const std::vector<int64_t>& shape) {
  return fmt::format("{}[{}]", t.str(), fmt::join(shape, ", "));
}

Status check_arg(const char* role, const BufferArg& arg, const HostBuffer* buf) {
  if (!buf) return invalid_argument(std::string(role) + " " + arg.name + " is null");
  if (buf->dtype() != arg.dtype || buf->shape() != arg.shape)
    return invalid_argument(std::string(role) + " " + arg.name + ": expected " + shape_text(arg.dtype, arg.shape) +
                            ", got " + buf->describe());
  return Status();
}

}  // namespace

Status CompiledNest::run(const std::vector<const HostBuffer*>& inputs, const std::vector<HostBuffer*>& outputs) {
  Impl& m = *impl_;
  last_steps_ = 0;
  if (inputs.size() != m.nest.inputs.size())
    return invalid_argument(fmt::format("expected {} inputs, got {}", m.nest.inputs.size(), inputs.size()));
  if (outputs.size() != m.nest.outputs.size())
    return invalid_argument(fmt::format("expected {} outputs, got {}", m.nest.outputs.size(), outputs.size()));
  size_t slot = 0;
  for (size_t i = 0; i < inputs.size(); ++i, ++slot) {
    TG_RETURN_IF_ERROR(check_arg("input", m.nest.inputs[i], inputs[i]));
    // Inputs are never written: the compiler rejects stores to them.
    m.runtime[slot] = {static_cast<std::byte*>(const_cast<void*>(inputs[i]->data())), inputs[i]->num_elements()};
  }
  for (size_t i = 0; i < outputs.size(); ++i, ++slot) {
    TG_RETURN_IF_ERROR(check_arg("output", m.nest.outputs[i], outputs[i]));
    m.runtime[slot] = {static_cast<std::byte*>(outputs[i]->data()), outputs[i]->num_elements()};
  }
  return m.execute(&last_steps_);
}

Status interpret(const LoopNest& nest, const std::vector<const HostBuffer*>& inputs,
                 const std::vector<HostBuffer*>& outputs, const InterpreterOptions& options) {
  TG_ASSIGN_OR_RETURN(std::unique_ptr<CompiledNest> compiled, CompiledNest::compile(nest, options));
  return compiled->run(inputs, outputs);
}

}  // namespace tensorgym
