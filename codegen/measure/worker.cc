#include "codegen/measure/worker.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "codegen/measure/frame.h"
#include "codegen/measure/measure_error.h"
#include "codegen/measure/measure_job.h"
#include "codegen/measure/measure_wire.h"
#include "codegen/measure/sandbox.h"

namespace tensorgym {
namespace {

void log_error(const std::string& what) {
  fmt::print(stderr, "tensorgym worker {}: {}\n", int(getpid()), what);
  std::fflush(stderr);
}

}  // namespace

int run_worker(WorkerOptions options) {
  // Die with the parent. PDEATHSIG fires when the parent thread that started us ends;
  // the runner starts workers from a thread that lives as long as the runner.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) log_error("prctl(PR_SET_PDEATHSIG) failed");
  if (options.parent_pid > 0 && int64_t(getppid()) != options.parent_pid) {
    log_error(fmt::format("parent {} is gone; exiting", options.parent_pid));
    return 1;
  }
  std::signal(SIGPIPE, SIG_IGN);

  if (options.out_fd == STDOUT_FILENO) {
    const int moved = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (moved < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
      log_error("cannot move the channel off stdout");
      return 1;
    }
    if (options.in_fd == STDOUT_FILENO) options.in_fd = moved;
    options.out_fd = moved;
  }
  const int in = options.in_fd, out = options.out_fd;

  SandboxOptions sandbox;
  sandbox.memory_limit_bytes = options.memory_limit_bytes;
  sandbox.parent_pid = options.parent_pid;
  Expected<std::string> sandboxed = apply_sandbox(sandbox);
  if (!sandboxed.ok()) {
    log_error("cannot sandbox the worker: " + sandboxed.status().message());
    return 1;
  }
  if (Status st = write_frame(out, FrameType::kHello, *sandboxed); !st.ok()) {
    log_error("cannot greet the runner: " + st.message());
    return 1;
  }
  KernelCache cache(options.kernel_cache);
  for (;;) {
    Expected<Frame> frame = read_frame(in);
    if (!frame.ok()) {
      if (frame.status().code() == StatusCode::kUnavailable) return 0;  // the runner closed the channel
      log_error("bad frame from the runner: " + frame.status().message());
      return 1;
    }
    if (frame->type != FrameType::kRequest) {
      log_error(std::string("expected a request frame, got ") + frame_type_name(frame->type));
      return 1;
    }
    Expected<MeasureRequest> request = parse_measure_request(frame->payload);
    if (!request.ok()) {
      log_error("the request frame does not parse as a MeasureRequest");
      return 1;
    }

    bool channel_broken = false;
    MeasureJobHooks hooks;
    hooks.on_compiled = [&](const MeasureResult& compiled) {
      MeasureResult progress = compiled;
      progress.code_text.clear();  // it travels once, with the result
      if (Status st = write_frame(out, FrameType::kCompiled, serialize(progress)); !st.ok()) {
        log_error("cannot report compilation: " + st.message());
        channel_broken = true;
        return false;
      }
      Expected<Frame> go = read_frame(in);
      if (!go.ok() || go->type != FrameType::kGo) {
        log_error(go.ok() ? std::string("expected the go frame, got ") + frame_type_name(go->type)
                          : "no go frame: " + go.status().message());
        channel_broken = true;
        return false;
      }
      return true;
    };
    MeasureResult result;
    if (request->graph.empty()) {
      result = run_measure_job(*request, hooks, &cache);
    } else if (options.graph_job) {
      result = options.graph_job(*request, hooks);
    } else {
      result = error_result(MeasureError::kInstantiation, "this worker cannot run graphs");
      result.job_id = request->job_id;
    }
    if (channel_broken) return 1;
    std::string bytes = serialize(result);
    if (bytes.size() > kMaxFramePayload) {
      result.code_text = fmt::format("(code text of {} bytes left out: too large)", result.code_text.size());
      bytes = serialize(result);
    }
    if (Status st = write_frame(out, FrameType::kResult, bytes); !st.ok()) {
      log_error("cannot send the result: " + st.message());
      return 1;
    }
  }
}

}  // namespace tensorgym
