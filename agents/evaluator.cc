#include "agents/evaluator.h"

#include <fmt/format.h>

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include <unistd.h>

#include "codegen/analysis/cost_model.h"
#include "codegen/analysis/op_count.h"
#include "codegen/backend/registry.h"
#include "codegen/lower/lower.h"
#include "codegen/measure/measure_error.h"
#include "codegen/measure/measure_job.h"
#include "codegen/measure/provenance.h"
#include "codegen/measure/measure_wire.h"
#include "codegen/measure/runner.h"
#include "datasets/registry.h"

namespace tensorgym {
namespace {

// Programs by benchmark URI or text, parsed once per evaluator.
class ProgramCache {
 public:
  explicit ProgramCache(DatasetRegistry* datasets) : datasets_(datasets) {}

  struct Entry {
    ProgramPtr program;
    std::string text;
    double flops = 0;
  };

  Expected<Entry> get(const Candidate& c) {
    const std::string key = c.program_text.empty() ? "uri:" + c.benchmark : "text:" + c.program_text;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = entries_.find(key);
      if (it != entries_.end()) return it->second;
    }
    Entry e;
    if (c.program_text.empty()) {
      DatasetRegistry& registry = datasets_ ? *datasets_ : DatasetRegistry::global();
      TG_ASSIGN_OR_RETURN(Benchmark b, registry.resolve(c.benchmark));
      e.program = b.program;
      e.text = b.program_text;
    } else {
      TG_ASSIGN_OR_RETURN(Program p, parse_program(c.program_text, builtin_program_limits()));
      e.program = std::make_shared<const Program>(std::move(p));
      e.text = c.program_text;
    }
    e.flops = count_ops(*e.program).flops;
    std::lock_guard<std::mutex> lock(mu_);
    entries_.emplace(key, e);
    return e;
  }

 private:
  DatasetRegistry* datasets_;
  std::mutex mu_;
  std::map<std::string, Entry> entries_;
};

// Runs fn(i) for i in [0, n) on up to `threads` threads.
template <class F>
void parallel_for(size_t n, int threads, F&& fn) {
  size_t workers = std::min<size_t>(n, size_t(std::max(1, threads)));
  if (workers <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (size_t w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (size_t i = next++; i < n; i = next++) fn(i);
    });
  for (std::thread& t : pool) t.join();
}

class RunnerEvaluator : public Evaluator {
 public:
  explicit RunnerEvaluator(const RunnerEvaluatorOptions& options) : options_(options), programs_(options.datasets) {}

  std::string metric() const override { return "runtime"; }
  std::string target() const override { return options_.target; }
  int threads() const override { return options_.threads; }
  bool deterministic() const override { return false; }
  bool measures_on_this_host() const override { return options_.target.empty() || options_.target == "cpu"; }

  std::vector<Evaluation> evaluate(const std::vector<Candidate>& candidates) override {
    std::vector<Evaluation> out(candidates.size());
    Runner& r = runner();
    parallel_for(candidates.size(), options_.workers, [&](size_t i) { out[i] = measure_one(r, candidates[i]); });
    return out;
  }

 private:
  Runner& runner() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!runner_) {
      RunnerOptions ro;
      ro.num_workers = std::max(1, options_.workers);
      ro.worker_binary = options_.worker_binary;
      runner_ = std::make_unique<Runner>(ro);
    }
    return *runner_;
  }

  Evaluation measure_one(Runner& r, const Candidate& c) {
    Evaluation e;
    Expected<ProgramCache::Entry> p = programs_.get(c);
    if (!p.ok()) {
      e.status = p.status();
      return e;
    }
    e.flops = p->flops;
    MeasureRequest request;
    request.program = p->text;
    request.schedule = c.trace;
    request.target = options_.target;
    request.settings = options_.settings;
    if (options_.threads > 0 && request.settings.threads == 0) request.settings.threads = options_.threads;
    MeasureResult result = r.measure(request);
    e.provenance_json = provenance_to_json(result.provenance);
    if (!result.ok()) {
      StatusCode code = result.error == MeasureError::kInstantiation ? StatusCode::kInvalidArgument
                        : result.error == MeasureError::kTimeout     ? StatusCode::kDeadlineExceeded
                                                                     : StatusCode::kFailedPrecondition;
      e.status = measure_error_status(result, code);
      return e;
    }
    e.cost = result.runtime.median_s;
    e.gflops = result.gflops;
    return e;
  }

  RunnerEvaluatorOptions options_;
  ProgramCache programs_;
  std::mutex mu_;
  std::unique_ptr<Runner> runner_;
};

// Candidates valued in this process, in parallel and deterministically: each one's
// program (parsed once) handed to value().
class InProcessEvaluator : public Evaluator {
 public:
  explicit InProcessEvaluator(const EstCyclesEvaluatorOptions& options)
      : options_(options), programs_(options.datasets) {}

  bool deterministic() const override { return true; }

  std::vector<Evaluation> evaluate(const std::vector<Candidate>& candidates) override {
    std::vector<Evaluation> out(candidates.size());
    parallel_for(candidates.size(), options_.threads, [&](size_t i) {
      Evaluation& e = out[i];
      Expected<ProgramCache::Entry> p = programs_.get(candidates[i]);
      if (!p.ok()) {
        e.status = p.status();
        return;
      }
      e.flops = p->flops;
      value(candidates[i], *p, e);
    });
    return out;
  }

 protected:
  // Fills `e`'s cost (and gflops) or its status.
  virtual void value(const Candidate& c, const ProgramCache::Entry& program, Evaluation& e) = 0;

 private:
  EstCyclesEvaluatorOptions options_;
  ProgramCache programs_;
};

// An analytical model as an evaluator: each candidate lowered and valued by `model`.
// GFLOP/s = flops * `gflops_per_flop_per_cost` / cost.
class ModelEvaluator : public InProcessEvaluator {
 public:
  using Model = std::function<Expected<double>(const LoopNest& nest)>;
  ModelEvaluator(const EstCyclesEvaluatorOptions& options, std::string metric, LowerOptions lowering, Model model,
                 double gflops_per_flop_per_cost)
      : InProcessEvaluator(options),
        metric_(std::move(metric)),
        lowering_(std::move(lowering)),
        model_(std::move(model)),
        scale_(gflops_per_flop_per_cost) {}

  std::string metric() const override { return metric_; }
  std::string target() const override { return metric_ == "est_gpu_time" ? "cuda" : ""; }

 private:
  void value(const Candidate& c, const ProgramCache::Entry& p, Evaluation& e) override {
    Expected<Schedule> s = Schedule::from_text(p.program, c.trace);
    if (!s.ok()) {
      e.status = Status(s.status().code(), "INSTANTIATION: schedule:" + s.status().message());
      return;
    }
    Expected<LoopNest> nest = lower(*s, lowering_);
    if (!nest.ok()) {
      e.status = Status(nest.status().code(), "INSTANTIATION: lowering: " + nest.status().message());
      return;
    }
    Expected<double> cost = model_(*nest);
    if (!cost.ok()) {
      e.status = Status(cost.status().code(), "INSTANTIATION: " + cost.status().message());
      return;
    }
    e.cost = *cost;
    if (!(e.cost > 0)) {
      e.status = internal_error(fmt::format("{} gave {:f}", metric_, e.cost));
      return;
    }
    e.gflops = e.flops * scale_ / e.cost;
  }

  std::string metric_;
  LowerOptions lowering_;
  Model model_;
  double scale_;
};

// A simulated target's runtime (fpga: cycles at the design's clock), each candidate
// compiled and its timing simulated in this process: deterministic, and the number the
// runner's measurement gives, which also checks the outputs (a stream's timing never
// depends on its data, so the check is left to the best's episode, which validate
// replays through the runner).
class SimulatedEvaluator : public InProcessEvaluator {
 public:
  SimulatedEvaluator(const EstCyclesEvaluatorOptions& options, const Backend& backend)
      : InProcessEvaluator(options), backend_(backend) {}

  std::string metric() const override { return "runtime"; }
  std::string target() const override { return backend_.name(); }

 private:
  void value(const Candidate& c, const ProgramCache::Entry& p, Evaluation& e) override {
    Expected<InstantiatedJob> job = instantiate_job(p.text, c.trace, backend_.name());
    if (!job.ok()) {
      e.status = Status(job.status().code(), "INSTANTIATION: " + job.status().message());
      return;
    }
    Expected<std::shared_ptr<const Executable>> kernel = backend_.compile(job->nest);
    Expected<std::vector<double>> seconds =
        kernel.ok() ? (*kernel)->time_on_device(nullptr, 0, 1, 1) : Expected<std::vector<double>>(kernel.status());
    if (!seconds.ok()) {
      e.status = Status(seconds.status().code(), "COMPILE: " + seconds.status().message());
      return;
    }
    e.cost = seconds->front();
    e.gflops = e.flops > 0 ? e.flops / e.cost / 1e9 : 0;
    e.provenance_json = provenance_to_json(make_provenance(backend_.target(), RunnerSettings{}, int64_t(getpid())));
  }

  const Backend& backend_;
};

}  // namespace

RunnerSettings search_runner_settings() {
  RunnerSettings s;
  s.repeat = 2;
  s.min_repeat_ms = 30;
  s.check_points = 128;
  s.compile_timeout_s = 20;
  s.run_timeout_s = 5;
  return s;
}

std::unique_ptr<Evaluator> make_runner_evaluator(const RunnerEvaluatorOptions& options) {
  return std::make_unique<RunnerEvaluator>(options);
}

std::unique_ptr<Evaluator> make_est_cycles_evaluator(const EstCyclesEvaluatorOptions& options) {
  return std::make_unique<ModelEvaluator>(
      options, "est_cycles", LowerOptions{},
      [](const LoopNest& nest) -> Expected<double> { return est_cycles(nest, MachineModel::reference()); },
      kNominalGHz);
}

// est_gpu_time: the cuda target's GPU model (through the backend interface) on the
// target-independent nest with thread binding allowed, so that a schedule is valued
// from its first step (unbound work runs as one thread).
std::unique_ptr<Evaluator> make_est_gpu_time_evaluator(const EstCyclesEvaluatorOptions& options) {
  return std::make_unique<ModelEvaluator>(
      options, "est_gpu_time", LowerOptions{.allow_thread_binding = true},
      [](const LoopNest& nest) -> Expected<double> {
        TG_ASSIGN_OR_RETURN(const Backend* cuda, find_backend("cuda"));
        TG_ASSIGN_OR_RETURN(RuntimeEstimate estimate, cuda->estimate_runtime(nest));
        return estimate.seconds;
      },
      1e-9);
}

Expected<std::unique_ptr<Evaluator>> make_evaluator(const EvaluatorChoice& choice) {
  if (choice.reward == "runtime" || choice.reward == "gflops") return make_runner_evaluator(choice.runner);
  if (choice.reward == "est_cycles") return make_est_cycles_evaluator(choice.est);
  if (choice.reward == "est_gpu_time") return make_est_gpu_time_evaluator(choice.est);
  return invalid_argument("unknown reward '" + choice.reward + "' for a search (runtime, est_cycles, est_gpu_time)");
}

Expected<std::unique_ptr<Evaluator>> make_search_evaluator(const std::string& reward, int workers, int threads,
                                                           const std::string& worker_binary, const std::string& target) {
  // A simulated target's runtime is deterministic: simulated in this process.
  if (Expected<const Backend*> backend = find_backend(target); backend.ok() && (*backend)->target().simulated) {
    if (reward != "runtime")
      return invalid_argument("the " + target + " target's schedules are valued by runtime (simulated cycles at its "
                              "clock), not " + reward);
    EstCyclesEvaluatorOptions est;
    est.threads = std::max(1, workers);
    return std::unique_ptr<Evaluator>(std::make_unique<SimulatedEvaluator>(est, **backend));
  }
  const std::string models_target = reward == "est_gpu_time" ? "cuda" : reward == "est_cycles" ? "cpu" : "";
  if (!target.empty() && !models_target.empty() && target != models_target)
    return invalid_argument("reward " + reward + " is the " + models_target + " target's model; it cannot value " +
                            target + " schedules (use runtime, or " +
                            (target == "cuda" ? std::string("est_gpu_time") : std::string("est_cycles")) + ")");
  EvaluatorChoice choice;
  choice.runner.target = target == "cpu" ? "" : target;
  choice.reward = reward;
  choice.runner.workers = workers;
  choice.runner.threads = threads;
  choice.runner.worker_binary = worker_binary;
  choice.runner.settings = search_runner_settings();
  choice.est.threads = std::max(1, workers);
  return make_evaluator(choice);
}

}  // namespace tensorgym
