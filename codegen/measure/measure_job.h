// One measurement, start to finish, in the current process: the pipeline a worker
// runs for each MeasureRequest (and that tests and `eval --emit llvm` call directly).
//
//   instantiate  find the target's backend, parse the program, apply the
//                schedule, lower for the target (lower.cc: the generic passes, then
//                the target's own; what `tensorgym lower --target` prints)
//                                                                  -> INSTANTIATION
//                (past a size cap, e.g. the lowered buffers' total   -> RESOURCE_EXHAUSTED)
//   compile      Backend::compile (test faults *_IN_COMPILE here)    -> COMPILE
//   -- hooks.on_compiled: the worker reports progress and waits for the go --
//   run          seeded random inputs, poisoned outputs, one run that is both the
//                warm-up and the correctness check (test faults *_IN_RUN here)
//   check        every output against the reference evaluator at sampled points
//                                                                  -> WRONG_ANSWER
//   time         time_runs() with the request's settings; time_on_device()
//                (device_timing.h) for an executable with a device clock
//
// Crashes, hangs and exits are not caught here: they take the process down, which is
// why workers run this, and why the runner classifies a dead worker by the phase it
// was in. std::bad_alloc (a host buffer, the evaluator) is RESOURCE_EXHAUSTED.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "codegen/backend/backend.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/ir/program.h"
#include "codegen/lower/loop_nest.h"
#include "codegen/measure/measurement.h"
#include "support/status.h"

namespace tensorgym {

// A parsed, scheduled and lowered request.
struct InstantiatedJob {
  ProgramPtr program;
  LoopNest nest;  // lowered for `backend`'s target
  const Backend* backend = nullptr;
};

// Parses `program_text`, applies `schedule_text` and lowers for `target` (empty: the
// default). Errors keep their codes; messages are "program:LINE:COLUMN: ...",
// "schedule:LINE:COLUMN: ...", "lowering: ..." or, for a target no backend has,
// NOT_FOUND "target: unknown target ...".
Expected<InstantiatedJob> instantiate_job(std::string_view program_text, std::string_view schedule_text,
                                          std::string_view target = {});

// Compiled kernels of recent requests, keyed by (target, program text, schedule text,
// whether the code text was kept), least recently used evicted first. Not thread-safe:
// a worker runs one job at a time.
class KernelCache {
 public:
  explicit KernelCache(size_t capacity = 8) : capacity_(capacity) {}

  struct Entry {
    std::shared_ptr<const Executable> kernel;
    double compile_ms = 0;
  };
  const Entry* find(const std::string& key);
  void insert(const std::string& key, Entry entry);
  size_t size() const { return entries_.size(); }

  static std::string key(const MeasureRequest& request);

 private:
  size_t capacity_;
  std::list<std::pair<std::string, Entry>> entries_;  // most recent first
  std::unordered_map<std::string, std::list<std::pair<std::string, Entry>>::iterator> index_;
};

struct MeasureJobHooks {
  // Called when compilation succeeded, with the result so far (compile_ms, code_text,
  // kernel_cache_hit). Returning false abandons the job (its result is WORKER_LOST).
  std::function<bool(const MeasureResult& compiled)> on_compiled;
};

// The check of a run: each output (named as in the program) against the reference
// evaluator at settings.check_points() points drawn from settings.seed(), within
// rtol, atol and the allowance for reordered sums (codegen/interp/compare.h). Sets
// checked_points and max_abs_error; WRONG_ANSWER naming the output and its worst
// element on a mismatch; INSTANTIATION when the evaluator cannot run the program.
MeasureResult check_outputs(const Program& program, const std::vector<std::string>& names,
                            const std::vector<HostBuffer>& inputs, const std::vector<HostBuffer>& outputs,
                            const RunnerSettings& settings);

// Runs the pipeline. Always returns a result with its target and provenance
// (worker_pid is this process); `cache` may be null.
MeasureResult run_measure_job(const MeasureRequest& request, const MeasureJobHooks& hooks = {},
                              KernelCache* cache = nullptr);

}  // namespace tensorgym
