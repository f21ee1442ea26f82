// Integer expressions as sum(coeff * atom) + constant, where atoms are the maximal
// non-linear parts (variables, divisions, loads, ...). The simplifier, bounds
// inference and the program checker all reason about indices in this form.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "codegen/ir/expr.h"
#include "support/small_vector.h"

namespace tensorgym {

struct LinearTerm {
  Expr atom;
  int64_t coeff = 0;
};

struct LinearForm {
  // No zero coefficients, no two equal atoms. Index forms have a few terms: inline.
  SmallVector<LinearTerm, 4> terms;
  int64_t constant = 0;

  bool is_constant() const { return terms.empty(); }
  void add_term(const Expr& atom, int64_t coeff);
  void add(const LinearForm& other, int64_t scale = 1);
  void scale(int64_t k);
};

// Removes each pair k * c * (x / c) + k * (x % c) (c a positive constant; x the same
// expression in both) from `f` and returns (x, k) for it: the pair equals k * x under
// floor division, the form a fused loop leaves where its two parts address one
// dimension of a buffer again.
SmallVector<std::pair<Expr, int64_t>, 2> take_quotient_remainder_pairs(LinearForm* f);

// Decomposes an integer expression. Multiplication by a constant distributes;
// everything else that is not + - * becomes an atom.
LinearForm linearize(const Expr& e);

// Rebuilds an expression: terms in order, positive terms first where possible,
// constant last ("x*32 + y - z + 3").
Expr from_linear(const LinearForm& f, DataType t);

// Calls visit(subtract, atom, factor) for the pieces from_linear chains, in its order:
// the positive terms, then the negative ones. The first piece starts the sum with the
// term's own coefficient; later ones are added (`factor` = the coefficient) or
// subtracted (`factor` = minus the coefficient). The constant is not a piece.
template <class F>
void for_each_linear_piece(const LinearForm& f, F&& visit) {
  bool first = true;
  for (int pass = 0; pass < 2; ++pass) {
    for (const LinearTerm& term : f.terms) {
      const bool positive = term.coeff > 0;
      if (positive != (pass == 0)) continue;
      const bool subtract = !first && !positive;
      visit(subtract, term.atom, subtract ? -term.coeff : term.coeff);
      first = false;
    }
  }
}

// Whether from_linear(f, t) would build an expression structurally equal to `e`
// (atoms compared by identity), so a caller may keep `e` instead of a copy.
bool is_from_linear(const Expr& e, const LinearForm& f, DataType t);

}  // namespace tensorgym
