// Scratch memory of a lowered LoopNest: how many bytes of local (Allocate'd) buffers
// are live at once. Memory-planning observations and the runner's memory caps use it.
#pragma once

#include <cstdint>

#include "codegen/lower/loop_nest.h"

namespace tensorgym {

// The largest total of local buffer bytes live at one time when the nest runs on
// `threads` threads (< 1 counts as 1). Liveness follows the IR's scopes: an
// allocation is live while its body runs, so nested allocations add up and sibling
// ones do not. An allocation inside a parallel loop is live once per thread running
// that loop, at most the loop's extent times; a parallel loop nested in another runs
// serially on its thread (as the CPU runtime does), so only the outermost parallel
// loop multiplies.
int64_t peak_scratch_bytes(const LoopNest& nest, int threads);

}  // namespace tensorgym
