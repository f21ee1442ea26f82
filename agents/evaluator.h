// Evaluators: what a search agent calls to put a value on candidate schedules. A
// candidate is a program (a benchmark URI, or program text) and a schedule trace; its
// evaluation is a cost (lower is better) or the reason it has none. One evaluated
// candidate is one *trial* of a search.
//
//   std::unique_ptr<Evaluator> e = make_runner_evaluator({.workers = 1, .threads = 1});
//   std::vector<Evaluation> v = e->evaluate({{"benchmark://ops-v0/gmm-1", "", trace}});
//
// Three implementations live here: the local Runner (sandboxed worker processes, real
// runtimes), the analytical cost model (est_cycles: deterministic, no measurement) and
// the GPU model of the cuda target (est_gpu_time: seconds, deterministic).
// The batch evaluator of the service (remote endpoints, fault tolerant) implements the
// same interface. Evaluators are stateless between calls, apart from caches that never
// change a result.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen/measure/measurement.h"
#include "support/status.h"

namespace tensorgym {

class DatasetRegistry;
class Runner;

struct Candidate {
  std::string benchmark;     // a benchmark URI; resolved by the evaluator
  std::string program_text;  // when not empty: the program itself (benchmark is then a label)
  std::string trace;         // schedule trace text (empty: the unscheduled program)
};

struct Evaluation {
  // OK, or why the candidate has no value: the schedule does not apply or lower
  // (INVALID_ARGUMENT / FAILED_PRECONDITION), does not compile, crashes, computes a
  // wrong answer, or passes its deadline. The message starts with the runner's error
  // class (COMPILE, WRONG_ANSWER, TIMEOUT, ...) for measured candidates.
  Status status;
  double cost = 0;    // runtime: median seconds per run; est_cycles: estimated cycles
  double gflops = 0;  // measured GFLOP/s, or est_cycles' nominal GFLOP/s (see kNominalGHz)
  double flops = 0;   // of the program
  // Where the number came from: the measurement's Provenance as JSON (empty for
  // est_cycles, which depends on nothing but the program and the schedule).
  std::string provenance_json;

  bool ok() const { return status.ok(); }
};

// est_cycles is frequency-free; its GFLOP/s figures assume this clock.
inline constexpr double kNominalGHz = 3.0;

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  // What `cost` is: "runtime", "est_cycles" or "est_gpu_time".
  virtual std::string metric() const = 0;
  // The target the candidates are schedules for ("cuda"); empty: the cpu, the
  // environments' default.
  virtual std::string target() const { return ""; }
  // The threads the candidates' kernels are measured on (0: every core, or nothing is
  // measured): what a model of their runtime should assume.
  virtual int threads() const { return 0; }
  // Whether evaluating the same candidate again gives exactly the same evaluation.
  virtual bool deterministic() const = 0;
  // Whether the candidates run on this host's CPU (local workers), so that a model of
  // their runtime should describe this host rather than the reference machine.
  virtual bool measures_on_this_host() const { return false; }
  // One evaluation per candidate, in order. Thread-safe.
  virtual std::vector<Evaluation> evaluate(const std::vector<Candidate>& candidates) = 0;
};

struct RunnerEvaluatorOptions {
  int workers = 1;            // sandboxed worker processes measuring at once
  int threads = 0;            // threads of the compiled kernels (0: every core)
  std::string target;         // the backend measuring them (empty: the cpu; "cuda" where a GPU is)
  std::string worker_binary;  // the `tensorgym` executable (empty: see RunnerOptions)
  // How each candidate is measured (zero fields: the runner's defaults). For searches
  // search_runner_settings() is lighter than the runner's defaults.
  RunnerSettings settings;
  DatasetRegistry* datasets = nullptr;  // null: the global registry
};

// Settings for measuring many candidates: 2 repeats of at least 30 ms, 128 checked
// points, a 5 s run deadline and a 20 s compile deadline. Cheaper than the runner's
// defaults, still checked for correctness; candidates so slow that they pass the
// deadline count as failed trials (TIMEOUT).
RunnerSettings search_runner_settings();

// Measures candidates through a Runner of its own (started on first use).
std::unique_ptr<Evaluator> make_runner_evaluator(const RunnerEvaluatorOptions& options);

struct EstCyclesEvaluatorOptions {
  int threads = 1;  // candidates lowered and estimated at once (results do not depend on it)
  DatasetRegistry* datasets = nullptr;
};

// est_cycles on the reference machine (codegen/analysis/cost_model.h): deterministic.
std::unique_ptr<Evaluator> make_est_cycles_evaluator(const EstCyclesEvaluatorOptions& options = {});
// est_gpu_time: the cuda target's GPU model, in seconds (codegen/cuda/gpu_model.h through
// Backend::estimate_runtime); deterministic.
std::unique_ptr<Evaluator> make_est_gpu_time_evaluator(const EstCyclesEvaluatorOptions& options = {});

// The evaluator of a reward name: "runtime" (also "gflops"), "est_cycles" or
// "est_gpu_time" (the cuda target's GPU model: seconds, deterministic; the options of
// est_cycles apply).
// INVALID_ARGUMENT for other names.
struct EvaluatorChoice {
  std::string reward = "runtime";
  RunnerEvaluatorOptions runner;
  EstCyclesEvaluatorOptions est;
};
Expected<std::unique_ptr<Evaluator>> make_evaluator(const EvaluatorChoice& choice);

// The evaluator of a search: make_evaluator with search_runner_settings(), `workers`
// measuring processes (est_cycles: estimating threads) and kernels on `threads`.
// `target` names the backend (empty: the reward's own: cuda for est_gpu_time, the cpu
// otherwise); est_cycles is the cpu's model and est_gpu_time the GPU's, so another
// target with them is INVALID_ARGUMENT.
Expected<std::unique_ptr<Evaluator>> make_search_evaluator(const std::string& reward, int workers, int threads,
                                                           const std::string& worker_binary = "",
                                                           const std::string& target = "");

}  // namespace tensorgym
