// tensorgym eval --program FILE [--schedule TEXT | --schedule-file FILE] [--json] ...
// Compiles a scheduled program, checks it against the reference evaluator and times
// it, all in a sandboxed worker process (codegen/measure/). Prints the runtime
// (median and spread), GFLOP/s, compile time and whether the outputs were correct;
// exit status 0 only when they were. `--emit llvm` prints the optimized LLVM IR
// instead (compiled in this process).
#include <google/protobuf/util/json_util.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "cli/cli_common.h"
#include "spaces/event.h"
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
  int threads = 0;
  bool json = false;
  std::string emit;
  int repeat = 0;
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
};

// JSON text through the same writer as every other command (spaces/event.h).
std::string json_string(const std::string& s) { return json_quote(s); }
std::string json_number(double v) { return event_to_json(Event(v)); }

// "1.23 ms", "45.6 us", "2.1 s"
std::string human_time(double s) {
  char buf[48];
  if (s >= 1)
    std::snprintf(buf, sizeof buf, "%.4g s", s);
  else if (s >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.4g ms", s * 1e3);
  else if (s >= 1e-6)
    std::snprintf(buf, sizeof buf, "%.4g us", s * 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.4g ns", s * 1e9);
  return buf;
}

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

std::string provenance_json(const Provenance& provenance) {
  proto::Provenance p;
  to_proto(provenance, &p);
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(p, &out, options).ok()) return "null";
  return out;
}

void print_json(const MeasureResult& r, const EvalOptions& o) {
  const bool measured = r.ok();
  std::ostringstream j;
  j << "{";
  if (measured) {
    const TimingStats& rt = r.runtime;
    j << "\"runtime_s\": {\"median\": " << json_number(rt.median_s) << ", \"min\": " << json_number(rt.min_s)
      << ", \"max\": " << json_number(rt.max_s) << ", \"mean\": " << json_number(rt.mean_s)
      << ", \"cv\": " << json_number(rt.cv) << ", \"number\": " << rt.number << ", \"repeat\": " << rt.repeat
      << ", \"samples\": [";
    for (size_t i = 0; i < rt.samples_s.size(); ++i) j << (i ? ", " : "") << json_number(rt.samples_s[i]);
    j << "]}, \"gflops\": " << json_number(r.gflops);
  } else {
    j << "\"runtime_s\": null, \"gflops\": null";
  }
  j << ", \"flops\": " << json_number(r.flops);
  j << ", \"compile_ms\": " << (r.compile_ms > 0 ? json_number(r.compile_ms) : "null");
  j << ", \"correct\": " << (measured && r.correct ? "true" : "false");
  j << ", \"checked_points\": " << r.checked_points;
  j << ", \"max_abs_error\": " << json_number(r.max_abs_error);
  j << ", \"threads\": " << r.provenance.threads;
  j << ", \"kernel_cache_hit\": " << (r.kernel_cache_hit ? "true" : "false");
  if (measured) {
    j << ", \"error\": null, \"error_message\": null";
  } else {
    j << ", \"error\": " << json_string(measure_error_name(r.error))
      << ", \"error_message\": " << json_string(with_sources(r.error_message, o));
  }
  j << ", \"provenance\": " << provenance_json(r.provenance);
  j << "}\n";
  std::cout << j.str();
}

void print_human(const MeasureResult& r, const EvalOptions& o) {
  if (!r.ok()) {
    std::cerr << "tensorgym: error: " << measure_error_name(r.error) << ": " << with_sources(r.error_message, o)
              << "\n";
    return;
  }
  const TimingStats& rt = r.runtime;
  char buf[256];
  std::printf("correct    yes (%lld points checked, max abs error %.3g)\n", (long long)r.checked_points,
              r.max_abs_error);
  std::printf("runtime    %s median (min %s, max %s, cv %.2f%%; %d repeats of %d runs)\n",
              human_time(rt.median_s).c_str(), human_time(rt.min_s).c_str(), human_time(rt.max_s).c_str(),
              rt.cv * 100, rt.repeat, rt.number);
  std::snprintf(buf, sizeof buf, "%.2f", r.gflops);
  std::printf("GFLOP/s    %s\n", r.flops > 0 ? buf : "n/a (no float operations)");
  std::printf("compile    %.1f ms%s\n", r.compile_ms, r.kernel_cache_hit ? " (cached)" : "");
  std::printf("threads    %d\n", r.provenance.threads);
  std::fflush(stdout);
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

int run_eval(const EvalOptions& o) {
  Expected<std::string> program_text = read_text_file(o.program);
  if (!program_text.ok()) return report_error(program_text.status());
  std::string schedule_text = o.schedule.text;
  if (!o.schedule.file.empty()) {
    Expected<std::string> text = read_text_file(o.schedule.file);
    if (!text.ok()) return report_error(text.status());
    schedule_text = *text;
  }
  if (o.emit == "llvm") return emit_llvm(*program_text, schedule_text, o);

  Expected<TestFault> fault = parse_fault(o.test_fault);
  if (!fault.ok()) return report_error(fault.status());
  MeasureRequest request;
  request.program = *program_text;
  request.schedule = schedule_text;
  request.test_fault = *fault;
  RunnerSettings& s = request.settings;
  s.number = o.number;
  s.repeat = o.repeat;
  s.min_repeat_ms = o.min_repeat_ms;
  s.flush_cache = o.flush_cache;
  s.threads = o.threads;
  s.seed = o.seed;
  s.compile_timeout_s = o.compile_timeout_s;
  s.run_timeout_s = o.run_timeout_s;
  s.check_points = o.check_points;
  s.rtol = o.rtol;
  s.atol = o.atol;

  RunnerOptions runner_options;
  runner_options.num_workers = 1;
  runner_options.worker_binary = o.worker_binary;
  Runner runner(runner_options);
  const MeasureResult result = runner.measure(request);
  runner.shutdown();
  if (o.json) {
    print_json(result, o);
  } else {
    print_human(result, o);
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
  cmd->add_option("--threads", o->threads, "Threads for parallel loops (0: every core this process may use)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", o->json, "Print one JSON object instead of text");
  cmd->add_option("--emit", o->emit, "Print an artifact instead of measuring: llvm (the optimized LLVM IR)")
      ->check(CLI::IsMember({"llvm"}));
  cmd->add_option("--repeat", o->repeat, "Timed samples (default 5)")->check(CLI::NonNegativeNumber);
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
