#include "codegen/measure/measure_job.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <vector>

#include <fmt/format.h>

#include "codegen/analysis/op_count.h"
#include "codegen/backend/registry.h"
#include "codegen/interp/compare.h"
#include "codegen/interp/evaluator.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/lower/lower.h"
#include "codegen/measure/device_timing.h"
#include "codegen/measure/measure_error.h"
#include "codegen/measure/provenance.h"
#include "codegen/measure/runner_settings.h"
#include "codegen/measure/timing.h"
#include "codegen/schedule/schedule.h"

namespace tensorgym {
namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// The test faults: real failures, not simulated ones.
[[noreturn]] void crash_for_real() {
  // An address the compiler cannot see through, so this is a genuine invalid write
  // (SIGSEGV), not undefined behaviour the optimizer could turn into something else.
  volatile uintptr_t address = 8;
  *reinterpret_cast<volatile int*>(address) = 42;
  for (;;) std::abort();  // not reached
}

[[noreturn]] void hang_for_real() {
  volatile bool spinning = true;
  while (spinning) {
  }
  for (;;) std::abort();  // not reached
}

// Allocates (without touching) until an allocation fails: in a worker its memory
// limit ends the process (sandbox.h); elsewhere std::bad_alloc ends the job.
std::string allocate_for_real() {
  constexpr size_t kBlock = size_t(256) << 20;
  std::vector<std::unique_ptr<char[]>> blocks;
  for (int i = 0; i < 4096; ++i) {
    blocks.emplace_back(new char[kBlock]);
    // Seen by the optimizer as used, so the allocation is not elided.
    asm volatile("" : : "r"(blocks.back().get()) : "memory");
  }
  return fmt::format("test fault ALLOCATE_IN_RUN: allocated {} bytes, no limit reached", blocks.size() * kBlock);
}

// What the sandbox must deny: running another program, opening a socket.
std::string exec_and_socket_for_real() {
  char path[] = "/bin/true";
  char* const argv[] = {path, nullptr};
  char* const envp[] = {nullptr};
  std::string out = "test fault EXEC_IN_RUN: execve: ";
  execve(path, argv, envp);  // returns only when it failed
  out += std::strerror(errno);
  out += "; socket: ";
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd >= 0) {
    out += "opened";
    close(fd);
  } else {
    out += std::strerror(errno);
  }
  return out;
}

// Runs the request's fault for this phase. Faults that do not end the process return
// the message the job fails with (RUNTIME_CRASH); empty: carry on.
std::string inject_fault(TestFault fault, bool compile_phase) {
  if (compile_phase) {
    if (fault == TestFault::kCrashInCompile) crash_for_real();
    if (fault == TestFault::kHangInCompile) hang_for_real();
  } else {
    if (fault == TestFault::kCrashInRun) crash_for_real();
    if (fault == TestFault::kHangInRun) hang_for_real();
    if (fault == TestFault::kExitInRun) {
      std::fprintf(stderr, "tensorgym worker: test fault EXIT_IN_RUN, exiting with status 3\n");
      std::fflush(stderr);
      _exit(3);
    }
    if (fault == TestFault::kAllocateInRun) return allocate_for_real();
    if (fault == TestFault::kExecInRun) return exec_and_socket_for_real();
  }
  return "";
}

void corrupt(HostBuffer& out) {
  if (out.num_elements() == 0) return;
  if (out.dtype().is_bool()) {
    out.set_int(0, 1 - out.get_int(0));
  } else {
    out.set_float(0, out.get_float(0) + 1.0);
  }
}

enum class Phase { kInstantiate, kCompile, kRun };

}  // namespace

MeasureResult check_outputs(const Program& program, const std::vector<std::string>& names,
                            const std::vector<HostBuffer>& inputs, const std::vector<HostBuffer>& outputs,
                            const RunnerSettings& settings) {
  ProgramEvaluator evaluator(program, const_pointers(inputs));
  if (!evaluator.status().ok()) {
    return error_result(MeasureError::kInstantiation,
                        "the reference evaluator cannot check this program: " + evaluator.status().message());
  }
  MeasureResult result;
  int64_t checked = 0;
  double max_abs_error = 0;
  for (size_t i = 0; i < outputs.size() && i < names.size(); ++i) {
    // rtol and atol, with room for the sums a schedule may legally reorder.
    const Tolerance tolerance = tolerance_for(program, names[i], settings.rtol, settings.atol);
    Comparison c = compare_with_evaluator(evaluator, names[i], outputs[i], tolerance, settings.check_points,
                                          derive_seed(settings.seed, 1000 + i));
    checked += c.checked;
    max_abs_error = std::max(max_abs_error, c.max_abs_error);
    if (!c.match) {
      MeasureResult r = error_result(MeasureError::kWrongAnswer, "output " + names[i] + ": " + c.describe());
      r.checked_points = checked;
      r.max_abs_error = c.max_abs_error;
      return r;
    }
  }
  result.checked_points = checked;
  result.max_abs_error = max_abs_error;
  return result;
}

namespace {

MeasureResult run_pipeline(const MeasureRequest& request, const RunnerSettings& settings, const MeasureJobHooks& hooks,
                           KernelCache* cache, Phase& phase) {
  phase = Phase::kInstantiate;
  Expected<InstantiatedJob> job = instantiate_job(request.program, request.schedule, request.target);
  if (!job.ok()) {
    // Past a cap of the program or of its lowered buffers: RESOURCE_EXHAUSTED.
    const bool cap = job.status().code() == StatusCode::kResourceExhausted;
    return error_result(cap ? MeasureError::kResourceExhausted : MeasureError::kInstantiation, job.status().message());
  }
  const Program& program = *job->program;
  const LoopNest& nest = job->nest;
  if (!settings.simulator.empty() && !job->backend->target().simulated)
    return error_result(MeasureError::kInstantiation,
                        fmt::format("runner setting simulator = '{}': the {} target runs for real (only a simulated "
                                    "target, fpga, takes a simulator)",
                                    settings.simulator, job->backend->name()));

  // ---- compile -----------------------------------------------------------------
  phase = Phase::kCompile;
  if (std::string failed = inject_fault(request.test_fault, /*compile_phase=*/true); !failed.empty())
    return error_result(MeasureError::kCompile, failed);
  MeasureResult result;
  std::shared_ptr<const Executable> kernel;
  const std::string key = cache ? KernelCache::key(request) : std::string();
  if (const KernelCache::Entry* hit = cache ? cache->find(key) : nullptr) {
    kernel = hit->kernel;
    result.compile_ms = hit->compile_ms;
    result.kernel_cache_hit = true;
  } else {
    CompileOptions options;
    options.keep_code_text = request.emit_code_text;
    options.simulator = settings.simulator;
    const double t0 = now_s();
    Expected<std::shared_ptr<const Executable>> compiled = job->backend->compile(nest, options);
    const double compile_ms = (now_s() - t0) * 1e3;
    if (!compiled.ok()) {
      MeasureResult r = error_result(MeasureError::kCompile, compiled.status().to_string());
      r.compile_ms = compile_ms;
      return r;
    }
    kernel = std::move(compiled).value();
    result.compile_ms = compile_ms;
    if (cache) cache->insert(key, {kernel, compile_ms});
  }
  if (request.emit_code_text) result.code_text = kernel->code_text();
  if (hooks.on_compiled && !hooks.on_compiled(result)) {
    MeasureResult r = error_result(MeasureError::kWorkerLost, "the runner abandoned the job after compilation");
    r.compile_ms = result.compile_ms;
    return r;
  }

  if (request.compile_only) return result;  // llvm_ir-style requests: nothing runs
  if (!job->backend->target().can_run) {
    // Compiled, so the target's own errors came first; but nothing here can run it.
    MeasureResult r = error_result(
        MeasureError::kCompile,
        fmt::format("the {} target cannot be measured here ({}): its code was generated ({} kernel{}) "
                    "but nothing on this machine runs it",
                    job->backend->name(), job->backend->target().run_unavailable, kernel->kernels().size(),
                    kernel->kernels().size() == 1 ? "" : "s"));
    r.compile_ms = result.compile_ms;
    r.code_text = result.code_text;
    return r;
  }

  // ---- run: the warm-up run is also the correctness run --------------------------
  phase = Phase::kRun;
  if (std::string failed = inject_fault(request.test_fault, /*compile_phase=*/false); !failed.empty()) {
    MeasureResult r = error_result(MeasureError::kRuntimeCrash, failed);
    r.compile_ms = result.compile_ms;
    return r;
  }
  std::vector<HostBuffer> inputs = make_random_inputs(program, settings.seed);
  std::vector<HostBuffer> outputs = make_output_buffers(nest);
  if (inputs.size() != nest.inputs.size()) {
    return error_result(MeasureError::kInstantiation,
                        fmt::format("the loop nest takes {} inputs but the program declares {}", nest.inputs.size(),
                                    inputs.size()));
  }
  std::vector<void*> args;
  for (HostBuffer& b : inputs) args.push_back(b.data());
  for (HostBuffer& b : outputs) args.push_back(b.data());
  const int threads = settings.threads;
  // Constant work (weights packed into another layout) is done once here, outside the
  // runs checked and timed below.
  Expected<std::shared_ptr<const PreparedConstants>> prepared = kernel->prepare(args.data(), threads);
  if (!prepared.ok()) {
    MeasureResult r = error_result(MeasureError::kRuntimeCrash, "constant work failed: " + prepared.status().message());
    r.compile_ms = result.compile_ms;
    return r;
  }
  auto run_once = [&] { kernel->run_prepared(prepared->get(), args.data(), threads); };

  const double t0 = now_s();
  run_once();
  const double first_run_s = now_s() - t0;
  if (request.test_fault == TestFault::kCorruptOutput && !outputs.empty()) corrupt(outputs[0]);

  // ---- check ---------------------------------------------------------------------
  std::vector<std::string> names;
  for (const auto& o : nest.outputs) names.push_back(o.name);
  MeasureResult checked = check_outputs(program, names, inputs, outputs, settings);
  if (!checked.ok()) {
    checked.compile_ms = result.compile_ms;
    checked.code_text = result.code_text;
    return checked;
  }
  result.checked_points = checked.checked_points;
  result.max_abs_error = checked.max_abs_error;

  // ---- time ----------------------------------------------------------------------
  TimingOptions timing = timing_options(settings);
  timing.warmup_runs = 0;  // the checked run above was the warm-up
  timing.expected_run_s = first_run_s;
  // A device's own clock times its kernels alone; the host's clock times run().
  Expected<TimingStats> stats =
      kernel->has_device_clock() ? time_on_device(*kernel, args.data(), timing) : time_runs(run_once, timing);
  if (!stats.ok()) {
    MeasureResult r = error_result(MeasureError::kRuntimeCrash, "timing failed: " + stats.status().message());
    r.compile_ms = result.compile_ms;
    return r;
  }
  result.runtime = *stats;
  const double flops = count_ops(program).flops;
  result.flops = flops;
  result.gflops = flops / stats->median_s / 1e9;
  result.correct = true;
  result.error = MeasureError::kOk;
  return result;
}

}  // namespace

Expected<InstantiatedJob> instantiate_job(std::string_view program_text, std::string_view schedule_text,
                                          std::string_view target) {
  Expected<const Backend*> backend = find_backend(target);
  if (!backend.ok()) return Status(backend.status().code(), "target: " + backend.status().message());
  Expected<Program> parsed = parse_program(program_text);
  if (!parsed.ok()) return Status(parsed.status().code(), "program:" + parsed.status().message());
  ProgramPtr program = std::make_shared<const Program>(std::move(parsed).value());
  Expected<Schedule> schedule = Schedule::from_text(program, schedule_text);
  if (!schedule.ok()) return Status(schedule.status().code(), "schedule:" + schedule.status().message());
  Expected<LoopNest> nest = lower(*schedule, (*backend)->lowering());
  if (!nest.ok()) return Status(nest.status().code(), "lowering: " + nest.status().message());
  return InstantiatedJob{std::move(program), std::move(nest).value(), *backend};
}

const KernelCache::Entry* KernelCache::find(const std::string& key) {
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  entries_.splice(entries_.begin(), entries_, it->second);
  return &entries_.front().second;
}

void KernelCache::insert(const std::string& key, Entry entry) {
  if (capacity_ == 0) return;
  if (auto it = index_.find(key); it != index_.end()) {
    entries_.erase(it->second);
    index_.erase(it);
  }
  entries_.emplace_front(key, std::move(entry));
  index_[key] = entries_.begin();
  while (entries_.size() > capacity_) {
    index_.erase(entries_.back().first);
    entries_.pop_back();
  }
}

std::string KernelCache::key(const MeasureRequest& request) {
  std::string k = request.target.empty() ? std::string(kDefaultTarget) : request.target;
  k += '\0';
  k += request.program;
  k += '\0';
  k += request.schedule;
  k += '\0';
  k += request.emit_code_text ? '1' : '0';
  k += request.settings.simulator;
  return k;
}

MeasureResult run_measure_job(const MeasureRequest& request, const MeasureJobHooks& hooks, KernelCache* cache) {
  RunnerSettings settings;
  MeasureResult result;
  Expected<RunnerSettings> resolved = resolve_runner_settings(request.settings);
  if (!resolved.ok()) {
    result = error_result(MeasureError::kInstantiation, resolved.status().message());
    settings = request.settings;
  } else {
    settings = *resolved;
    Phase phase = Phase::kInstantiate;
    try {
      result = run_pipeline(request, settings, hooks, cache, phase);
    } catch (const std::bad_alloc& e) {
      // A host buffer or the evaluator did not get its memory (in a worker, operator
      // new and the kernel's allocations end the process instead: sandbox.h).
      result = error_result(MeasureError::kResourceExhausted, std::string("out of memory: ") + e.what());
    } catch (const std::exception& e) {
      // Other exceptions: the phase decides the class.
      const MeasureError error = phase == Phase::kRun       ? MeasureError::kRuntimeCrash
                                 : phase == Phase::kCompile ? MeasureError::kCompile
                                                            : MeasureError::kInstantiation;
      result = error_result(error, std::string("exception: ") + e.what());
    }
  }
  result.job_id = request.job_id;
  result.target = request.target.empty() ? std::string(kDefaultTarget) : request.target;
  result.provenance = make_provenance(result.target, settings, int64_t(getpid()));
  return result;
}

}  // namespace tensorgym
