// The `inst_count` observation: how many instructions of each LLVM opcode an
// optimized module holds. No LLVM header here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/status.h"

namespace tensorgym {

// Every LLVM 19 opcode name ("ret", "br", ..., "fadd", ...), in LLVM's opcode order.
const std::vector<std::string>& llvm_opcode_names();

// Counts per opcode (aligned with llvm_opcode_names()) of an LLVM IR module given as
// text; INVALID_ARGUMENT when the text does not parse.
Expected<std::vector<int64_t>> count_llvm_opcodes(const std::string& ir_text);

}  // namespace tensorgym
