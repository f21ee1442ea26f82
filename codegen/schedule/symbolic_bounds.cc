#include "codegen/schedule/symbolic_bounds.h"

#include "codegen/ir/ir_visitor.h"
#include "codegen/ir/linear_form.h"

namespace tensorgym {
namespace {

bool varies(const Expr& e, const RangeScope& varying) {
  bool found = false;
  visit_exprs(e, [&](const Expr& n) {
    if (const Variable* v = n.as<Variable>()) found |= varying.count(v->name) > 0;
  });
  return found;
}

SymbolicInterval constant_fallback(const Expr& e, const RangeScope& varying, const RangeScope& all) {
  RangeScope scope = all;
  for (const auto& [name, r] : varying) scope[name] = r;
  IntRange r = constant_bounds(e, scope);
  SymbolicInterval out;
  DataType t = e.type();
  if (r.min != IntRange::kNegInf) out.min = IntImm::make(t, r.min);
  if (r.max != IntRange::kPosInf) out.max = IntImm::make(t, r.max);
  return out;
}

Expr scale(const Expr& e, int64_t c) {
  return c == 1 ? e : Mul::make(e, IntImm::make(e.type(), c));
}

}  // namespace

SymbolicInterval symbolic_bounds(const Expr& e, const RangeScope& varying, const RangeScope& all) {
  if (!varies(e, varying)) return {e, e};
  DataType t = e.type();
  if (const Variable* v = e.as<Variable>()) {
    const IntRange& r = varying.at(v->name);
    return {IntImm::make(t, r.min), IntImm::make(t, r.max)};
  }
  switch (e.kind()) {
    case NodeKind::kAdd:
    case NodeKind::kSub:
    case NodeKind::kMul: {
      LinearForm f = linearize(e);
      if (f.terms.size() == 1 && f.terms[0].coeff == 1 && f.constant == 0 && f.terms[0].atom.same_as(e))
        return constant_fallback(e, varying, all);  // a product of two non-constants
      Expr lo = IntImm::make(t, f.constant), hi = lo;
      for (const LinearTerm& term : f.terms) {
        SymbolicInterval b = symbolic_bounds(term.atom, varying, all);
        if (!b.bounded()) return constant_fallback(e, varying, all);
        if (term.coeff > 0) {
          lo = Add::make(lo, scale(b.min, term.coeff));
          hi = Add::make(hi, scale(b.max, term.coeff));
        } else {
          lo = Add::make(lo, scale(b.max, term.coeff));
          hi = Add::make(hi, scale(b.min, term.coeff));
        }
      }
      return {lo, hi};
    }
    case NodeKind::kDiv: {
      const Div* d = e.as<Div>();
      const int64_t* c = as_const_int(d->b);
      if (!c || *c <= 0) break;
      SymbolicInterval a = symbolic_bounds(d->a, varying, all);
      if (!a.bounded()) break;
      return {Div::make(a.min, d->b), Div::make(a.max, d->b)};
    }
    case NodeKind::kMod: {
      const Mod* m = e.as<Mod>();
      const int64_t* c = as_const_int(m->b);
      if (!c || *c <= 0) break;
      return {IntImm::make(t, 0), IntImm::make(t, *c - 1)};
    }
    case NodeKind::kMin:
    case NodeKind::kMax: {
      bool is_min = e.kind() == NodeKind::kMin;
      Expr x = is_min ? e.as<Min>()->a : e.as<Max>()->a;
      Expr y = is_min ? e.as<Min>()->b : e.as<Max>()->b;
      SymbolicInterval a = symbolic_bounds(x, varying, all), b = symbolic_bounds(y, varying, all);
      if (!a.bounded() || !b.bounded()) break;
      if (is_min) return {Min::make(a.min, b.min), Min::make(a.max, b.max)};
      return {Max::make(a.min, b.min), Max::make(a.max, b.max)};
    }
    case NodeKind::kSelect: {
      const Select* s = e.as<Select>();
      SymbolicInterval a = symbolic_bounds(s->true_value, varying, all);
      SymbolicInterval b = symbolic_bounds(s->false_value, varying, all);
      if (!a.bounded() || !b.bounded()) break;
      return {Min::make(a.min, b.min), Max::make(a.max, b.max)};
    }
    default: break;
  }
  return constant_fallback(e, varying, all);
}

}  // namespace tensorgym
