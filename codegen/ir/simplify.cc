#include "codegen/ir/simplify.h"

#include <cmath>
#include <limits>

#include "codegen/ir/ir_equality.h"
#include "codegen/ir/ir_mutator.h"
#include "codegen/ir/linear_form.h"
#include "codegen/ir/substitute.h"

namespace tensorgym {

Expr fold_cast(DataType t, const Expr& value) {
  if (t.is_vector()) return Expr();
  if (const IntImm* i = value.as<IntImm>()) {
    if (t.is_float()) return FloatImm::make(t, double(i->value));
    return IntImm::make(t, i->value);
  }
  if (const FloatImm* f = value.as<FloatImm>()) {
    if (t.is_float()) return FloatImm::make(t, f->value);
    double v = f->value;
    if (std::isnan(v)) return IntImm::make(t, 0);
    double lo = double(as_const_int(make_lowest(t)) ? *as_const_int(make_lowest(t)) : 0);
    double hi = double(as_const_int(make_highest(t)) ? *as_const_int(make_highest(t)) : 0);
    if (v <= lo) return make_lowest(t);
    if (v >= hi) return make_highest(t);
    return IntImm::make(t, int64_t(std::trunc(v)));
  }
  return Expr();
}

namespace {

bool is_index_int(DataType t) { return t.is_int() && t.is_scalar(); }

double fold_float(NodeKind k, double a, double b, DataType t) {
  double r = 0;
  if (t.bits == 32) {
    float x = float(a), y = float(b);
    switch (k) {
      case NodeKind::kAdd: r = x + y; break;
      case NodeKind::kSub: r = x - y; break;
      case NodeKind::kMul: r = x * y; break;
      case NodeKind::kDiv: r = x / y; break;
      default: break;
    }
    return double(float(r));
  }
  switch (k) {
    case NodeKind::kAdd: return a + b;
    case NodeKind::kSub: return a - b;
    case NodeKind::kMul: return a * b;
    case NodeKind::kDiv: return a / b;
    default: return 0;
  }
}

// Sets ranges for a region of code; restore() (or leaving the region) drops them.
class ScopedRanges {
 public:
  explicit ScopedRanges(RangeStack& scope) : scope_(scope), depth_(scope.depth()) {}
  ScopedRanges(const ScopedRanges&) = delete;
  ScopedRanges& operator=(const ScopedRanges&) = delete;
  ~ScopedRanges() { restore(); }

  void set(const std::string& name, IntRange r) { scope_.push(name, r); }
  void narrow(const Expr& condition, bool truth) { narrow_by_condition(condition, truth, &scope_); }
  void restore() { scope_.pop_to(depth_); }

 private:
  RangeStack& scope_;
  size_t depth_;
};

class Simplifier : public IRMutator {
 public:
  explicit Simplifier(const RangeScope& scope) : scope_(scope) {}

  using IRMutator::mutate;

 protected:
  RangeStack scope_;

  IntRange bounds(const Expr& e) {
    used_ranges_ = true;
    return constant_bounds(e, scope_);
  }

  // Index expressions are shared between the accesses of one element (a reduction's
  // init store, its update store and the load it accumulates into): an index chain
  // whose simplification never consulted the ranges simplifies the same wherever it
  // is, so its result is kept for the next occurrence of the same node.
  struct Memo {
    Expr key;  // held, so the node's address is not reused while remembered
    Expr result;
  };
  static constexpr size_t kMemoSize = 16;
  Memo memo_[kMemoSize];
  size_t memo_next_ = 0;
  bool used_ranges_ = false;

  const Expr* remembered(const BaseExprNode* op) const {
    for (const Memo& m : memo_)
      if (m.key.get() == op) return &m.result;
    return nullptr;
  }
  void remember(const BaseExprNode* op, const Expr& result) {
    memo_[memo_next_] = {Expr(op), result};
    memo_next_ = (memo_next_ + 1) % kMemoSize;
  }

  // Collects an integer + - * chain into one linear form, simplifying only the
  // atoms: one pass over the chain instead of re-linearizing every level.
  void collect(const Expr& e, int64_t k, LinearForm* f) {
    switch (e.kind()) {
      case NodeKind::kIntImm: f->constant += e.as<IntImm>()->value * k; return;
      case NodeKind::kVariable: f->add_term(e, k); return;  // simplifies to itself
      case NodeKind::kAdd:
        collect(e.as<Add>()->a, k, f);
        collect(e.as<Add>()->b, k, f);
        return;
      case NodeKind::kSub:
        collect(e.as<Sub>()->a, k, f);
        collect(e.as<Sub>()->b, -k, f);
        return;
      case NodeKind::kMul: {
        const Mul* m = e.as<Mul>();
        if (const IntImm* c = m->b.as<IntImm>(); c && is_chain(m->a)) {
          // mutate(m->a) would build from_linear(sub) only for the walk below to
          // take it apart again: walk sub the way collect walks that expression.
          LinearForm sub;
          collect(m->a, 1, &sub);
          return collect_linear(sub, m->a.type(), k * c->value, f);
        }
        Expr a = is_leaf(m->a) ? m->a : mutate(m->a);
        Expr b = is_leaf(m->b) ? m->b : mutate(m->b);
        if (const int64_t* c = as_const_int(b)) return collect(a, k * *c, f);
        if (const int64_t* c = as_const_int(a)) return collect(b, k * *c, f);
        f->add_term((a.same_as(m->a) && b.same_as(m->b)) ? e : Mul::make(a, b), k);
        return;
      }
      default: {
        Expr atom = mutate(e);
        if (const int64_t* c = as_const_int(atom)) {
          f->constant += *c * k;
        } else if (!atom.same_as(e) && (atom.as<Add>() || atom.as<Sub>() || atom.as<Mul>())) {
          LinearForm inner = linearize(atom);
          f->add(inner, k);
        } else {
          f->add_term(atom, k);
        }
      }
    }
  }

  // Constants and variables simplify to themselves.
  static bool is_leaf(const Expr& e) { return e.kind() == NodeKind::kIntImm || e.kind() == NodeKind::kVariable; }

  // An integer + - * node: mutate() simplifies it as collect(), then from_linear().
  static bool is_chain(const Expr& e) {
    return (e.kind() == NodeKind::kAdd || e.kind() == NodeKind::kSub || e.kind() == NodeKind::kMul) &&
           is_index_int(e.type());
  }

  // collect(from_linear(g, t), k, f), without building the expression: from_linear
  // writes the positive terms, then the negative ones, then the constant;
  // scaled(atom, c) is the atom itself for c == 1, else atom * c (c wrapped to t),
  // which collect takes as the simplified atom times c.
  void collect_linear(const LinearForm& g, DataType t, int64_t k, LinearForm* f) {
    for_each_linear_piece(g, [&](bool subtract, const Expr& atom, int64_t c) {
      const int64_t sign = subtract ? -1 : 1;
      if (c == 1) {
        collect(atom, sign * k, f);
      } else {
        collect(is_leaf(atom) ? atom : mutate(atom), sign * k * IntImm::wrap(t, c), f);
      }
    });
    // The constant: from_linear's immediate alone, added, or subtracted.
    if (g.terms.empty() || g.constant > 0) {
      f->constant += IntImm::wrap(t, g.constant) * k;
    } else if (g.constant < 0) {
      f->constant += IntImm::wrap(t, -g.constant) * -k;
    }
  }

  template <class T>
  Expr arith(const T* op) {
    DataType t = op->type;
    if (t.is_float()) {
      Expr a = mutate(op->a), b = mutate(op->b);
      const FloatImm* x = a.as<FloatImm>();
      const FloatImm* y = b.as<FloatImm>();
      if (x && y && t.is_scalar()) return FloatImm::make(t, fold_float(T::kKind, x->value, y->value, t));
      if (a.same_as(op->a) && b.same_as(op->b)) return op;
      return T::make(a, b);
    }
    if (!is_index_int(t)) {
      Expr a = mutate(op->a), b = mutate(op->b);
      return (a.same_as(op->a) && b.same_as(op->b)) ? Expr(op) : T::make(a, b);
    }
    if (const Expr* r = remembered(op)) return *r;
    bool outer_used_ranges = used_ranges_;
    used_ranges_ = false;
    LinearForm f;
    collect(Expr(op), 1, &f);
    // k * c * (x / c) + k * (x % c) == k * x: folded, the index a fused loop leaves
    // is affine in it again, which LLVM's vectorizer needs to see consecutive
    // accesses (it gives up on a division it cannot prove uniform across lanes).
    for (const auto& [x, k] : take_quotient_remainder_pairs(&f)) f.add(linearize(x), k);
    // Already in canonical form: keep the node.
    Expr result = is_from_linear(Expr(op), f, t) ? Expr(op) : from_linear(f, t);
    if (!used_ranges_) remember(op, result);
    used_ranges_ |= outer_used_ranges;
    return result;
  }

  Expr visit(const Add* op) override { return arith(op); }
  Expr visit(const Sub* op) override { return arith(op); }
  Expr visit(const Mul* op) override { return arith(op); }

  Expr visit(const Div* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    DataType t = op->type;
    if (t.is_float()) {
      const FloatImm* x = a.as<FloatImm>();
      const FloatImm* y = b.as<FloatImm>();
      if (x && y && t.is_scalar()) return FloatImm::make(t, fold_float(NodeKind::kDiv, x->value, y->value, t));
      return (a.same_as(op->a) && b.same_as(op->b)) ? Expr(op) : Div::make(a, b);
    }
    const int64_t* c = as_const_int(b);
    if (!c || *c <= 0 || !is_index_int(t)) {
      if (c && *c != 0 && as_const_int(a)) return IntImm::make(t, floor_div(*as_const_int(a), *c));
      return (a.same_as(op->a) && b.same_as(op->b)) ? Expr(op) : Div::make(a, b);
    }
    if (*c == 1) return a;
    // (x / p) / q == x / (p * q) for positive p, q.
    if (const Div* inner = a.as<Div>()) {
      const int64_t* p = as_const_int(inner->b);
      if (p && *p > 0) return mutate(Div::make(inner->a, IntImm::make(t, *p * *c)));
    }
    // floor((c*Q + R) / c) == Q + floor(R / c): split off the multiples of c.
    LinearForm f = linearize(a), q, r;
    for (const LinearTerm& term : f.terms) {
      if (term.coeff % *c == 0) q.add_term(term.atom, term.coeff / *c);
      else r.add_term(term.atom, term.coeff);
    }
    q.constant = floor_div(f.constant, *c);
    r.constant = floor_mod(f.constant, *c);
    Expr rest = from_linear(r, t);
    IntRange rr = bounds(rest);
    if (rr.bounded() && floor_div(rr.min, *c) == floor_div(rr.max, *c)) {
      q.constant += floor_div(rr.min, *c);
      return from_linear(q, t);
    }
    if (q.is_constant() && q.constant == 0) return Div::make(rest, b);
    LinearForm out = q;
    out.add_term(Div::make(rest, b), 1);
    return from_linear(out, t);
  }

  Expr visit(const Mod* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    DataType t = op->type;
    const int64_t* c = as_const_int(b);
    if (!c || *c <= 0 || !is_index_int(t)) {
      if (c && *c != 0 && as_const_int(a)) return IntImm::make(t, floor_mod(*as_const_int(a), *c));
      return (a.same_as(op->a) && b.same_as(op->b)) ? Expr(op) : Mod::make(a, b);
    }
    if (*c == 1) return IntImm::make(t, 0);
    // Multiples of c vanish; within one period the modulo is a shift.
    LinearForm f = linearize(a), r;
    for (const LinearTerm& term : f.terms)
      if (term.coeff % *c != 0) r.add_term(term.atom, term.coeff);
    r.constant = floor_mod(f.constant, *c);
    Expr rest = from_linear(r, t);
    IntRange rr = bounds(rest);
    if (rr.bounded() && floor_div(rr.min, *c) == floor_div(rr.max, *c)) {
      r.constant -= floor_div(rr.min, *c) * *c;
      return from_linear(r, t);
    }
    return Mod::make(rest, b);
  }

  template <class T, bool kIsMin>
  Expr min_max(const T* op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    DataType t = op->type;
    if (t.is_float()) {
      const FloatImm* x = a.as<FloatImm>();
      const FloatImm* y = b.as<FloatImm>();
      if (x && y) return FloatImm::make(t, kIsMin ? std::fmin(x->value, y->value) : std::fmax(x->value, y->value));
    } else if (is_index_int(t)) {
      if (structural_equal(a, b)) return a;
      LinearForm d = linearize(a);
      d.add(linearize(b), -1);
      IntRange r = IntRange::point(d.constant);
      if (!d.is_constant()) r = bounds(Sub::make(a, b));
      if (r.max <= 0) return kIsMin ? a : b;
      if (r.min >= 0) return kIsMin ? b : a;
    }
    return (a.same_as(op->a) && b.same_as(op->b)) ? Expr(op) : T::make(a, b);
  }

  Expr visit(const Min* op) override { return min_max<Min, true>(op); }
  Expr visit(const Max* op) override { return min_max<Max, false>(op); }

  template <class T>
  Expr compare(const T* op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    Expr rebuilt = (a.same_as(op->a) && b.same_as(op->b)) ? Expr(op) : T::make(a, b);
    if (a.type().is_float()) {
      const FloatImm* x = a.as<FloatImm>();
      const FloatImm* y = b.as<FloatImm>();
      if (!x || !y) return rebuilt;
      bool v = false;
      switch (T::kKind) {
        case NodeKind::kEQ: v = x->value == y->value; break;
        case NodeKind::kNE: v = x->value != y->value; break;
        case NodeKind::kLT: v = x->value < y->value; break;
        case NodeKind::kLE: v = x->value <= y->value; break;
        case NodeKind::kGT: v = x->value > y->value; break;
        case NodeKind::kGE: v = x->value >= y->value; break;
        default: return rebuilt;
      }
      return make_bool(v);
    }
    if (!a.type().is_scalar()) return rebuilt;
    IntRange r = bounds(rebuilt);
    if (r.is_point()) return make_bool(r.min != 0);
    return rebuilt;
  }

  Expr visit(const EQ* op) override { return compare(op); }
  Expr visit(const NE* op) override { return compare(op); }
  Expr visit(const LT* op) override { return compare(op); }
  Expr visit(const LE* op) override { return compare(op); }
  Expr visit(const GT* op) override { return compare(op); }
  Expr visit(const GE* op) override { return compare(op); }

  Expr visit(const And* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (is_const(a, 0) || is_const(b, 0)) return make_bool(false);
    if (is_const(a, 1)) return b;
    if (is_const(b, 1)) return a;
    return (a.same_as(op->a) && b.same_as(op->b)) ? Expr(op) : And::make(a, b);
  }

  Expr visit(const Or* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (is_const(a, 1) || is_const(b, 1)) return make_bool(true);
    if (is_const(a, 0)) return b;
    if (is_const(b, 0)) return a;
    return (a.same_as(op->a) && b.same_as(op->b)) ? Expr(op) : Or::make(a, b);
  }

  Expr visit(const Not* op) override {
    Expr a = mutate(op->a);
    if (const IntImm* i = a.as<IntImm>()) return make_bool(i->value == 0);
    if (const Not* n = a.as<Not>()) return n->a;
    return a.same_as(op->a) ? Expr(op) : Not::make(a);
  }

  Expr visit(const Select* op) override {
    Expr c = mutate(op->condition);
    if (const IntImm* i = c.as<IntImm>()) return mutate(i->value ? op->true_value : op->false_value);
    // Each side is simplified knowing which way the condition went.
    ScopedRanges ranges(scope_);
    ranges.narrow(c, true);
    Expr t = mutate(op->true_value);
    ranges.restore();
    ranges.narrow(c, false);
    Expr f = mutate(op->false_value);
    ranges.restore();
    if (structural_equal(t, f)) return t;
    if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) return op;
    return Select::make(c, t, f);
  }

  Expr visit(const Cast* op) override {
    Expr v = mutate(op->value);
    if (v.type() == op->type) return v;
    if (Expr folded = fold_cast(op->type, v); folded.defined()) return folded;
    return v.same_as(op->value) ? Expr(op) : Cast::make(op->type, v);
  }

  // Statements.

  Stmt visit(const For* op) override {
    Expr min = mutate(op->min), extent = mutate(op->extent);
    const int64_t* e = as_const_int(extent);
    if (e && *e <= 0) return Stmt();
    if (e && *e == 1) {
      // One iteration: the variable is the minimum.
      return mutate(substitute(op->body, {{op->name, min}}));
    }
    IntRange mr = bounds(min), er = bounds(extent);
    IntRange r = IntRange::everything();
    if (mr.bounded() && er.bounded()) r = {mr.min, mr.max + er.max - 1};
    Stmt body;
    {
      ScopedRanges ranges(scope_);
      ranges.set(op->name, r);
      body = mutate(op->body);
    }
    if (!body.defined()) return Stmt();
    if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body)) return op;
    return For::make(op->name, std::move(min), std::move(extent), op->kind, std::move(body), op->thread_tag);
  }

  // Affine in variables only: cheap to recompute, and substituting it lets index
  // arithmetic cancel (x.min + i - x.min).
  static bool is_affine_in_vars(const Expr& e) {
    if (!is_index_int(e.type())) return false;
    LinearForm f = linearize(e);
    for (const LinearTerm& t : f.terms)
      if (!t.atom.as<Variable>()) return false;
    return true;
  }

  Stmt visit(const LetStmt* op) override {
    Expr v = mutate(op->value);
    if (is_affine_in_vars(v)) return mutate(substitute(op->body, {{op->name, v}}));
    Stmt body;
    {
      ScopedRanges ranges(scope_);
      ranges.set(op->name, bounds(v));
      body = mutate(op->body);
    }
    if (!body.defined()) return Stmt();
    if (v.same_as(op->value) && body.same_as(op->body)) return op;
    return LetStmt::make(op->name, v, body);
  }

  Stmt visit(const IfThenElse* op) override {
    Expr c = mutate(op->condition);
    if (const IntImm* i = c.as<IntImm>()) return mutate(i->value ? op->then_case : op->else_case);
    ScopedRanges ranges(scope_);
    ranges.narrow(c, true);
    Stmt t = mutate(op->then_case);
    ranges.restore();
    ranges.narrow(c, false);
    Stmt f = mutate(op->else_case);
    ranges.restore();
    if (!t.defined() && !f.defined()) return Stmt();
    if (!t.defined()) return IfThenElse::make(mutate(Not::make(c)), f);
    if (c.same_as(op->condition) && t.same_as(op->then_case) && f.same_as(op->else_case)) return op;
    return IfThenElse::make(c, t, f);
  }

  Stmt visit(const Allocate* op) override {
    Stmt body = mutate(op->body);
    if (!body.defined()) return Stmt();
    return body.same_as(op->body) ? Stmt(op) : op->with_body(body);
  }
};

}  // namespace

Expr simplify(const Expr& e, const RangeScope& scope) { return Simplifier(scope).mutate(e); }

Stmt simplify(const Stmt& s, const RangeScope& scope) { return Simplifier(scope).mutate(s); }

}  // namespace tensorgym
