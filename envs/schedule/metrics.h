// Deterministic metrics of a lowered nest shared by observations and rewards.
#pragma once

#include "codegen/lower/loop_nest.h"

namespace tensorgym {

// est_cycles: the analytical cost model on the reference machine (deterministic).
double estimated_cycles(const LoopNest& nest);

// est_cycles_host: the same model on this host's machine (the host backend's machine_model():
// its caches, vector widths, cores, and its gather and scatter costs as measured once
// per process). Closer to this host's runtimes; neither reproducible elsewhere nor
// bit-exact across processes.
double estimated_cycles_on_host(const LoopNest& nest);

}  // namespace tensorgym
