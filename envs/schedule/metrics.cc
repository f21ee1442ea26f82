#include "envs/schedule/metrics.h"

#include "codegen/analysis/cost_model.h"

namespace tensorgym {

double estimated_cycles(const LoopNest& nest) { return est_cycles(nest, MachineModel::reference()); }

}  // namespace tensorgym
