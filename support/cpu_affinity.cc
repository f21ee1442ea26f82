#include "support/cpu_affinity.h"

#include <sched.h>

#include <cerrno>
#include <cstring>

namespace tensorgym {

Expected<std::vector<int>> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return internal_error(std::string("cannot read this process's CPU affinity mask: ") + std::strerror(errno));
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

}  // namespace tensorgym
