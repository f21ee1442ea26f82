#include "service/dispatch_cpu.h"

#include <sched.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace tensorgym::service {

Status check_dispatch_cpu(int cpu) {
  if (cpu < -1) return invalid_argument("--dispatch-cpu must be a CPU number, or -1 for none");
  if (cpu == -1) return Status();
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
    return internal_error(std::string("sched_getaffinity: ") + std::strerror(errno));
  if (cpu < CPU_SETSIZE && CPU_ISSET(cpu, &allowed)) return Status();
  std::string list;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &allowed)) continue;
    if (!list.empty()) list += ",";
    list += std::to_string(c);
  }
  return invalid_argument("--dispatch-cpu " + std::to_string(cpu) + ": this process may run on CPUs " + list +
                          " only");
}

void pin_dispatch_thread(int cpu) {
  if (cpu < 0) return;
  thread_local int pinned = -1;
  if (pinned == cpu) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  // Checked at start-up; should the CPU go away later, the thread runs where it was.
  if (sched_setaffinity(0, sizeof set, &set) == 0) pinned = cpu;
}

}  // namespace tensorgym::service
