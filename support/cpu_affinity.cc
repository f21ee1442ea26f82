#include "support/cpu_affinity.h"

#include <pthread.h>
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace tensorgym {

Expected<std::vector<int>> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return internal_error(std::string("cannot read the CPU affinity mask: ") + std::strerror(errno));
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

Status pin_this_thread(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return invalid_argument("no CPU " + std::to_string(cpu));
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (int e = pthread_setaffinity_np(pthread_self(), sizeof set, &set))
    return internal_error("cannot pin a thread to CPU " + std::to_string(cpu) + ": " + std::strerror(e));
  return Status();
}

}  // namespace tensorgym
