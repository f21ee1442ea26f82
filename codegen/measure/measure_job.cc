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

#include "codegen/analysis/op_count.h"
#include "codegen/interp/compare.h"
#include "codegen/interp/evaluator.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/lower/lower.h"
#include "codegen/measure/measure_error.h"
#include "codegen/measure/provenance.h"
#include "codegen/measure/runner_settings.h"
#include "codegen/measure/timing.h"
#include "codegen/schedule/schedule.h"

namespace tensorgym {
namespace {

using proto::MeasureResult;

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
  return "test fault ALLOCATE_IN_RUN: allocated " + std::to_string(blocks.size() * kBlock) + " bytes, no limit reached";
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
std::string inject_fault(proto::TestFault fault, bool compile_phase) {
  using proto::TestFault;
  if (compile_phase) {
    if (fault == TestFault::CRASH_IN_COMPILE) crash_for_real();
    if (fault == TestFault::HANG_IN_COMPILE) hang_for_real();
  } else {
    if (fault == TestFault::CRASH_IN_RUN) crash_for_real();
    if (fault == TestFault::HANG_IN_RUN) hang_for_real();
    if (fault == TestFault::EXIT_IN_RUN) {
      std::fprintf(stderr, "tensorgym worker: test fault EXIT_IN_RUN, exiting with status 3\n");
      std::fflush(stderr);
      _exit(3);
    }
    if (fault == TestFault::ALLOCATE_IN_RUN) return allocate_for_real();
    if (fault == TestFault::EXEC_IN_RUN) return exec_and_socket_for_real();
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

void set_stats(const TimingStats& st, proto::RuntimeStats* out) {
  out->set_median_s(st.median_s);
  out->set_min_s(st.min_s);
  out->set_max_s(st.max_s);
  out->set_mean_s(st.mean_s);
  out->set_cv(st.cv);
  for (double s : st.samples_s) out->add_samples_s(s);
  out->set_number(st.number);
  out->set_repeat(st.repeat);
}

enum class Phase { kInstantiate, kCompile, kRun };

}  // namespace

MeasureResult check_outputs(const Program& program, const std::vector<std::string>& names,
                            const std::vector<HostBuffer>& inputs, const std::vector<HostBuffer>& outputs,
                            const proto::RunnerSettings& settings) {
  ProgramEvaluator evaluator(program, const_pointers(inputs));
  if (!evaluator.status().ok()) {
    return error_result(proto::INSTANTIATION,
                        "the reference evaluator cannot check this program: " + evaluator.status().message());
  }
  MeasureResult result;
  int64_t checked = 0;
  double max_abs_error = 0;
  for (size_t i = 0; i < outputs.size() && i < names.size(); ++i) {
    // rtol and atol, with room for the sums a schedule may legally reorder.
    const Tolerance tolerance = tolerance_for(program, names[i], settings.rtol(), settings.atol());
    Comparison c = compare_with_evaluator(evaluator, names[i], outputs[i], tolerance, settings.check_points(),
                                          derive_seed(settings.seed(), 1000 + i));
    checked += c.checked;
    max_abs_error = std::max(max_abs_error, c.max_abs_error);
    if (!c.match) {
      MeasureResult r = error_result(proto::WRONG_ANSWER, "output " + names[i] + ": " + c.describe());
      r.set_checked_points(checked);
      r.set_max_abs_error(c.max_abs_error);
      return r;
    }
  }
  result.set_checked_points(checked);
  result.set_max_abs_error(max_abs_error);
  return result;
}

namespace {

MeasureResult run_pipeline(const proto::MeasureRequest& request, const proto::RunnerSettings& settings,
                           const MeasureJobHooks& hooks, KernelCache* cache, Phase& phase) {
  phase = Phase::kInstantiate;
  Expected<InstantiatedJob> job = instantiate_job(request.program(), request.schedule());
  if (!job.ok()) {
    // Past a cap of the program or of its lowered buffers: RESOURCE_EXHAUSTED.
    const bool cap = job.status().code() == StatusCode::kResourceExhausted;
    return error_result(cap ? proto::RESOURCE_EXHAUSTED : proto::INSTANTIATION, job.status().message());
  }
  const Program& program = *job->program;
  const LoopNest& nest = job->nest;

  // ---- compile -----------------------------------------------------------------
  phase = Phase::kCompile;
  if (std::string failed = inject_fault(request.test_fault(), /*compile_phase=*/true); !failed.empty())
    return error_result(proto::COMPILE, failed);
  MeasureResult result;
  std::shared_ptr<const CpuKernel> kernel;
  const std::string key = cache ? KernelCache::key(request) : std::string();
  if (const KernelCache::Entry* hit = cache ? cache->find(key) : nullptr) {
    kernel = hit->kernel;
    result.set_compile_ms(hit->compile_ms);
    result.set_kernel_cache_hit(true);
  } else {
    CpuCompileOptions options;
    options.keep_llvm_ir = request.emit_llvm_ir();
    const double t0 = now_s();
    Expected<std::shared_ptr<const CpuKernel>> compiled = compile_cpu_kernel(nest, options);
    const double compile_ms = (now_s() - t0) * 1e3;
    if (!compiled.ok()) {
      MeasureResult r = error_result(proto::COMPILE, compiled.status().to_string());
      r.set_compile_ms(compile_ms);
      return r;
    }
    kernel = std::move(compiled).value();
    result.set_compile_ms(compile_ms);
    if (cache) cache->insert(key, {kernel, compile_ms});
  }
  if (request.emit_llvm_ir()) result.set_llvm_ir(kernel->llvm_ir());
  if (hooks.on_compiled && !hooks.on_compiled(result)) {
    MeasureResult r = error_result(proto::WORKER_LOST, "the runner abandoned the job after compilation");
    r.set_compile_ms(result.compile_ms());
    return r;
  }

  if (request.compile_only()) return result;  // llvm_ir-style requests: nothing runs

  // ---- run: the warm-up run is also the correctness run --------------------------
  phase = Phase::kRun;
  if (std::string failed = inject_fault(request.test_fault(), /*compile_phase=*/false); !failed.empty()) {
    MeasureResult r = error_result(proto::RUNTIME_CRASH, failed);
    r.set_compile_ms(result.compile_ms());
    return r;
  }
  std::vector<HostBuffer> inputs = make_random_inputs(program, settings.seed());
  std::vector<HostBuffer> outputs = make_output_buffers(nest);
  if (inputs.size() != nest.inputs.size()) {
    return error_result(proto::INSTANTIATION, "the loop nest takes " + std::to_string(nest.inputs.size()) +
                                                  " inputs but the program declares " + std::to_string(inputs.size()));
  }
  std::vector<void*> args;
  for (HostBuffer& b : inputs) args.push_back(b.data());
  for (HostBuffer& b : outputs) args.push_back(b.data());
  const int threads = settings.threads();
  auto run_once = [&] { kernel->run(args.data(), threads); };

  const double t0 = now_s();
  run_once();
  const double first_run_s = now_s() - t0;
  if (request.test_fault() == proto::CORRUPT_OUTPUT && !outputs.empty()) corrupt(outputs[0]);

  // ---- check ---------------------------------------------------------------------
  std::vector<std::string> names;
  for (const auto& o : nest.outputs) names.push_back(o.name);
  MeasureResult checked = check_outputs(program, names, inputs, outputs, settings);
  if (checked.error() != proto::MEASURE_OK) {
    checked.set_compile_ms(result.compile_ms());
    checked.set_llvm_ir(result.llvm_ir());
    return checked;
  }
  result.set_checked_points(checked.checked_points());
  result.set_max_abs_error(checked.max_abs_error());

  // ---- time ----------------------------------------------------------------------
  TimingOptions timing = timing_options(settings);
  timing.warmup_runs = 0;  // the checked run above was the warm-up
  timing.expected_run_s = first_run_s;
  Expected<TimingStats> stats = time_runs(run_once, timing);
  if (!stats.ok()) {
    MeasureResult r = error_result(proto::RUNTIME_CRASH, "timing failed: " + stats.status().message());
    r.set_compile_ms(result.compile_ms());
    return r;
  }
  set_stats(*stats, result.mutable_runtime());
  const double flops = count_ops(program).flops;
  result.set_flops(flops);
  result.set_gflops(flops / stats->median_s / 1e9);
  result.set_correct(true);
  result.set_error(proto::MEASURE_OK);
  return result;
}

}  // namespace

Expected<InstantiatedJob> instantiate_job(std::string_view program_text, std::string_view schedule_text) {
  Expected<Program> parsed = parse_program(program_text);
  if (!parsed.ok()) return Status(parsed.status().code(), "program:" + parsed.status().message());
  ProgramPtr program = std::make_shared<const Program>(std::move(parsed).value());
  Expected<Schedule> schedule = Schedule::from_text(program, schedule_text);
  if (!schedule.ok()) return Status(schedule.status().code(), "schedule:" + schedule.status().message());
  Expected<LoopNest> nest = lower(*schedule);
  if (!nest.ok()) return Status(nest.status().code(), "lowering: " + nest.status().message());
  return InstantiatedJob{std::move(program), std::move(nest).value()};
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

std::string KernelCache::key(const proto::MeasureRequest& request) {
  std::string k = request.program();
  k += '\0';
  k += request.schedule();
  k += '\0';
  k += request.emit_llvm_ir() ? '1' : '0';
  return k;
}

proto::MeasureResult run_measure_job(const proto::MeasureRequest& request, const MeasureJobHooks& hooks,
                                     KernelCache* cache) {
  proto::RunnerSettings settings;
  MeasureResult result;
  Expected<proto::RunnerSettings> resolved = resolve_runner_settings(request.settings());
  if (!resolved.ok()) {
    result = error_result(proto::INSTANTIATION, resolved.status().message());
    settings = request.settings();
  } else {
    settings = *resolved;
    Phase phase = Phase::kInstantiate;
    try {
      result = run_pipeline(request, settings, hooks, cache, phase);
    } catch (const std::bad_alloc& e) {
      // A host buffer or the evaluator did not get its memory (in a worker, operator
      // new and the kernel's allocations end the process instead: sandbox.h).
      result = error_result(proto::RESOURCE_EXHAUSTED, std::string("out of memory: ") + e.what());
    } catch (const std::exception& e) {
      // Other exceptions: the phase decides the class.
      const proto::MeasureError error = phase == Phase::kRun       ? proto::RUNTIME_CRASH
                                        : phase == Phase::kCompile ? proto::COMPILE
                                                                   : proto::INSTANTIATION;
      result = error_result(error, std::string("exception: ") + e.what());
    }
  }
  result.set_job_id(request.job_id());
  *result.mutable_provenance() = make_provenance(settings, int64_t(getpid()));
  return result;
}

}  // namespace tensorgym
