// Text form of expressions (the program language's own syntax) and of loop nests.
#pragma once

#include <ostream>
#include <string>

#include "codegen/ir/expr.h"
#include "codegen/ir/stmt.h"

namespace tensorgym {

std::string to_string(const Expr& e);
std::string to_string(const Stmt& s);
// Appends to_string(s) to *out.
void append_to_string(const Stmt& s, std::string* out);
std::ostream& operator<<(std::ostream& os, const Expr& e);
std::ostream& operator<<(std::ostream& os, const Stmt& s);

// Shortest text that reads back to the same value of the type ("0.5", "1e-07", "3.0").
std::string float_literal(double v, DataType t);

}  // namespace tensorgym
