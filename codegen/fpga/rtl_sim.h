// The accelerator's RTL (codegen/fpga/rtl/*.sv) simulated with Verilator: the same
// stream and DRAM image as fsim, the same result where the RTL can tell. The testbench
// feeds fetch the encoded stream one instruction a cycle, holds DRAM and serves the
// three modules' row requests by fsim's rule (docs/fpga.md "Timing"): a request of B
// bytes issued at t completes at max(t + latency, port_free) + ceil(B / bytes per
// cycle), first come first served, at a tie load, compute, store; each module may have
// up to dram_max_outstanding in flight.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/fpga/accel_config.h"
#include "codegen/fpga/fsim.h"
#include "codegen/fpga/isa.h"
#include "support/status.h"

namespace tensorgym::fpga {

struct RtlOptions {
  int64_t max_cycles = 200'000'000;  // a stream still running then is DEADLINE_EXCEEDED
};

// The configurations (their JSON files) a Verilator model was built for; empty when the
// build had no Verilator.
std::vector<std::string> rtl_config_files();

// Runs `stream` on `dram` (in place) on the RTL model built for `config`'s design (the
// GEMM core, buffers, pipelines and queues must match a built one; DRAM latency and
// width are the testbench's and may differ; dram_max_outstanding may be at most the
// built design's, the limit the model's row engines are sized for). Fills cycles,
// seconds, instructions, the DRAM byte counts and the per-module breakdown (observed:
// what each module does each cycle, its rows' transfer cycles), not the datapath
// counters (fsim's).
// UNIMPLEMENTED without a matching model; INVALID_ARGUMENT for a malformed stream or a
// request outside the image; FAILED_PRECONDITION when FINISH completes while a module
// still works.
Expected<SimulationResult> simulate_rtl(const AccelConfig& config, const std::vector<Instruction>& stream,
                                        std::vector<uint8_t>& dram, const RtlOptions& options = {});

}  // namespace tensorgym::fpga
