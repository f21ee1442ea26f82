#include "envs/schedule/metrics.h"

#include "codegen/analysis/cost_model.h"

namespace tensorgym {

double estimated_cycles(const LoopNest& nest) { return est_cycles(nest, MachineModel::reference()); }

double estimated_cycles_on_host(const LoopNest& nest) {
  static const MachineModel host = MachineModel::from_host();
  return est_cycles(nest, host);
}

}  // namespace tensorgym
