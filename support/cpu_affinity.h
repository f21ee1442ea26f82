// The CPUs this process may run on, and pinning a thread to one of them.
#pragma once

#include <vector>

#include "support/status.h"

namespace tensorgym {

// The CPUs of this process's affinity mask, in increasing order.
Expected<std::vector<int>> allowed_cpus();

// Pins the calling thread to `cpu`; an error says why not. Threads it starts
// afterwards inherit the pin.
Status pin_this_thread(int cpu);

}  // namespace tensorgym
