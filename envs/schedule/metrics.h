// Deterministic metrics of a lowered nest shared by observations and rewards.
#pragma once

#include "codegen/lower/loop_nest.h"

namespace tensorgym {

// est_cycles: the analytical cost model on the reference machine (deterministic).
double estimated_cycles(const LoopNest& nest);

}  // namespace tensorgym
