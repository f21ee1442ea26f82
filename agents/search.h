// Search: an agent proposes candidate schedules for one benchmark, an Evaluator puts a
// cost on them (one evaluated candidate = one trial), and the search keeps the records,
// the best so far, the budgets, and checkpoints.
//
//   SearchSetup setup;
//   setup.benchmark = "benchmark://ops-v0/gmm-1";
//   setup.agent = "evolutionary";
//   setup.budget.max_trials = 200;
//   setup.evaluator = evaluator.get();
//   auto search = *Search::create(setup);
//   Status st = search->run([](const SearchProgress& p) { ... });
//   EpisodeState best = *search->best_episode_state();
//
// Determinism: given the seed and the evaluations it saw, an agent proposes the same
// candidates in the same order. The search evaluates proposals in batches; a budget
// that runs out in the middle of a batch leaves the rest of it pending, so a search
// checkpointed there and resumed continues exactly as one that never stopped.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agents/evaluator.h"
#include "datasets/benchmark.h"
#include "envs/env_context.h"
#include "support/random.h"
#include "support/status.h"

namespace tensorgym {

struct SearchBudget {
  int64_t max_trials = 1000;   // 0: no limit
  double max_seconds = 0;      // wall-clock, checked between evaluation chunks; 0: no limit
  int64_t early_stopping = 0;  // stop once the best has not improved for this many trials; 0: off
};

// Knobs of the agents (each uses the ones that concern it; see docs/agents.md).
struct AgentOptions {
  // random, greedy, beam
  int episode_length = 8;  // random: actions per episode (at most); greedy, beam: depth limit
  int branching = 16;      // greedy, beam: actions tried from each state
  int beam_width = 4;      // beam: states kept per depth
  int batch_size = 16;     // random, evolutionary: candidates measured per round
  // evolutionary
  int population = 512;          // candidates evolved per generation
  int generations = 4;           // generations per round
  double mutation_probability = 0.85;  // a child is a mutant; otherwise a crossover of two parents
  double eps_greedy = 0.05;      // fraction of each round's batch taken at random from the population
  int retrain_rounds = 60;       // XGBoost boosting rounds per training
  int warmup_random_rounds = 1;  // first rounds measured without the learned model (it has no data yet)
  // Fraction of each batch chosen by the analytical model (est_cycles) instead: in the
  // warm-up rounds the best-estimated of a random sample, afterwards the best-estimated
  // candidates of the evolved populations. It hedges a learned model that has seen few
  // measurements (0: Ansor's scheme, learned model and random picks only).
  double analytical_prior = 0.25;
  bool use_cost_model = true;    // off: the population is ranked at random (ablation)

  bool operator==(const AgentOptions&) const = default;
};

// One evaluated candidate.
struct TrialRecord {
  int64_t trial = 0;   // 1-based
  std::string trace;   // schedule trace text
  Evaluation eval;
  double elapsed_s = 0;  // since the search started (resumes included), when its evaluation came back
};

// Where the search stands, for progress displays.
struct SearchProgress {
  int64_t trials = 0;  // spent: candidates evaluated and finalist measurements
  int64_t max_trials = 0;
  double elapsed_s = 0;
  bool has_best = false;
  double best_cost = 0;
  double best_gflops = 0;
  int64_t best_trial = 0;
  int64_t failed_trials = 0;
};
using ProgressFn = std::function<void(const SearchProgress&)>;

// Why run() returned.
enum class StopReason { kNotStarted, kTrials, kTime, kEarlyStopping, kAgentDone, kNoProgress };
const char* stop_reason_name(StopReason r);

class Search;
class SearchAgent;

// What an agent sees.
struct SearchContext {
  const Benchmark* benchmark = nullptr;
  Rng* rng = nullptr;
  const AgentOptions* options = nullptr;
  const std::vector<TrialRecord>* records = nullptr;
  std::string metric;  // the evaluator's
  std::string target;  // the evaluator's: what the candidates are schedules for (empty: the cpu)
  int threads = 0;     // the evaluator's: threads the kernels are measured on (0: every core, or none)
  bool on_this_host = false;  // the evaluator's measures_on_this_host()
  // Environments for agents that step through actions (in-process by default).
  std::function<Expected<std::unique_ptr<Env>>()> make_env;
  // The evaluation of a trace already evaluated in this search, or null.
  std::function<const Evaluation*(const std::string& trace)> lookup;
  // A trained cost model to start from (bytes as XgbCostModel::save gives), or empty.
  std::string initial_cost_model;
};

// A search agent. propose() returns candidate traces; the search evaluates them (those
// already evaluated come from its records and cost no trial) and passes every result
// to observe(), in order. Agents keep no state the checkpoint does not hold (save/load).
class SearchAgent {
 public:
  virtual ~SearchAgent() = default;
  virtual std::string name() const = 0;
  virtual Status start(SearchContext& ctx) = 0;
  // The next candidates; empty when the agent has nothing more to try.
  virtual Expected<std::vector<std::string>> propose(SearchContext& ctx) = 0;
  virtual Status observe(SearchContext& ctx, const std::vector<std::string>& traces,
                         const std::vector<Evaluation>& evaluations) = 0;
  // The agent's state as bytes, and back (load follows start on a fresh agent).
  virtual std::string save() const = 0;
  virtual Status load(SearchContext& ctx, const std::string& bytes) = 0;
  // Extra lines for reports (the cost model's quality, ...).
  virtual std::map<std::string, std::string> report() const { return {}; }
  // The agent's learned cost model as bytes (XgbCostModel::save), or empty.
  virtual std::string cost_model() const { return ""; }
};

// "random", "greedy", "beam", "evolutionary"; NOT_FOUND names the agents there are.
Expected<std::unique_ptr<SearchAgent>> make_agent(const std::string& name);
std::vector<std::string> agent_names();

struct SearchSetup {
  std::string benchmark;   // a benchmark URI
  std::string agent = "evolutionary";
  uint64_t seed = 0;
  SearchBudget budget;
  AgentOptions options;
  Evaluator* evaluator = nullptr;  // not owned; must outlive the search
  DatasetRegistry* datasets = nullptr;  // null: the global registry
  // Environments for random/greedy/beam (null: in-process schedule-v0).
  std::function<Expected<std::unique_ptr<Env>>()> make_env;
  // The in-process context best_episode_state() replays in (its runner measures the
  // runtime reward; set worker_binary and threads). Null: a default context.
  std::shared_ptr<EnvContext> env_context;
  // A trained cost model to start from (evolutionary; XgbCostModel::save bytes).
  std::string initial_cost_model;
  // Largest number of candidates sent to the evaluator at once (progress and the time
  // budget are checked between chunks); 0: a whole batch at once.
  int eval_chunk = 0;
  // How a measured search (an evaluator that is not deterministic) picks its best: the
  // `finalists` best candidates by their trial measurement are measured again
  // `finalist_rounds` times each, interleaved, and the best is the finalist with the
  // lowest median of those measurements. The trial measurement that made a candidate a
  // finalist is biased low (the winner's curse: of many near-equal candidates, the one
  // measured luckiest leads), so it does not vote. The measurements come out of the
  // trial budget: the search explores max_trials - finalists * finalist_rounds
  // candidates, and has fewer finalists where they would take over a tenth of it.
  // 0 or 1: the best trial measurement wins.
  int finalists = 0;
  int finalist_rounds = 3;
};

// The measurements of one finalist (Search::finalists()).
struct FinalistRecord {
  int64_t trial = 0;          // its trial
  std::vector<double> costs;  // one per round; +inf where the measurement failed
  double median_cost = 0;     // of costs
};

class Search {
 public:
  // A fresh search. INVALID_ARGUMENT / NOT_FOUND for a bad benchmark, agent or setup.
  static Expected<std::unique_ptr<Search>> create(const SearchSetup& setup);
  // A search restored from a checkpoint file. The checkpoint's benchmark, agent, seed,
  // agent options and metric win over the setup's; the budget and the evaluator are
  // the setup's (the budget counts trials and seconds from the search's start).
  static Expected<std::unique_ptr<Search>> resume(const std::string& checkpoint_path, const SearchSetup& setup);

  ~Search();

  // Runs until a budget is spent, early stopping triggers, or the agent is done; then
  // measures the finalists (SearchSetup::finalists).
  Status run(const ProgressFn& progress = nullptr);
  StopReason stop_reason() const { return stop_reason_; }

  // Writes everything needed to resume (atomically: a temporary file, then rename).
  Status save_checkpoint(const std::string& path) const;
  std::string checkpoint_bytes() const;

  const std::vector<TrialRecord>& records() const { return records_; }
  // The best valid record, or null: the finalist with the lowest median once the
  // finalists are measured (SearchSetup::finalists), else the lowest trial cost (the
  // earliest among equals).
  const TrialRecord* best() const;
  // The best's evaluation: its trial's, with the cost (and GFLOP/s) of its finalist
  // median where it has one. Not OK when there is no best.
  Evaluation best_evaluation() const;
  // The finalists measured so far, by their trial cost.
  const std::vector<FinalistRecord>& finalists() const { return finalists_; }
  // Measurements of finalists so far (each counts against the trial budget).
  int64_t finalist_measurements() const;
  // Best-so-far GFLOP/s after each trial (0 until a valid one).
  std::vector<double> best_gflops_curve() const;
  int64_t trials() const { return int64_t(records_.size()); }
  double elapsed_s() const;
  SearchProgress progress() const;
  const Benchmark& benchmark() const { return benchmark_; }
  const SearchSetup& setup() const { return setup_; }
  const SearchAgent& agent() const { return *agent_; }
  std::string metric() const { return metric_; }
  uint64_t rng_state() const { return rng_.state(); }

  // The best schedule as an episode of schedule-v0 that `tensorgym validate` accepts:
  // the trace's primitives as actions, replayed in-process with est_cycles as the
  // deterministic reward; with a measured metric, reward_space "runtime" with the
  // environment's own runtime reward (the unscheduled program and the best schedule
  // measured by env_context's runner, as validate will) and the provenance of the
  // search's measurement of the best. FAILED_PRECONDITION when no valid candidate was
  // found.
  Expected<EpisodeState> best_episode_state();

 private:
  Search() = default;
  Status init(const SearchSetup& setup);
  // The candidates the agent proposes, until a budget is spent or the agent stops.
  Status explore(const ProgressFn& progress);
  SearchContext context();
  // Evaluates the pending batch as far as the budget allows; true when it finished.
  Expected<bool> evaluate_pending(const ProgressFn& progress);
  bool budget_spent();
  // Candidates to explore before the finalists' measurements (max_trials less theirs).
  int64_t exploration_trials() const;
  // Finalists and rounds the budget allows (0 finalists: none).
  std::pair<int, int> finalist_plan() const;
  // Measures the finalists until each has its rounds, then picks the best of them.
  Status measure_finalists(const ProgressFn& progress);
  void pick_best_finalist();
  const Evaluation* lookup(const std::string& trace) const;

  SearchSetup setup_;
  Benchmark benchmark_;
  std::string metric_;
  std::string target_;  // the evaluator's (Evaluator::target)
  std::unique_ptr<SearchAgent> agent_;
  Rng rng_;
  std::vector<TrialRecord> records_;
  std::map<std::string, size_t> by_trace_;  // trace -> index into records_
  // The batch being evaluated: its traces, and the evaluations that came back.
  std::vector<std::string> pending_;
  std::vector<Evaluation> pending_done_;
  bool has_pending_ = false;
  int64_t best_index_ = -1;     // lowest trial cost
  int64_t best_finalist_ = -1;  // index into records_ of the finalist picked, or -1
  std::vector<FinalistRecord> finalists_;
  int64_t last_improvement_trial_ = 0;
  double elapsed_before_ = 0;  // seconds spent before this process resumed the search
  double start_time_ = 0;      // steady clock at create/resume
  int idle_rounds_ = 0;        // rounds that evaluated nothing new
  bool agent_done_ = false;
  StopReason stop_reason_ = StopReason::kNotStarted;
};

}  // namespace tensorgym
