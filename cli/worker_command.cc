// tensorgym worker: the entry point of a measurement worker process. The runner
// (codegen/measure/runner.h) starts it; it is not meant to be run by hand.
#include <CLI/CLI.hpp>

#include "cli/cli_common.h"
#include "codegen/measure/worker.h"
#include "memplan/exec/graph_job.h"

namespace tensorgym::cli {

void add_worker_command(CLI::App& app) {
  auto opts = std::make_shared<WorkerOptions>();
  auto fd = std::make_shared<int>(-1);
  CLI::App* cmd =
      app.add_subcommand("worker",
                         "Internal: a sandboxed measurement worker. The runner starts it with --fd; it reads "
                         "length-prefixed MeasureRequest frames, compiles and times them, and writes MeasureResult "
                         "frames (see docs/measurement.md). Without --fd it speaks on stdin/stdout.");
  cmd->add_option("--fd", *fd, "Descriptor of the channel to the runner (a socket, read and written)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--parent-pid", opts->parent_pid,
                  "Pid of the runner; the worker exits at once if its parent is not this process");
  cmd->add_option("--kernel-cache", opts->kernel_cache, "Compiled kernels kept for repeated requests (0: none)");
  cmd->add_option("--memory-limit", opts->memory_limit_bytes,
                  "RLIMIT_DATA in bytes: an allocation past it ends the worker, and its job is RESOURCE_EXHAUSTED "
                  "(0: none; sanitizer builds leave it off)")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([opts, fd] {
    WorkerOptions o = *opts;
    if (*fd >= 0) o.in_fd = o.out_fd = *fd;
    auto graph_kernels = std::make_shared<GraphKernelCache>();
    o.graph_job = [graph_kernels](const MeasureRequest& request, const MeasureJobHooks& hooks) {
      return run_graph_job(request, hooks, *graph_kernels);
    };
    const int status = run_worker(o);
    if (status != 0) throw CLI::RuntimeError(status);
  });
}

}  // namespace tensorgym::cli
