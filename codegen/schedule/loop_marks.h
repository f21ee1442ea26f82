// Marks the accelerator's primitives leave on loops (as pragmas): what the fpga target
// reads, and what the CPU and GPU targets refuse.
#pragma once

#include "codegen/schedule/schedule_state.h"

namespace tensorgym {

// tensorize(S.l, gemm): the loops from this one inward are one GEMM-core operation.
bool is_tensorized(const Loop& loop);
// pragma(S.l, dma_copy): the loops from this one inward are one DMA transfer.
bool is_dma_copy(const Loop& loop);

}  // namespace tensorgym
