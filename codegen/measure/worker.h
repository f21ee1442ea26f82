// The worker process's side of the protocol (`tensorgym worker`): read a request
// frame, run the job (measure_job.h), report compilation, wait for the go, send the
// result; repeat until the runner closes the channel. See frame.h for the frames.
//
// A worker dies with its parent: it arms PR_SET_PDEATHSIG(SIGKILL) first thing and
// then checks that its parent is still the process that started it (the parent may
// have died before the signal was armed). Then it sandboxes itself (sandbox.h) and
// says hello with one line saying what it runs under.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "codegen/measure/measure_job.h"
#include "codegen/measure/measurement.h"

namespace tensorgym {

struct WorkerOptions {
  // The channel: frames are read from in_fd and written to out_fd (the runner passes
  // one socket as both). When out_fd is 1 (stdout), the worker moves the channel to a
  // private descriptor and points stdout at stderr, so stray prints cannot corrupt it.
  int in_fd = 0;
  int out_fd = 1;
  // The pid of the process that started this worker; 0 skips the check.
  int64_t parent_pid = 0;
  // Compiled kernels kept for repeated requests (0 disables the cache).
  size_t kernel_cache = 8;
  // RLIMIT_DATA of the worker in bytes (sandbox.h); 0: none.
  int64_t memory_limit_bytes = 0;
  // Runs the requests whose `graph` is set (a whole model graph in its planned arena:
  // memplan/exec/graph_job.h, which the tensorgym binary plugs in here, so this folder
  // does not depend on memory planning). Empty: such requests fail as INSTANTIATION.
  std::function<MeasureResult(const MeasureRequest&, const MeasureJobHooks&)> graph_job;
};

// The worker's main loop; returns the process exit status (0 when the runner closed
// the channel between jobs).
int run_worker(WorkerOptions options);

}  // namespace tensorgym
