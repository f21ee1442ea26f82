// The FPGA backend (target "fpga"): schedules of quantized convolutions compiled to the
// accelerator's instruction stream (compile_conv2d.h) for its default design
// (configs/zynq7020-1x16x16.json), run bit-exactly and timed by a simulator: fsim (the
// default) or the RTL under Verilator (CompileOptions::simulator "rtl"). Runtimes are
// simulated cycles at the design's clock: deterministic, the same on every machine
// (TargetInfo::simulated). Outside codegen/ it is reached through the backend registry
// (codegen/backend/registry.h), never this header.
#pragma once

#include "codegen/backend/backend.h"

namespace tensorgym {

const Backend& fpga_backend();

}  // namespace tensorgym
