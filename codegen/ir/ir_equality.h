// Structural equality and hashing: two trees are equal when they have the same node
// kinds, types, names and constants in the same shape, whatever their sharing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codegen/ir/expr.h"
#include "codegen/ir/stmt.h"

namespace tensorgym {

bool structural_equal(const Expr& a, const Expr& b);
bool structural_equal(const Stmt& a, const Stmt& b);
uint64_t structural_hash(const Expr& e);
uint64_t structural_hash(const Stmt& s);

struct ExprHash {
  size_t operator()(const Expr& e) const { return size_t(structural_hash(e)); }
};
struct ExprEqual {
  bool operator()(const Expr& a, const Expr& b) const { return structural_equal(a, b); }
};

}  // namespace tensorgym
