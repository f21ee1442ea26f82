#include "codegen/fpga/compile_conv2d.h"

#include "codegen/fpga/conv2d_program.h"
#include "codegen/fpga/schedule_tiling.h"

namespace tensorgym::fpga {

Expected<CompiledConv2d> compile_conv2d(const ScheduleState& state, const AccelConfig& config,
                                        const Conv2dData* data) {
  CompiledConv2d out;
  TG_ASSIGN_OR_RETURN(out.layer, recognize_conv2d(state.program(), config));
  TG_ASSIGN_OR_RETURN(out.tiling, read_tiling(state, config));
  TG_RETURN_IF_ERROR(check_tiling(config, out.layer, out.tiling));
  if (data != nullptr) {
    TG_ASSIGN_OR_RETURN(out.program, make_conv2d_program(config, out.layer, out.tiling, *data));
  } else {
    TG_ASSIGN_OR_RETURN(out.program, make_conv2d_program(config, out.layer, out.tiling, 1, /*with_data=*/false));
  }
  return out;
}

}  // namespace tensorgym::fpga
