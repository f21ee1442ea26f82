// The fpga target's compile step for a convolution: the layer from the program
// (recognize_conv2d), the tiling from the schedule (read_tiling), checked against the
// design (check_tiling), and the instruction stream with its micro-op kernels
// (make_conv2d_program) over the program's own tensors or, without them, zero data for
// timing alone.
#pragma once

#include "codegen/fpga/accel_config.h"
#include "codegen/fpga/conv2d_stream.h"
#include "codegen/schedule/schedule_state.h"
#include "support/status.h"

namespace tensorgym::fpga {

struct CompiledConv2d {
  Conv2dLayer layer;
  Conv2dTiling tiling;
  SampleProgram program;  // the stream, the DRAM image, the expected output where data was given
};

Expected<CompiledConv2d> compile_conv2d(const ScheduleState& state, const AccelConfig& config,
                                        const Conv2dData* data = nullptr);

}  // namespace tensorgym::fpga
