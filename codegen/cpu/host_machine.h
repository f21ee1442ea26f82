// The cost model's machine for this host, as the `est_cycles_host` observation and
// `cost_model_benchmark --host` use it: MachineModel::from_host() (caches, cores,
// vector width, gather and scatter costs measured here) with the vector width LLVM's
// loop vectorizer picks on this CPU (CpuTarget::auto_vector_bits: 256 bits on Intel's
// AVX-512 parts, 512 on AMD Zen 4).
#pragma once

#include "codegen/analysis/cost_model.h"

namespace tensorgym {

// Measured once per process.
const MachineModel& host_machine_model();

}  // namespace tensorgym
