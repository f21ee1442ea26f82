// The CUDA toolkit's PTX assembler, where it is installed: it checks that PTX assembles
// for an architecture and reports each kernel's registers, spills and shared memory
// (the `ptxas_stats` observation, and the occupancy the GPU model needs). The build
// never needs it; without it these calls are NOT_FOUND.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "support/status.h"

namespace tensorgym::cuda {

struct PtxasStats {
  int registers = 0;             // per thread
  int barriers = 0;              // named barriers used
  int64_t shared_bytes = 0;      // static shared memory per block
  int64_t stack_bytes = 0;       // local stack frame per thread
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;
  int64_t constant_bytes = 0;    // cmem[0]: the kernel's parameters
};

// $TENSORGYM_PTXAS, else `ptxas` on PATH, else /usr/local/cuda/bin/ptxas; "" when none.
std::string find_ptxas();

// Assembles `ptx` for `arch` ("sm_90") with `ptxas -v`. Each kernel's statistics by its
// name. NOT_FOUND without ptxas; INVALID_ARGUMENT with ptxas's messages when the PTX
// does not assemble; DEADLINE_EXCEEDED past timeout_s.
Expected<std::map<std::string, PtxasStats>> assemble_ptx(const std::string& ptx, const std::string& arch,
                                                         double timeout_s = 60);

// The statistics in `ptxas -v` output (the part above, for tests and other callers).
std::map<std::string, PtxasStats> parse_ptxas_verbose(const std::string& text);

}  // namespace tensorgym::cuda
