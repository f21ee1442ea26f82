#include "envs/schedule/metrics.h"

#include "codegen/analysis/cost_model.h"
#include "codegen/backend/registry.h"

namespace tensorgym {

double estimated_cycles(const LoopNest& nest) { return est_cycles(nest, MachineModel::reference()); }

double estimated_cycles_on_host(const LoopNest& nest) {
  const MachineModel* host = host_backend().machine_model();
  return est_cycles(nest, host ? *host : MachineModel::reference());
}

}  // namespace tensorgym
