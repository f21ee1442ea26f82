// The program language parser (codegen/ir/program.h parse_program). A program that
// parses must print to text that parses back to an equal program.
#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "codegen/ir/program.h"

namespace tg = tensorgym;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  tg::Expected<tg::Program> program = tg::parse_program(text);
  if (!program.ok()) {
    if (program.status().message().empty()) std::abort();  // every error says what was wrong
    return 0;
  }
  const std::string printed = program->to_text();
  tg::Expected<tg::Program> again = tg::parse_program(printed);
  if (!again.ok()) {
    fmt::print(stderr, "printed program does not parse: {}\n{}\n", again.status().message(), printed);
    std::abort();
  }
  if (!tg::structural_equal(*program, *again)) {
    fmt::print(stderr, "printed program parses to a different program:\n{}\n", printed);
    std::abort();
  }
  return 0;
}
