// The CPUs this process may run on, and pinning a thread to one or more of them.
#pragma once

#include <sys/types.h>

#include <vector>

#include "support/status.h"

namespace tensorgym {

// The CPUs of this process's affinity mask, in increasing order.
Expected<std::vector<int>> allowed_cpus();

// The CPUs thread `tid` (of any process) may run on, in increasing order; 0 is the
// calling thread.
Expected<std::vector<int>> thread_cpus(pid_t tid);

// Lets the calling thread run on `cpus` only; an error says why not. Threads it
// starts afterwards inherit the mask.
Status set_this_thread_cpus(const std::vector<int>& cpus);

// Pins the calling thread to `cpu`.
Status pin_this_thread(int cpu);

}  // namespace tensorgym
