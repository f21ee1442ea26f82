// Keeps this process's cores from going idle between requests (`tensorgym serve
// --keep-cores-awake`). On a VM an idle core halts (its vCPU exits to the host) and
// the next request's work runs with the caches emptied: on the 2-vCPU development VM
// an environment step after 200 us asleep took 14-16 us, after 200 us of spinning
// 9-10 us, and the median action step over gRPC went from 1.26x to 1.08x a bare echo
// with the cores kept awake (docs/performance.md). One spinning thread per core at
// SCHED_IDLE, which runs only when nothing else wants the core and gives way to any
// other thread at once, keeps the core out of the halt, as the kernel's idle=poll would
// for the whole machine. It costs the idle cores' power and shows them busy, and on a
// machine with SMT a spinner takes a little from the work on its sibling: off by default.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "support/status.h"

namespace tensorgym::service {

class CoreKeepAwake {
 public:
  // One spinner pinned to each core of this process's CPU affinity mask. Fails, with
  // no thread left running, when a spinner cannot be pinned or made SCHED_IDLE (it
  // must never spin at normal priority).
  static Expected<std::unique_ptr<CoreKeepAwake>> start();
  ~CoreKeepAwake();  // stops and joins the spinners
  CoreKeepAwake(const CoreKeepAwake&) = delete;
  CoreKeepAwake& operator=(const CoreKeepAwake&) = delete;

  // The spinners' thread ids, one per core, in the order of the cores.
  const std::vector<pid_t>& thread_ids() const { return tids_; }
  const std::vector<int>& cores() const { return cores_; }

 private:
  CoreKeepAwake() = default;
  void stop();

  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
  std::vector<pid_t> tids_;
  std::vector<int> cores_;
};

}  // namespace tensorgym::service
