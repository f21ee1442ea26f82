#include "support/cpu_affinity.h"

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace tensorgym {

Expected<std::vector<int>> thread_cpus(pid_t tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(tid, sizeof set, &set) != 0)
    return internal_error(fmt::format("cannot read the CPU affinity mask of thread {}: {}", tid, std::strerror(errno)));
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

Expected<std::vector<int>> allowed_cpus() { return thread_cpus(0); }

Status set_this_thread_cpus(const std::vector<int>& cpus) {
  if (cpus.empty()) return invalid_argument("a thread needs at least one CPU to run on");
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) return invalid_argument(fmt::format("no CPU {}", cpu));
    CPU_SET(cpu, &set);
  }
  if (int e = pthread_setaffinity_np(pthread_self(), sizeof set, &set))
    return internal_error(fmt::format("cannot set a thread's CPUs ({}{}): {}", cpus.front(),
                                      cpus.size() > 1 ? ", ..." : "", std::strerror(e)));
  return Status();
}

Status pin_this_thread(int cpu) { return set_this_thread_cpus({cpu}); }

}  // namespace tensorgym
