#include "codegen/cpu/host_machine.h"

#include <algorithm>

#include "codegen/cpu/cpu_backend.h"

namespace tensorgym {

const MachineModel& host_machine_model() {
  static const MachineModel machine = [] {
    MachineModel m = MachineModel::from_host();
    const CpuTarget& target = CpuTarget::host();
    if (!target.triple.empty()) m.auto_vector_bits = std::min(m.vector_bits, target.auto_vector_bits);
    return m;
  }();
  return machine;
}

}  // namespace tensorgym
