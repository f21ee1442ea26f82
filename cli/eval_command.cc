// tensorgym eval --program FILE [--schedule TEXT | --schedule-file FILE] [--target NAME] [--json] ...
// Compiles a scheduled program, checks it against the reference evaluator and times
// it, all in a sandboxed worker process (codegen/measure/). Prints the runtime
// (median and spread), GFLOP/s, compile time and whether the outputs were correct;
// exit status 0 only when they were. `--emit llvm` prints the optimized LLVM IR
// instead (compiled in this process), `--emit ptx` the PTX of the cuda target, `--emit
// fpga` the fpga target's instruction stream. A target that cannot run here (cuda: no GPU
// on this machine) is lowered, checked and compiled (its kernels and ptxas statistics
// printed), then refused with the reason. A simulated target (fpga) runs in the worker on
// its simulator (`--simulator fsim|rtl`); its cycles, module utilization and instruction
// count follow, from the same simulator run here.
#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "cli/cli_common.h"
#include "cli/figures.h"
#include "cli/json_text.h"
#include "spaces/event.h"
#include "codegen/backend/registry.h"
#include "codegen/measure/measure_error.h"
#include "codegen/measure/measure_job.h"
#include "codegen/measure/measure_wire.h"
#include "codegen/measure/runner.h"
#include "proto/tensorgym.pb.h"

namespace tensorgym::cli {
namespace {

struct EvalOptions {
  std::string program;
  ScheduleSource schedule;
  std::string target = std::string(kDefaultTarget);
  int threads = 0;
  bool json = false;
  std::string emit;
  int repeat = 0;
  int min_repeat = 0;
  double target_cv = 0;
  int number = 0;
  double min_repeat_ms = 0;
  bool flush_cache = false;
  uint64_t seed = 0;
  double compile_timeout_s = 0;
  double run_timeout_s = 0;
  int64_t check_points = 0;
  double rtol = 0;
  double atol = 0;
  std::string test_fault;
  std::string worker_binary;
  std::string simulator;
};

// "1.234 ms", "45.6 us", "2.1 s"
std::string human_time(double s) { return seconds_text(s); }

// The worker names program and schedule text "program:" and "schedule:"; the user
// knows them by their file names.
std::string with_sources(std::string message, const EvalOptions& o) {
  const std::string schedule_name = o.schedule.file.empty() ? "--schedule" : o.schedule.file;
  auto replace = [&](const std::string& from, const std::string& to) {
    for (size_t at = message.find(from); at != std::string::npos; at = message.find(from, at + to.size())) {
      if (at == 0 || message[at - 1] == '\n' || message[at - 1] == ' ') message.replace(at, from.size(), to);
    }
  };
  replace("program:", o.program + ":");
  replace("schedule:", schedule_name + ":");
  return message;
}

Json provenance_json(const Provenance& provenance) {
  proto::Provenance p;
  to_proto(provenance, &p);
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(p, &out, options).ok()) return nullptr;
  return parsed_json(out);
}

// A simulated target's counts of one run of the schedule (Executable::simulated_counts),
// compiled and simulated in this process as the worker did.
Expected<std::vector<NamedCount>> simulated_counts(const std::string& program_text, const std::string& schedule_text,
                                                   const EvalOptions& o) {
  TG_ASSIGN_OR_RETURN(InstantiatedJob job, instantiate_job(program_text, schedule_text, o.target));
  CompileOptions options;
  options.simulator = o.simulator;
  TG_ASSIGN_OR_RETURN(std::shared_ptr<const Executable> kernel, job.backend->compile(job.nest, options));
  return kernel->simulated_counts();
}

int64_t count_of(const std::vector<NamedCount>& counts, const std::string& name) {
  for (const NamedCount& c : counts)
    if (c.name == name) return c.value;
  return 0;
}

// Cycles, the modules' time (busy, waiting on a dependency, on DRAM, idle), the GEMM
// core's use, instructions and DRAM traffic.
std::string simulated_text(const std::vector<NamedCount>& c, double seconds) {
  const int64_t cycles = count_of(c, "cycles");
  const double share = cycles > 0 ? 100.0 / double(cycles) : 0;
  std::string text = fmt::format("cycles     {} ({:.0f} MHz)\n", cycles, seconds > 0 ? double(cycles) / seconds / 1e6 : 0);
  text += fmt::format("instructions {} (load {}, compute {}, store {})\n", count_of(c, "instructions"),
                      count_of(c, "load.instructions"), count_of(c, "compute.instructions"),
                      count_of(c, "store.instructions"));
  for (const char* m : {"load", "compute", "store"}) {
    const std::string p = std::string(m) + ".";
    text += fmt::format("{:<10} busy {:.1f}%, waiting on a dependency {:.1f}%, on DRAM {:.1f}%, idle {:.1f}%\n", m,
                        double(count_of(c, p + "busy")) * share, double(count_of(c, p + "dependency_stall")) * share,
                        double(count_of(c, p + "dram_stall")) * share, double(count_of(c, p + "idle")) * share);
  }
  text += fmt::format("GEMM core  {} MACs; issuing {:.1f}% of the cycles\n", count_of(c, "macs"),
                      double(count_of(c, "gemm_iterations")) * share);
  text += fmt::format("DRAM       {} bytes read, {} written\n", count_of(c, "dram_read_bytes"),
                      count_of(c, "dram_write_bytes"));
  return text;
}

void print_json(const MeasureResult& r, const EvalOptions& o, const std::vector<NamedCount>* simulated) {
  const bool measured = r.ok();
  Json j = Json::object();
  if (measured) {
    const TimingStats& rt = r.runtime;
    j["runtime_s"] = Json{{"median", rt.median_s}, {"min", rt.min_s},       {"max", rt.max_s},
                          {"mean", rt.mean_s},     {"cv", rt.cv},           {"number", rt.number},
                          {"repeat", rt.repeat},   {"samples", rt.samples_s}};
    j["gflops"] = r.gflops;
  } else {
    j["runtime_s"] = nullptr;
    j["gflops"] = nullptr;
  }
  j["flops"] = r.flops;
  j["compile_ms"] = r.compile_ms > 0 ? Json(r.compile_ms) : Json(nullptr);
  j["correct"] = measured && r.correct;
  j["checked_points"] = r.checked_points;
  j["max_abs_error"] = r.max_abs_error;
  j["threads"] = r.provenance.threads;
  j["kernel_cache_hit"] = r.kernel_cache_hit;
  j["error"] = measured ? Json(nullptr) : Json(measure_error_name(r.error));
  j["error_message"] = measured ? Json(nullptr) : Json(with_sources(r.error_message, o));
  j["provenance"] = provenance_json(r.provenance);
  if (simulated) {
    Json counts = Json::object();
    for (const NamedCount& c : *simulated) counts[c.name] = c.value;
    j["simulated"] = counts;
  }
  std::cout << json_text(j) << "\n";
}

void print_human(const MeasureResult& r, const EvalOptions& o, const std::vector<NamedCount>* simulated) {
  if (!r.ok()) {
    std::cerr << "tensorgym: error: " << measure_error_name(r.error) << ": " << with_sources(r.error_message, o)
              << "\n";
    return;
  }
  const TimingStats& rt = r.runtime;
  std::string text = fmt::format("correct    yes ({} points checked, max abs error {:.3g})\n", r.checked_points,
                                 r.max_abs_error);
  if (simulated) {
    text += fmt::format("runtime    {} simulated by {} (deterministic)\n", human_time(rt.median_s), r.provenance.clock);
    text += simulated_text(*simulated, rt.median_s);
  } else {
    text += fmt::format("runtime    {} median (min {}, max {}, cv {:.2f}%; {} repeats of {} runs)\n",
                      human_time(rt.median_s), human_time(rt.min_s), human_time(rt.max_s), rt.cv * 100,
                      rt.repeat, rt.number);
  }
  text += fmt::format("GFLOP/s    {}\n", r.flops > 0 ? fmt::format("{:.2f}", r.gflops) : "n/a (no float operations)");
  text += fmt::format("compile    {:.1f} ms{}\n", r.compile_ms, r.kernel_cache_hit ? " (cached)" : "");
  text += fmt::format("threads    {}\n", r.provenance.threads);
  std::cout << text << std::flush;
}

Expected<TestFault> parse_fault(const std::string& text) {
  std::string name = text;
  for (char& c : name) c = c == '-' ? '_' : char(std::toupper(static_cast<unsigned char>(c)));
  if (Expected<TestFault> fault = test_fault_from_name(name); fault.ok()) return fault;
  return invalid_argument("unknown test fault '" + text + "'");
}

int emit_llvm(const std::string& program_text, const std::string& schedule_text, const EvalOptions& o) {
  Expected<InstantiatedJob> job = instantiate_job(program_text, schedule_text);
  if (!job.ok()) return report_error(Status(job.status().code(), with_sources(job.status().message(), o)));
  CompileOptions options;
  options.keep_code_text = true;
  Expected<std::shared_ptr<const Executable>> kernel = job->backend->compile(job->nest, options);
  if (!kernel.ok()) return report_error(kernel.status());
  std::cout << (*kernel)->code_text();
  return 0;
}

// A device target's kernels: launch and, where the assembler ran, its statistics.
std::string kernels_text(const Executable& exe) {
  std::string text;
  for (const DeviceKernel& k : exe.kernels()) {
    text += fmt::format("kernel     {} (stage {}): blocks {} x {} x {}, threads {} x {} x {}", k.name,
                        k.stage.empty() ? "-" : k.stage, k.blocks[0], k.blocks[1], k.blocks[2], k.threads[0],
                        k.threads[1], k.threads[2]);
    if (k.assembled) {
      text += fmt::format("; ptxas: {} registers, {} bytes spilled (stores) / {} (loads), {} bytes shared, {} "
                          "bytes stack",
                          k.registers, k.spill_store_bytes, k.spill_load_bytes, k.shared_bytes, k.stack_bytes);
    } else {
      text += "; not assembled (no ptxas)";
    }
    text += "\n";
  }
  return text;
}

Json kernels_json(const Executable& exe) {
  Json kernels = Json::array();
  for (const DeviceKernel& k : exe.kernels())
    kernels.push_back(Json{{"name", k.name},
                           {"stage", k.stage},
                           {"blocks", {k.blocks[0], k.blocks[1], k.blocks[2]}},
                           {"threads", {k.threads[0], k.threads[1], k.threads[2]}},
                           {"params", k.params}});
  return kernels;
}

// ptxas's statistics by kernel name; null when no kernel was assembled.
Json ptxas_stats_json(const Executable& exe) {
  Json stats = Json::object();
  for (const DeviceKernel& k : exe.kernels()) {
    if (!k.assembled) continue;
    stats[k.name] = Json{{"registers", k.registers},
                         {"spill_store_bytes", k.spill_store_bytes},
                         {"spill_load_bytes", k.spill_load_bytes},
                         {"shared_bytes", k.shared_bytes},
                         {"stack_bytes", k.stack_bytes}};
  }
  return stats.empty() ? Json(nullptr) : stats;
}

// A target nothing can run here: the schedule is lowered and compiled for it all the
// same, so that its own errors come first and its code and statistics are shown, then
// the reason it cannot be measured.
int refuse_unrunnable(const Backend& backend, const std::string& program_text, const std::string& schedule_text,
                      const EvalOptions& o) {
  Expected<InstantiatedJob> job = instantiate_job(program_text, schedule_text, backend.name());
  if (!job.ok()) return report_error(Status(job.status().code(), with_sources(job.status().message(), o)));
  CompileOptions options;
  options.keep_code_text = true;
  Expected<std::shared_ptr<const Executable>> kernel = backend.compile(job->nest, options);
  if (!kernel.ok()) {
    if (!o.json) return report_error(kernel.status());
    Json j = Json::object();
    j["target"] = backend.name();
    j["runtime_s"] = nullptr;
    j["correct"] = false;
    j["error"] = status_code_name(kernel.status().code());
    j["error_message"] = kernel.status().message();
    std::cout << json_text(j) << "\n";
    return 1;
  }
  const Executable& exe = **kernel;
  // The target's own model where it has one: an estimate, never a measurement.
  const Expected<RuntimeEstimate> modelled = backend.estimate_runtime(job->nest);
  const Status refused = unimplemented(fmt::format(
      "the {} target cannot be measured here ({}): its code was generated ({} kernel{}) but nothing on "
      "this machine runs it; `tensorgym interp --target {}` checks the schedule's correctness",
      backend.name(), backend.target().run_unavailable, exe.kernels().size(), exe.kernels().size() == 1 ? "" : "s",
      backend.name()));
  if (o.json) {
    Json j = Json::object();
    j["target"] = backend.name();
    j["runtime_s"] = nullptr;
    j["correct"] = false;
    j["compile_ms"] = exe.compile_ms();
    j["kernels"] = kernels_json(exe);
    j["ptx"] = exe.code_text();
    j["ptxas_stats"] = ptxas_stats_json(exe);
    j["est_gpu_time_s"] = modelled.ok() ? Json(modelled->seconds) : Json(nullptr);
    j["error"] = status_code_name(refused.code());
    j["error_message"] = refused.message();
    std::cout << json_text(j) << "\n";
    return 1;
  }
  std::cout << kernels_text(exe) << fmt::format("compile    {:.1f} ms\n", exe.compile_ms());
  if (modelled.ok())
    std::cout << fmt::format("modelled   {:.3f} us (est_gpu_time: the GPU model, not a measurement)\n",
                             modelled->seconds * 1e6);
  std::cout << std::flush;
  return report_error(refused);
}

// --emit: the generated code's text (LLVM IR for cpu, PTX for cuda), compiled here.
int emit_code(const Backend& backend, const std::string& program_text, const std::string& schedule_text,
              const EvalOptions& o) {
  Expected<InstantiatedJob> job = instantiate_job(program_text, schedule_text, backend.name());
  if (!job.ok()) return report_error(Status(job.status().code(), with_sources(job.status().message(), o)));
  CompileOptions options;
  options.keep_code_text = true;
  Expected<std::shared_ptr<const Executable>> kernel = backend.compile(job->nest, options);
  if (!kernel.ok()) return report_error(kernel.status());
  std::cout << (*kernel)->code_text();
  return 0;
}

int run_eval(const EvalOptions& o) {
  Expected<std::string> program_text = read_text_file(o.program);
  if (!program_text.ok()) return report_error(program_text.status());
  std::string schedule_text = o.schedule.text;
  if (!o.schedule.file.empty()) {
    Expected<std::string> text = read_text_file(o.schedule.file);
    if (!text.ok()) return report_error(text.status());
    schedule_text = *text;
  }
  Expected<const Backend*> backend = find_backend(o.target);
  if (!backend.ok()) return report_error(backend.status());
  if (o.emit == "llvm" && (*backend)->name() != "cpu")
    return report_error(invalid_argument("--emit llvm: the " + (*backend)->name() + " target emits no LLVM IR"));
  if (o.emit == "ptx" && (*backend)->name() != "cuda")
    return report_error(invalid_argument("--emit ptx: the " + (*backend)->name() + " target emits no PTX"));
  if (o.emit == "fpga" && (*backend)->name() != "fpga")
    return report_error(
        invalid_argument("--emit fpga: the " + (*backend)->name() + " target emits no accelerator instructions"));
  if (!o.simulator.empty() && !(*backend)->target().simulated)
    return report_error(invalid_argument("--simulator " + o.simulator + ": the " + (*backend)->name() +
                                         " target runs for real (only a simulated target, fpga, takes one)"));
  if (o.emit == "llvm") return emit_llvm(*program_text, schedule_text, o);
  if (o.emit == "ptx" || o.emit == "fpga") return emit_code(**backend, *program_text, schedule_text, o);
  if (!(*backend)->target().can_run) return refuse_unrunnable(**backend, *program_text, schedule_text, o);

  Expected<TestFault> fault = parse_fault(o.test_fault);
  if (!fault.ok()) return report_error(fault.status());
  MeasureRequest request;
  request.program = *program_text;
  request.schedule = schedule_text;
  request.target = (*backend)->name();
  request.test_fault = *fault;
  RunnerSettings& s = request.settings;
  s.number = o.number;
  s.repeat = o.repeat;
  s.min_repeat = o.min_repeat;
  s.target_cv = o.target_cv;
  s.min_repeat_ms = o.min_repeat_ms;
  s.flush_cache = o.flush_cache;
  s.threads = o.threads;
  s.seed = o.seed;
  s.compile_timeout_s = o.compile_timeout_s;
  s.run_timeout_s = o.run_timeout_s;
  s.check_points = o.check_points;
  s.rtol = o.rtol;
  s.atol = o.atol;
  s.simulator = o.simulator;

  RunnerOptions runner_options;
  runner_options.num_workers = 1;
  runner_options.worker_binary = o.worker_binary;
  Runner runner(runner_options);
  const MeasureResult result = runner.measure(request);
  runner.shutdown();
  // A simulated target's counts, from the same simulator here (deterministic: the run
  // the worker timed).
  Expected<std::vector<NamedCount>> simulated = unimplemented("not simulated");
  if (result.ok() && (*backend)->target().simulated) {
    simulated = simulated_counts(*program_text, schedule_text, o);
    if (!simulated.ok()) return report_error(simulated.status());
  }
  if (o.json) {
    print_json(result, o, simulated.ok() ? &*simulated : nullptr);
  } else {
    print_human(result, o, simulated.ok() ? &*simulated : nullptr);
  }
  return result.ok() && result.correct ? 0 : 1;
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto o = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "Compile, check and time a scheduled program in a sandboxed worker (see docs/measurement.md)");
  cmd->add_option("--program", o->program, "Program file (.tg)")->required();
  o->schedule.add_options(*cmd);
  cmd->add_option("--target", o->target, "The backend to compile and measure for (default cpu)");
  cmd->add_option("--threads", o->threads, "Threads for parallel loops (0: every core this process may use)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", o->json, "Print one JSON object instead of text");
  cmd->add_option("--emit", o->emit,
                  "Print an artifact instead of measuring: llvm (the optimized LLVM IR, cpu), ptx (the PTX, cuda), "
                  "fpga (the accelerator's instruction stream)")
      ->check(CLI::IsMember({"llvm", "ptx", "fpga"}));
  cmd->add_option("--simulator", o->simulator,
                  "The fpga target's simulator: fsim (the C++ cycle simulator, default) or rtl (the RTL under "
                  "Verilator)")
      ->check(CLI::IsMember({"fsim", "rtl"}));
  cmd->add_option("--repeat", o->repeat, "Timed samples, the most (default 5)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--min-repeat", o->min_repeat,
                  "The fewest timed samples: sampling stops once this many agree within --target-cv (default 3; "
                  "--min-repeat equal to --repeat: always --repeat)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--target-cv", o->target_cv,
                  "Coefficient of variation of the samples at which sampling may stop (default 0.01)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--number", o->number, "Initial runs per sample; grows to reach --min-repeat-ms (default 1)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--min-repeat-ms", o->min_repeat_ms, "Shortest duration of one sample, in ms (default 100)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--flush-cache", o->flush_cache, "Evict the caches before every sample");
  cmd->add_option("--seed", o->seed, "Seed of the random inputs");
  cmd->add_option("--compile-timeout", o->compile_timeout_s, "Compile deadline in seconds (default 60)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--run-timeout", o->run_timeout_s, "Run deadline in seconds, check and timing (default 60)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--check-points", o->check_points,
                  "Output points compared with the reference evaluator (default 1024; all when fewer)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--rtol", o->rtol, "Relative tolerance of the check (default 1e-4)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--atol", o->atol, "Absolute tolerance of the check (default 1e-4)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--worker-binary", o->worker_binary, "The tensorgym executable workers run (default: this one)");
  // Test-only: makes the worker fail on purpose (crash-in-run, hang-in-compile, ...).
  cmd->add_option("--test-fault", o->test_fault, "Make the worker fail on purpose (tests)")->group("");
  cmd->callback([o] {
    const int status = run_eval(*o);
    if (status != 0) throw CLI::RuntimeError(status);
  });
}

}  // namespace tensorgym::cli
