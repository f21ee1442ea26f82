// yosys runs of the accelerator's RTL for a configuration the build generated
// parameters for (TENSORGYM_RTL_CONFIGS): codegen/fpga/rtl/synth.sh, its `stat` report
// read by synth_report.h. A synthesis takes a minute or two.
#pragma once

#include <string>

#include "codegen/fpga/synth_report.h"
#include "support/status.h"

namespace tensorgym::fpga {

// Synthesizes configuration `name` in `dir` (its parameters copied there) and reads the
// report. UNAVAILABLE where configure found no yosys or generated no parameters for
// `name`; INTERNAL where yosys fails (the log's path said).
Expected<Utilization> synthesize(const std::string& name, const std::string& dir);

// The report of the build's own synthesis of `name` (build/fpga_rtl/NAME, what `ninja
// fpga_synth_NAME` writes), synthesizing first where it is missing or older than the
// RTL or the parameters. One synthesis at a time in this process.
Expected<Utilization> synthesized_utilization(const std::string& name);

}  // namespace tensorgym::fpga
