// The text form of a schedule: a list of primitive applications.
//   split(C.i, 32, io, ii); split(C.j, 32, jo, ji)
//   reorder(C, io, jo, ii, ji)   # comment
// One primitive per line or `;`-separated; prints one per line and parses back to
// the same trace.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "codegen/ir/program.h"
#include "support/status.h"

namespace tensorgym {

struct Primitive {
  std::string name;               // "split"
  std::vector<std::string> args;  // {"C.i", "32", "io", "ii"}
  SourceLoc loc;                  // where it was read from, when parsed

  std::string to_string() const;  // "split(C.i, 32, io, ii)"
  bool operator==(const Primitive& o) const { return name == o.name && args == o.args; }
};

struct Trace {
  std::vector<Primitive> steps;

  std::string to_string() const;  // one primitive per line, newline-terminated
  bool operator==(const Trace& o) const { return steps == o.steps; }
};

// Parses trace text (syntax only; primitives are checked when applied). Errors are
// INVALID_ARGUMENT "line:column: message".
Expected<Trace> parse_trace(std::string_view text);

}  // namespace tensorgym
