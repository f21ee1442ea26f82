// fsim: the accelerator's functional and cycle simulator. It executes an instruction
// stream bit-exactly on a DRAM image and counts cycles, with the load, compute and
// store modules running concurrently, the fetch module dispatching in order into
// bounded command queues, the dependency token queues, and one DRAM port shared first
// come first served. The cycle rules (docs/fpga.md "Timing") are the RTL's; the two
// are checked against each other.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/fpga/accel_config.h"
#include "codegen/fpga/isa.h"
#include "support/status.h"

namespace tensorgym::fpga {

struct ModuleCycles {
  int64_t instructions = 0;
  int64_t busy = 0;              // decoding, iterating, transferring, zero-padding
  int64_t dependency_stall = 0;  // an instruction waited for a token from a neighbour
  int64_t dram_stall = 0;        // waited for DRAM: its latency, other modules' transfers
  int64_t idle = 0;              // nothing to do: the rest of the run
};

struct SimulationResult {
  int64_t cycles = 0;   // until FINISH completes
  double seconds = 0;   // cycles at the configured clock
  ModuleCycles modules[3];  // by Module
  int64_t dram_read_bytes = 0, dram_write_bytes = 0;
  int64_t gemm_iterations = 0, alu_iterations = 0;
  int64_t macs = 0;
  int64_t instructions = 0;
  const ModuleCycles& of(Module m) const { return modules[int(m)]; }
};

struct SimulateOptions {
  // Compute what the instructions compute; off: only the cycles (identical: data never
  // changes timing) and the range checks, for search.
  bool functional = true;
};

// Runs `stream` on `dram` (read and written in place; LOADs and STOREs address it in
// entries of their buffer's size from byte 0). INVALID_ARGUMENT for a malformed stream
// (check_stream) or an operand outside a buffer or DRAM, naming the instruction;
// FAILED_PRECONDITION for a stream that deadlocks or whose FINISH completes while a
// module still works.
Expected<SimulationResult> simulate(const AccelConfig& config, const std::vector<Instruction>& stream,
                                    std::vector<uint8_t>& dram, const SimulateOptions& options = {});

// "cycles 1234 (12.3 us at 100 MHz); load busy 40% ..." for logs and the CLI.
std::string summary(const SimulationResult& result, const AccelConfig& config);

}  // namespace tensorgym::fpga
