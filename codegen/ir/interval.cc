#include "codegen/ir/interval.h"

#include <algorithm>

#include "codegen/ir/linear_form.h"

namespace tensorgym {

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

namespace {

using I128 = __int128;
constexpr int64_t kNegInf = IntRange::kNegInf;
constexpr int64_t kPosInf = IntRange::kPosInf;

bool is_inf(int64_t v) { return v == kNegInf || v == kPosInf; }

int64_t saturate(I128 v) {
  // Keep away from the sentinels so finite results never read as unbounded.
  if (v <= I128(kNegInf) + 1) return kNegInf;
  if (v >= I128(kPosInf) - 1) return kPosInf;
  return int64_t(v);
}

int64_t add_ext(int64_t a, int64_t b) {
  if (a == kNegInf || b == kNegInf) return (a == kPosInf || b == kPosInf) ? kPosInf : kNegInf;
  if (a == kPosInf || b == kPosInf) return kPosInf;
  return saturate(I128(a) + I128(b));
}

int64_t neg_ext(int64_t a) {
  if (a == kNegInf) return kPosInf;
  if (a == kPosInf) return kNegInf;
  return -a;
}

int64_t mul_ext(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (is_inf(a) || is_inf(b)) return ((a < 0) != (b < 0)) ? kNegInf : kPosInf;
  return saturate(I128(a) * I128(b));
}

IntRange add(IntRange a, IntRange b) {
  IntRange r;
  r.min = (a.min == kNegInf || b.min == kNegInf) ? kNegInf : add_ext(a.min, b.min);
  r.max = (a.max == kPosInf || b.max == kPosInf) ? kPosInf : add_ext(a.max, b.max);
  return r;
}

IntRange mul(IntRange a, IntRange b) {
  int64_t c[4] = {mul_ext(a.min, b.min), mul_ext(a.min, b.max), mul_ext(a.max, b.min), mul_ext(a.max, b.max)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

IntRange unite(IntRange a, IntRange b) { return {std::min(a.min, b.min), std::max(a.max, b.max)}; }

IntRange bool_range() { return {0, 1}; }

// Range of a comparison from the range of (a - b).
IntRange compare(NodeKind kind, IntRange d) {
  auto decided = [](bool always, bool never) {
    return always ? IntRange::point(1) : never ? IntRange::point(0) : bool_range();
  };
  switch (kind) {
    case NodeKind::kLT: return decided(d.max < 0, d.min >= 0);
    case NodeKind::kLE: return decided(d.max <= 0, d.min > 0);
    case NodeKind::kGT: return decided(d.min > 0, d.max <= 0);
    case NodeKind::kGE: return decided(d.min >= 0, d.max < 0);
    case NodeKind::kEQ: return decided(d.is_point() && d.min == 0, d.min > 0 || d.max < 0);
    case NodeKind::kNE: return decided(d.min > 0 || d.max < 0, d.is_point() && d.min == 0);
    default: return bool_range();
  }
}

IntRange type_range(DataType t) {
  if (t.is_bool()) return bool_range();
  if (t.is_float() || t.bits >= 64) return IntRange::everything();
  if (t.code == TypeCode::kUInt) return {0, (int64_t(1) << t.bits) - 1};
  return {-(int64_t(1) << (t.bits - 1)), (int64_t(1) << (t.bits - 1)) - 1};
}

// The two kinds of scope, for the templates below.
const IntRange* find_range(const RangeScope& scope, const std::string& name) {
  auto it = scope.find(name);
  return it == scope.end() ? nullptr : &it->second;
}
const IntRange* find_range(const RangeStack& scope, const std::string& name) { return scope.find(name); }
void set_range(RangeScope* scope, const std::string& name, IntRange r) { (*scope)[name] = r; }
void set_range(RangeStack* scope, const std::string& name, IntRange r) { scope->push(name, r); }

template <class Scope>
IntRange bounds_in(const Expr& e, const Scope& scope);

// The range of sum(coeff * atom) + constant.
template <class Scope>
IntRange linear_bounds(const LinearForm& f, const Scope& scope) {
  IntRange r = IntRange::point(f.constant);
  for (const LinearTerm& t : f.terms) r = add(r, mul(bounds_in(t.atom, scope), IntRange::point(t.coeff)));
  return r;
}

template <class T, class Scope>
IntRange binary_diff(const T* op, const Scope& scope) {
  // Compare through the linear form of a - b so that x < x + 1 is decided.
  LinearForm f = linearize(op->a);
  f.add(linearize(op->b), -1);
  return linear_bounds(f, scope);
}

template <class Scope>
IntRange bounds_in(const Expr& e, const Scope& scope) {
  switch (e.kind()) {
    case NodeKind::kIntImm: return IntRange::point(e.as<IntImm>()->value);
    case NodeKind::kVariable: {
      const IntRange* r = find_range(scope, e.as<Variable>()->name);
      return r ? *r : type_range(e.type());
    }
    case NodeKind::kCast: {
      const Cast* c = e.as<Cast>();
      if (c->value.type().is_float() || c->type.is_float()) return type_range(c->type);
      IntRange r = bounds_in(c->value, scope);
      IntRange t = type_range(c->type);
      return t.contains(r) ? r : t;  // wraps otherwise: anything in the type
    }
    case NodeKind::kAdd:
    case NodeKind::kSub:
    case NodeKind::kMul: {
      // Through the linear form, so x - x is 0 and not [-n, n].
      LinearForm f = linearize(e);
      if (f.terms.size() == 1 && f.terms[0].atom.same_as(e)) {
        const Mul* m = e.as<Mul>();  // a product of two non-constants
        return mul(bounds_in(m->a, scope), bounds_in(m->b, scope));
      }
      return linear_bounds(f, scope);
    }
    case NodeKind::kDiv: {
      const Div* d = e.as<Div>();
      IntRange a = bounds_in(d->a, scope);
      IntRange b = bounds_in(d->b, scope);
      if (!b.is_point() || b.min == 0) return type_range(e.type());
      int64_t c = b.min;
      auto dv = [c](int64_t v) { return is_inf(v) ? (((v < 0) != (c < 0)) ? kNegInf : kPosInf) : floor_div(v, c); };
      int64_t x = dv(a.min), y = dv(a.max);
      return {std::min(x, y), std::max(x, y)};
    }
    case NodeKind::kMod: {
      const Mod* m = e.as<Mod>();
      IntRange a = bounds_in(m->a, scope);
      IntRange b = bounds_in(m->b, scope);
      if (!b.is_point() || b.min <= 0) return type_range(e.type());
      int64_t c = b.min;
      // Within one period the modulo is a shift; otherwise all residues.
      if (a.bounded() && floor_div(a.min, c) == floor_div(a.max, c))
        return {floor_mod(a.min, c), floor_mod(a.max, c)};
      return {0, c - 1};
    }
    case NodeKind::kMin: {
      const Min* m = e.as<Min>();
      IntRange a = bounds_in(m->a, scope), b = bounds_in(m->b, scope);
      return {std::min(a.min, b.min), std::min(a.max, b.max)};
    }
    case NodeKind::kMax: {
      const Max* m = e.as<Max>();
      IntRange a = bounds_in(m->a, scope), b = bounds_in(m->b, scope);
      return {std::max(a.min, b.min), std::max(a.max, b.max)};
    }
    case NodeKind::kSelect: {
      const Select* s = e.as<Select>();
      IntRange c = bounds_in(s->condition, scope);
      if (c.is_point()) return bounds_in(c.min ? s->true_value : s->false_value, scope);
      return unite(bounds_in(s->true_value, scope), bounds_in(s->false_value, scope));
    }
    case NodeKind::kLT: return compare(e.kind(), binary_diff(e.as<LT>(), scope));
    case NodeKind::kLE: return compare(e.kind(), binary_diff(e.as<LE>(), scope));
    case NodeKind::kGT: return compare(e.kind(), binary_diff(e.as<GT>(), scope));
    case NodeKind::kGE: return compare(e.kind(), binary_diff(e.as<GE>(), scope));
    case NodeKind::kEQ: {
      const EQ* op = e.as<EQ>();
      if (op->a.type().is_float()) return bool_range();
      return compare(e.kind(), binary_diff(op, scope));
    }
    case NodeKind::kNE: {
      const NE* op = e.as<NE>();
      if (op->a.type().is_float()) return bool_range();
      return compare(e.kind(), binary_diff(op, scope));
    }
    case NodeKind::kAnd: {
      const And* op = e.as<And>();
      IntRange a = bounds_in(op->a, scope), b = bounds_in(op->b, scope);
      return {std::min(a.min, b.min), std::min(a.max, b.max)};
    }
    case NodeKind::kOr: {
      const Or* op = e.as<Or>();
      IntRange a = bounds_in(op->a, scope), b = bounds_in(op->b, scope);
      return {std::max(a.min, b.min), std::max(a.max, b.max)};
    }
    case NodeKind::kNot: {
      IntRange a = bounds_in(e.as<Not>()->a, scope);
      return {1 - a.max, 1 - a.min};
    }
    default: return type_range(e.type());
  }
}

// Narrows with `lhs cmp rhs` taken as true.
template <class Scope>
void narrow_comparison(NodeKind kind, const Expr& lhs, const Expr& rhs, Scope* scope) {
  if (lhs.type().is_float()) return;
  LinearForm f = linearize(lhs);
  f.add(linearize(rhs), -1);
  // f cmp 0 with f = c*v + rest: bound v by what rest can be.
  for (const LinearTerm& term : f.terms) {
    const Variable* v = term.atom.as<Variable>();
    if (!v) continue;
    LinearForm rest = f;
    rest.add_term(term.atom, -term.coeff);
    IntRange r = linear_bounds(rest, *scope);
    // c*v + r  cmp 0  ->  c*v cmp -r, for every r in range: use the weakest bound.
    int64_t c = term.coeff;
    IntRange cur = bounds_in(term.atom, *scope);
    IntRange next = cur;
    // Express as c*v in [lo, hi] with lo = -r.max (or -r.max + 1 for strict), hi = -r.min.
    int64_t lo = kNegInf, hi = kPosInf;
    switch (kind) {
      case NodeKind::kLT: hi = r.min == kNegInf ? kPosInf : add_ext(neg_ext(r.min), -1); break;
      case NodeKind::kLE: hi = neg_ext(r.min); break;
      case NodeKind::kGT: lo = r.max == kPosInf ? kNegInf : add_ext(neg_ext(r.max), 1); break;
      case NodeKind::kGE: lo = neg_ext(r.max); break;
      case NodeKind::kEQ: lo = neg_ext(r.max), hi = neg_ext(r.min); break;
      default: return;
    }
    // c*v in [lo, hi]  ->  v in [ceil(lo/c), floor(hi/c)] for c > 0, swapped for c < 0.
    auto ceil_div = [](int64_t a, int64_t b) { return -floor_div(-a, b); };
    if (c > 0) {
      if (!is_inf(lo)) next.min = std::max(next.min, ceil_div(lo, c));
      if (!is_inf(hi)) next.max = std::min(next.max, floor_div(hi, c));
    } else {
      if (!is_inf(hi)) next.min = std::max(next.min, ceil_div(hi, c));
      if (!is_inf(lo)) next.max = std::min(next.max, floor_div(lo, c));
    }
    if (!(next == cur)) set_range(scope, v->name, next);
  }
}

NodeKind negate_cmp(NodeKind k) {
  switch (k) {
    case NodeKind::kLT: return NodeKind::kGE;
    case NodeKind::kLE: return NodeKind::kGT;
    case NodeKind::kGT: return NodeKind::kLE;
    case NodeKind::kGE: return NodeKind::kLT;
    case NodeKind::kEQ: return NodeKind::kNE;
    case NodeKind::kNE: return NodeKind::kEQ;
    default: return k;
  }
}

template <class T, class Scope>
bool try_compare(const Expr& c, bool truth, Scope* scope) {
  const T* op = c.as<T>();
  if (!op) return false;
  narrow_comparison(truth ? T::kKind : negate_cmp(T::kKind), op->a, op->b, scope);
  return true;
}

template <class Scope>
void narrow_in(const Expr& condition, bool truth, Scope* scope) {
  if (const And* a = condition.as<And>()) {
    if (truth) {  // both hold
      narrow_in(a->a, true, scope);
      narrow_in(a->b, true, scope);
    }
    return;
  }
  if (const Or* o = condition.as<Or>()) {
    if (!truth) {  // neither holds
      narrow_in(o->a, false, scope);
      narrow_in(o->b, false, scope);
    }
    return;
  }
  if (const Not* n = condition.as<Not>()) return narrow_in(n->a, !truth, scope);
  try_compare<LT>(condition, truth, scope) || try_compare<LE>(condition, truth, scope) ||
      try_compare<GT>(condition, truth, scope) || try_compare<GE>(condition, truth, scope) ||
      try_compare<EQ>(condition, truth, scope);
}

}  // namespace

const IntRange* RangeStack::find(const std::string& name) const {
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it)
    if (it->name == name) return &it->range;
  return find_range(base_, name);
}

void RangeStack::push(std::string_view name, IntRange r) {
  if (entries_.capacity() == 0) entries_.reserve(16);  // one allocation for a whole loop nest
  entries_.push_back({name, r});
}

IntRange constant_bounds(const Expr& e, const RangeScope& scope) { return bounds_in(e, scope); }
IntRange constant_bounds(const Expr& e, const RangeStack& scope) { return bounds_in(e, scope); }

void narrow_by_condition(const Expr& condition, bool truth, RangeScope* scope) { narrow_in(condition, truth, scope); }
void narrow_by_condition(const Expr& condition, bool truth, RangeStack* scope) { narrow_in(condition, truth, scope); }

}  // namespace tensorgym
