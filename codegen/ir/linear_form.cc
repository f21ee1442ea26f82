#include "codegen/ir/linear_form.h"

#include <algorithm>

#include "codegen/ir/ir_equality.h"

namespace tensorgym {

void LinearForm::add_term(const Expr& atom, int64_t coeff) {
  if (coeff == 0) return;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (structural_equal(terms[i].atom, atom)) {
      terms[i].coeff += coeff;
      if (terms[i].coeff == 0) terms.erase(terms.begin() + i);
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

SmallVector<std::pair<Expr, int64_t>, 2> take_quotient_remainder_pairs(LinearForm* f) {
  SmallVector<std::pair<Expr, int64_t>, 2> pairs;
  for (size_t i = 0; i < f->terms.size(); ++i) {
    const Mod* m = f->terms[i].atom.as<Mod>();
    const int64_t* c = m ? as_const_int(m->b) : nullptr;
    if (!c || *c <= 0) continue;
    const int64_t k = f->terms[i].coeff;
    for (size_t j = 0; j < f->terms.size(); ++j) {
      const Div* d = f->terms[j].atom.as<Div>();
      const int64_t* dc = d ? as_const_int(d->b) : nullptr;
      if (!dc || *dc != *c || f->terms[j].coeff != k * *c || !structural_equal(d->a, m->a)) continue;
      pairs.push_back({m->a, k});  // holds x: erasing the terms drops the atoms
      f->terms.erase(f->terms.begin() + std::max(i, j));
      f->terms.erase(f->terms.begin() + std::min(i, j));
      i = size_t(-1);  // the terms moved: look again from the start
      break;
    }
  }
  return pairs;
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
  for_each_linear_piece(f, [&](bool subtract, const Expr& atom, int64_t factor) {
    Expr x = scaled(atom, factor, t);
    if (!result.defined()) {
      result = std::move(x);
    } else if (subtract) {
      result = Sub::make(result, x);
    } else {
      result = Add::make(result, x);
    }
  });
  if (!result.defined()) return IntImm::make(t, f.constant);
  if (f.constant > 0) result = Add::make(result, IntImm::make(t, f.constant));
  if (f.constant < 0) result = Sub::make(result, IntImm::make(t, -f.constant));
  return result;
}

namespace {

bool is_imm(const Expr& e, DataType t, int64_t v) {
  const IntImm* i = e.as<IntImm>();
  return i && i->type == t && i->value == IntImm::wrap(t, v);
}

// Whether `e` is scaled(atom, c, t).
bool is_scaled(const Expr& e, const Expr& atom, int64_t c, DataType t) {
  if (c == 1) return e.same_as(atom);
  const Mul* m = e.as<Mul>();
  return m && m->type == t && m->a.same_as(atom) && is_imm(m->b, t, c);
}

}  // namespace

bool is_from_linear(const Expr& e, const LinearForm& f, DataType t) {
  if (!e.defined() || e.type() != t) return false;
  // from_linear's pieces, in the order it chains them.
  struct Piece {
    bool subtract;
    const Expr* atom;
    int64_t factor;
  };
  Piece inline_pieces[8];
  std::vector<Piece> more;
  Piece* pieces = inline_pieces;
  if (f.terms.size() > 8) {
    more.resize(f.terms.size());
    pieces = more.data();
  }
  size_t n = 0;
  for_each_linear_piece(f, [&](bool subtract, const Expr& atom, int64_t factor) {
    pieces[n++] = {subtract, &atom, factor};
  });
  if (n == 0) return is_imm(e, t, f.constant);
  const Expr* node = &e;
  if (f.constant > 0) {
    const Add* a = node->as<Add>();
    if (!a || a->type != t || !is_imm(a->b, t, f.constant)) return false;
    node = &a->a;
  } else if (f.constant < 0) {
    const Sub* s = node->as<Sub>();
    if (!s || s->type != t || !is_imm(s->b, t, -f.constant)) return false;
    node = &s->a;
  }
  for (size_t i = n; i-- > 1;) {
    const Expr* rest = nullptr;
    const Expr* operand = nullptr;
    if (pieces[i].subtract) {
      const Sub* s = node->as<Sub>();
      if (!s || s->type != t) return false;
      rest = &s->a;
      operand = &s->b;
    } else {
      const Add* a = node->as<Add>();
      if (!a || a->type != t) return false;
      rest = &a->a;
      operand = &a->b;
    }
    if (!is_scaled(*operand, *pieces[i].atom, pieces[i].factor, t)) return false;
    node = rest;
  }
  return is_scaled(*node, *pieces[0].atom, pieces[0].factor, t);
}

}  // namespace tensorgym
