#include "envs/schedule/metrics.h"

#include "codegen/analysis/cost_model.h"
#include "codegen/cpu/host_machine.h"

namespace tensorgym {

double estimated_cycles(const LoopNest& nest) { return est_cycles(nest, MachineModel::reference()); }

double estimated_cycles_on_host(const LoopNest& nest) {
  return est_cycles(nest, host_machine_model());
}

}  // namespace tensorgym
