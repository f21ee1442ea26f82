#include "codegen/ir/linear_form.h"

#include "codegen/ir/ir_equality.h"

namespace tensorgym {

void LinearForm::add_term(const Expr& atom, int64_t coeff) {
  if (coeff == 0) return;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (structural_equal(terms[i].atom, atom)) {
      terms[i].coeff += coeff;
      if (terms[i].coeff == 0) terms.erase(terms.begin() + long(i));
      return;
    }
  }
  terms.push_back({atom, coeff});
}

void LinearForm::add(const LinearForm& other, int64_t k) {
  for (const LinearTerm& t : other.terms) add_term(t.atom, t.coeff * k);
  constant += other.constant * k;
}

void LinearForm::scale(int64_t k) {
  if (k == 0) {
    terms.clear();
    constant = 0;
    return;
  }
  for (LinearTerm& t : terms) t.coeff *= k;
  constant *= k;
}

int64_t LinearForm::coeff_of(const Expr& atom) const {
  for (const LinearTerm& t : terms)
    if (structural_equal(t.atom, atom)) return t.coeff;
  return 0;
}

namespace {

void linearize_into(const Expr& e, int64_t k, LinearForm* out) {
  if (const IntImm* i = e.as<IntImm>()) {
    out->constant += i->value * k;
  } else if (const Add* a = e.as<Add>()) {
    linearize_into(a->a, k, out);
    linearize_into(a->b, k, out);
  } else if (const Sub* s = e.as<Sub>()) {
    linearize_into(s->a, k, out);
    linearize_into(s->b, -k, out);
  } else if (const Mul* m = e.as<Mul>()) {
    if (const int64_t* c = as_const_int(m->b)) {
      linearize_into(m->a, k * *c, out);
    } else if (const int64_t* c2 = as_const_int(m->a)) {
      linearize_into(m->b, k * *c2, out);
    } else {
      out->add_term(e, k);
    }
  } else {
    out->add_term(e, k);
  }
}

Expr scaled(const Expr& atom, int64_t c, DataType t) {
  return c == 1 ? atom : Mul::make(atom, IntImm::make(t, c));
}

}  // namespace

LinearForm linearize(const Expr& e) {
  LinearForm f;
  linearize_into(e, 1, &f);
  return f;
}

Expr from_linear(const LinearForm& f, DataType t) {
  Expr result;
  // Positive terms first, in their order, so "a - b" does not print as "-b + a".
  for (int pass = 0; pass < 2; ++pass) {
    for (const LinearTerm& term : f.terms) {
      bool positive = term.coeff > 0;
      if (positive != (pass == 0)) continue;
      if (!result.defined()) {
        result = scaled(term.atom, term.coeff, t);
      } else if (positive) {
        result = Add::make(result, scaled(term.atom, term.coeff, t));
      } else {
        result = Sub::make(result, scaled(term.atom, -term.coeff, t));
      }
    }
  }
  if (!result.defined()) return IntImm::make(t, f.constant);
  if (f.constant > 0) result = Add::make(result, IntImm::make(t, f.constant));
  if (f.constant < 0) result = Sub::make(result, IntImm::make(t, -f.constant));
  return result;
}

}  // namespace tensorgym
