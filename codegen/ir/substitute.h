// Replacing variables by expressions, and asking which variables an expression uses.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "codegen/ir/expr.h"
#include "codegen/ir/stmt.h"

namespace tensorgym {

using VarMap = std::unordered_map<std::string, Expr>;

// Replaces every Variable named in `values`. Loops and lets that rebind a name hide
// it from the replacement inside their bodies.
Expr substitute(const Expr& e, const VarMap& values);
Stmt substitute(const Stmt& s, const VarMap& values);

// Replaces loads of one buffer: each Load of `buffer` becomes `rewrite(load)`.
Expr replace_loads(const Expr& e, const std::string& buffer, const std::function<Expr(const Load*)>& rewrite);

bool uses_var(const Expr& e, const std::string& name);
bool uses_any_var(const Expr& e, const std::unordered_set<std::string>& names);

}  // namespace tensorgym
