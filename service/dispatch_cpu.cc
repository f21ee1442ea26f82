#include "service/dispatch_cpu.h"

#include <algorithm>
#include <string>

#include "support/cpu_affinity.h"

namespace tensorgym::service {

Status check_dispatch_cpu(int cpu) {
  if (cpu < -1) return invalid_argument("--dispatch-cpu must be a CPU number, or -1 for none");
  if (cpu == -1) return Status();
  TG_ASSIGN_OR_RETURN(std::vector<int> allowed, allowed_cpus());
  if (std::find(allowed.begin(), allowed.end(), cpu) != allowed.end()) return Status();
  std::string list;
  for (int c : allowed) list += (list.empty() ? "" : ",") + std::to_string(c);
  return invalid_argument("--dispatch-cpu " + std::to_string(cpu) + ": this process may run on CPUs " + list +
                          " only");
}

void pin_dispatch_thread(int cpu) {
  if (cpu < 0) return;
  thread_local int pinned = -1;
  if (pinned == cpu) return;
  // Checked at start-up; should the CPU go away later, the thread runs where it was.
  if (pin_this_thread(cpu).ok()) pinned = cpu;
}

}  // namespace tensorgym::service
