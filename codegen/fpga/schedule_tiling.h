// Reading a convolution's tiling off an accelerator schedule: the front of the fpga
// target's compiler. The schedule has the form of TVM's VTA conv2d schedules
// (docs/fpga.md "From a schedule to a tiling"):
//
//   split / reorder the output stage Y into tile loops (n, k, y, x, outermost first) and
//     the tile inside them; at most one tile loop bound to vthread (its extent: the
//     virtual threads, 1 or 2);
//   the convolution C: set_scope(C, acc_buffer), compute_at(C, Y.<last tile loop>),
//     its input channel blocks split into a chunk loop outermost, tensorize(C.b, gemm);
//   its input window (the padding stage, or a cache_read of the input) and a
//     cache_read of the weights, in inp_buffer and wgt_buffer, computed at the chunk
//     loop, each with pragma(..., dma_copy).
//
// Anything else is FAILED_PRECONDITION naming the stage, the loop and the rule.
#pragma once

#include "codegen/fpga/accel_config.h"
#include "codegen/fpga/conv2d_stream.h"
#include "codegen/schedule/schedule_state.h"
#include "support/status.h"

namespace tensorgym::fpga {

// The tiling of `state`'s tensorized convolution for `config`. The program's layout
// (blocked, as conv2d_stream.h says) is checked by recognize_conv2d; this reads only
// the schedule.
Expected<Conv2dTiling> read_tiling(const ScheduleState& state, const AccelConfig& config);

// The inverse: a schedule of that form for `tiling` of `layer`'s program (as
// conv2d_program_text writes it: stages P (when padded), C, Y), one primitive a line.
// Two virtual threads bind the outer half of the first tile axis (k, y, x) that has an
// even number of tiles; INVALID_ARGUMENT where none has, or the tiling is not legal.
Expected<std::string> schedule_text(const AccelConfig& config, const Conv2dLayer& layer, const Conv2dTiling& tiling);

}  // namespace tensorgym::fpga
