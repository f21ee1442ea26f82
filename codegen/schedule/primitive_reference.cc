#include "codegen/schedule/primitive_reference.h"

#include <fmt/format.h>

#include "codegen/schedule/primitive.h"

namespace tensorgym {
namespace {

// A '|' inside a cell, even in code, would end the cell.
std::string escape_pipes(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string primitive_reference_markdown() {
  std::string out = "| primitive | what it does | rejected when |\n| --- | --- | --- |\n";
  for (const PrimitiveDef* p : all_primitives())
    fmt::format_to(std::back_inserter(out), "| `{}` | {} | {} |\n", escape_pipes(p->usage), escape_pipes(p->summary),
                   escape_pipes(p->rejects));
  return out;
}

}  // namespace tensorgym
