// The CPUs this process may run on.
#pragma once

#include <vector>

#include "support/status.h"

namespace tensorgym {

// The CPUs of this process's affinity mask, in increasing order.
Expected<std::vector<int>> allowed_cpus();

}  // namespace tensorgym
