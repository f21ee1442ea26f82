#include "agents/search.h"

#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "agents/knob_agents.h"
#include "agents/serial.h"
#include "codegen/backend/registry.h"
#include "codegen/schedule/trace.h"
#include "datasets/registry.h"
#include "envs/env_context.h"
#include "proto/tensorgym.pb.h"

namespace tensorgym {
namespace {

constexpr const char* kMagic = "tensorgym-search-checkpoint";
constexpr int64_t kVersion = 1;
// A search whose agent proposes only candidates already evaluated this many rounds in a
// row has stopped making progress.
constexpr int kMaxIdleRounds = 200;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string evaluation_bytes(const Evaluation& e) {
  Record r;
  r.put_int("code", int64_t(e.status.code()));
  r.put("message", e.status.message());
  r.put_double("cost", e.cost);
  r.put_double("gflops", e.gflops);
  r.put_double("flops", e.flops);
  r.put("provenance", e.provenance_json);
  return r.bytes();
}

Expected<Evaluation> evaluation_from_bytes(const std::string& bytes) {
  TG_ASSIGN_OR_RETURN(Record r, Record::parse(bytes, "evaluation"));
  Evaluation e;
  TG_ASSIGN_OR_RETURN(int64_t code, r.get_int("code"));
  TG_ASSIGN_OR_RETURN(std::string message, r.get("message"));
  e.status = code == 0 ? Status() : Status(StatusCode(code), message);
  TG_ASSIGN_OR_RETURN(e.cost, r.get_double("cost"));
  TG_ASSIGN_OR_RETURN(e.gflops, r.get_double("gflops"));
  TG_ASSIGN_OR_RETURN(e.flops, r.get_double("flops"));
  TG_ASSIGN_OR_RETURN(e.provenance_json, r.get("provenance"));
  return e;
}

std::string options_bytes(const AgentOptions& o) {
  Record r;
  r.put_int("episode_length", o.episode_length);
  r.put_int("branching", o.branching);
  r.put_int("beam_width", o.beam_width);
  r.put_int("batch_size", o.batch_size);
  r.put_int("population", o.population);
  r.put_int("generations", o.generations);
  r.put_double("mutation_probability", o.mutation_probability);
  r.put_double("eps_greedy", o.eps_greedy);
  r.put_int("retrain_rounds", o.retrain_rounds);
  r.put_int("warmup_random_rounds", o.warmup_random_rounds);
  r.put_bool("use_cost_model", o.use_cost_model);
  r.put_double("analytical_prior", o.analytical_prior);
  return r.bytes();
}

Expected<AgentOptions> options_from_bytes(const std::string& bytes) {
  TG_ASSIGN_OR_RETURN(Record r, Record::parse(bytes, "agent options"));
  AgentOptions o;
  TG_ASSIGN_OR_RETURN(int64_t v, r.get_int("episode_length"));
  o.episode_length = int(v);
  TG_ASSIGN_OR_RETURN(v, r.get_int("branching"));
  o.branching = int(v);
  TG_ASSIGN_OR_RETURN(v, r.get_int("beam_width"));
  o.beam_width = int(v);
  TG_ASSIGN_OR_RETURN(v, r.get_int("batch_size"));
  o.batch_size = int(v);
  TG_ASSIGN_OR_RETURN(v, r.get_int("population"));
  o.population = int(v);
  TG_ASSIGN_OR_RETURN(v, r.get_int("generations"));
  o.generations = int(v);
  TG_ASSIGN_OR_RETURN(o.mutation_probability, r.get_double("mutation_probability"));
  TG_ASSIGN_OR_RETURN(o.eps_greedy, r.get_double("eps_greedy"));
  TG_ASSIGN_OR_RETURN(v, r.get_int("retrain_rounds"));
  o.retrain_rounds = int(v);
  TG_ASSIGN_OR_RETURN(v, r.get_int("warmup_random_rounds"));
  o.warmup_random_rounds = int(v);
  TG_ASSIGN_OR_RETURN(o.use_cost_model, r.get_bool("use_cost_model"));
  // Checkpoints written before the option existed searched without the prior.
  o.analytical_prior = 0;
  if (r.has("analytical_prior")) {
    TG_ASSIGN_OR_RETURN(o.analytical_prior, r.get_double("analytical_prior"));
  }
  return o;
}

Status check_options(const AgentOptions& o) {
  if (o.episode_length < 1 || o.episode_length > 1000) return invalid_argument("episode_length must be in 1..1000");
  if (o.branching < 1 || o.branching > 4096) return invalid_argument("branching must be in 1..4096");
  if (o.beam_width < 1 || o.beam_width > 1024) return invalid_argument("beam_width must be in 1..1024");
  if (o.batch_size < 1 || o.batch_size > 4096) return invalid_argument("batch_size must be in 1..4096");
  if (o.population < 2 || o.population > 100000) return invalid_argument("population must be in 2..100000");
  if (o.generations < 0 || o.generations > 1000) return invalid_argument("generations must be in 0..1000");
  if (!(o.mutation_probability >= 0 && o.mutation_probability <= 1))
    return invalid_argument("mutation_probability must be in [0, 1]");
  if (!(o.eps_greedy >= 0 && o.eps_greedy <= 1)) return invalid_argument("eps_greedy must be in [0, 1]");
  if (o.retrain_rounds < 1 || o.retrain_rounds > 10000) return invalid_argument("retrain_rounds must be in 1..10000");
  if (o.warmup_random_rounds < 0) return invalid_argument("warmup_random_rounds must be >= 0");
  if (!(o.analytical_prior >= 0 && o.analytical_prior <= 1))
    return invalid_argument("analytical_prior must be in [0, 1]");
  return Status();
}

}  // namespace

const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::kNotStarted: return "not started";
    case StopReason::kTrials: return "trial budget spent";
    case StopReason::kTime: return "time budget spent";
    case StopReason::kEarlyStopping: return "early stopping: no improvement";
    case StopReason::kAgentDone: return "the agent has nothing more to try";
    case StopReason::kNoProgress: return "the agent proposes only candidates already evaluated";
  }
  return "?";
}

Search::~Search() = default;

Status Search::init(const SearchSetup& setup) {
  setup_ = setup;
  if (!setup.evaluator) return invalid_argument("a search needs an evaluator");
  if (setup.budget.max_trials < 0 || setup.budget.max_seconds < 0 || setup.budget.early_stopping < 0)
    return invalid_argument("budgets must be >= 0");
  if (setup.budget.max_trials == 0 && setup.budget.max_seconds == 0)
    return invalid_argument("a search needs a trial or time budget");
  TG_RETURN_IF_ERROR(check_options(setup.options));
  if (setup.finalists < 0 || setup.finalists > 1000) return invalid_argument("finalists must be in 0..1000");
  if (setup.finalist_rounds < 1 || setup.finalist_rounds > 100)
    return invalid_argument("finalist_rounds must be in 1..100");
  DatasetRegistry& registry = setup.datasets ? *setup.datasets : DatasetRegistry::global();
  TG_ASSIGN_OR_RETURN(benchmark_, registry.resolve(setup.benchmark));
  metric_ = setup.evaluator->metric();
  target_ = setup.evaluator->target();
  // A target scheduled by knobs (fpga) has its own agents; primitives elsewhere.
  if (has_schedule_knobs(target_, benchmark_.program)) {
    TG_ASSIGN_OR_RETURN(agent_, make_knob_agent(setup.agent));
  } else {
    TG_ASSIGN_OR_RETURN(agent_, make_agent(setup.agent));
  }
  rng_ = Rng(setup.seed);
  if (!setup_.make_env) {
    std::shared_ptr<EnvContext> ctx = setup.env_context;
    if (!ctx) {
      ctx = std::make_shared<EnvContext>();
      ctx->datasets = setup.datasets;
    }
    setup_.make_env = [ctx]() { return make_env("schedule-v0", ctx); };
  }
  start_time_ = now_s();
  return Status();
}

Expected<std::unique_ptr<Search>> Search::create(const SearchSetup& setup) {
  std::unique_ptr<Search> s(new Search());
  TG_RETURN_IF_ERROR(s->init(setup));
  SearchContext ctx = s->context();
  TG_RETURN_IF_ERROR(s->agent_->start(ctx));
  return s;
}

SearchContext Search::context() {
  SearchContext c;
  c.benchmark = &benchmark_;
  c.rng = &rng_;
  c.options = &setup_.options;
  c.records = &records_;
  c.metric = metric_;
  c.target = target_;
  c.threads = setup_.evaluator->threads();
  c.on_this_host = setup_.evaluator->measures_on_this_host();
  c.make_env = setup_.make_env;
  c.lookup = [this](const std::string& trace) { return lookup(trace); };
  c.initial_cost_model = setup_.initial_cost_model;
  return c;
}

const Evaluation* Search::lookup(const std::string& trace) const {
  auto it = by_trace_.find(trace);
  return it == by_trace_.end() ? nullptr : &records_[it->second].eval;
}

double Search::elapsed_s() const { return elapsed_before_ + (now_s() - start_time_); }

const TrialRecord* Search::best() const {
  const int64_t i = best_finalist_ >= 0 ? best_finalist_ : best_index_;
  return i < 0 ? nullptr : &records_[size_t(i)];
}

Evaluation Search::best_evaluation() const {
  const TrialRecord* b = best();
  if (!b) return Evaluation{failed_precondition("the search found no valid schedule for " + benchmark_.uri)};
  Evaluation e = b->eval;
  if (best_finalist_ < 0) return e;
  for (const FinalistRecord& f : finalists_) {
    if (f.trial != b->trial) continue;
    if (e.cost > 0 && f.median_cost > 0) e.gflops *= e.cost / f.median_cost;
    e.cost = f.median_cost;
  }
  return e;
}

int64_t Search::finalist_measurements() const {
  int64_t n = 0;
  for (const FinalistRecord& f : finalists_) n += int64_t(f.costs.size());
  return n;
}

std::pair<int, int> Search::finalist_plan() const {
  if (setup_.finalists < 2 || setup_.evaluator->deterministic()) return {0, 0};
  const int rounds = setup_.finalist_rounds;
  int64_t k = setup_.finalists;
  if (setup_.budget.max_trials > 0) k = std::min<int64_t>(k, setup_.budget.max_trials / 10 / rounds);
  if (k < 2) return {0, 0};
  return {int(k), rounds};
}

int64_t Search::exploration_trials() const {
  const auto [k, rounds] = finalist_plan();
  return setup_.budget.max_trials - int64_t(k) * rounds;
}

Status Search::measure_finalists(const ProgressFn& progress) {
  const auto [k, rounds] = finalist_plan();
  if (k == 0) return Status();
  std::vector<size_t> order;
  for (size_t i = 0; i < records_.size(); ++i)
    if (records_[i].eval.ok()) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return records_[a].eval.cost < records_[b].eval.cost; });
  if (order.size() < 2) return Status();
  order.resize(std::min<size_t>(order.size(), size_t(k)));
  // Finalists measured before (a resumed search) keep their measurements.
  std::vector<FinalistRecord> next;
  for (size_t i : order) {
    FinalistRecord f;
    f.trial = records_[i].trial;
    for (const FinalistRecord& old : finalists_)
      if (old.trial == f.trial) f = old;
    next.push_back(std::move(f));
  }
  finalists_ = std::move(next);
  for (size_t round = 0;; ++round) {
    std::vector<size_t> todo;
    for (size_t j = 0; j < finalists_.size(); ++j)
      if (int(finalists_[j].costs.size()) < rounds) todo.push_back(j);
    if (todo.empty()) break;
    // A different finalist goes first each round: none always runs after the same one.
    std::rotate(todo.begin(), todo.begin() + ptrdiff_t(round % todo.size()), todo.end());
    std::vector<Candidate> candidates;
    for (size_t j : todo) candidates.push_back({benchmark_.uri, "", records_[size_t(finalists_[j].trial - 1)].trace});
    std::vector<Evaluation> evals = setup_.evaluator->evaluate(candidates);
    if (evals.size() != candidates.size())
      return internal_error(
          fmt::format("the evaluator returned {} evaluations for {} candidates", evals.size(), candidates.size()));
    for (size_t i = 0; i < todo.size(); ++i)
      finalists_[todo[i]].costs.push_back(evals[i].ok() ? evals[i].cost : std::numeric_limits<double>::infinity());
    pick_best_finalist();
    if (progress) progress(this->progress());
  }
  pick_best_finalist();
  return Status();
}

void Search::pick_best_finalist() {
  best_finalist_ = -1;
  double best_median = std::numeric_limits<double>::infinity();
  for (FinalistRecord& f : finalists_) {
    if (f.costs.empty()) continue;
    std::vector<double> c = f.costs;
    std::sort(c.begin(), c.end());
    const size_t n = c.size();
    f.median_cost = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
    // Ties go to the finalist with the lower trial cost (finalists_ is in that order).
    if (f.median_cost < best_median) {
      best_median = f.median_cost;
      best_finalist_ = f.trial - 1;
    }
  }
}

std::vector<double> Search::best_gflops_curve() const {
  std::vector<double> out;
  double best_cost = std::numeric_limits<double>::infinity(), best_gflops = 0;
  for (const TrialRecord& r : records_) {
    if (r.eval.ok() && r.eval.cost < best_cost) {
      best_cost = r.eval.cost;
      best_gflops = r.eval.gflops;
    }
    out.push_back(best_gflops);
  }
  return out;
}

SearchProgress Search::progress() const {
  SearchProgress p;
  p.trials = trials() + finalist_measurements();
  p.max_trials = setup_.budget.max_trials;
  p.elapsed_s = elapsed_s();
  if (const TrialRecord* b = best()) {
    const Evaluation e = best_evaluation();
    p.has_best = true;
    p.best_cost = e.cost;
    p.best_gflops = e.gflops;
    p.best_trial = b->trial;
  }
  for (const TrialRecord& r : records_) p.failed_trials += !r.eval.ok();
  return p;
}

bool Search::budget_spent() {
  const SearchBudget& b = setup_.budget;
  if (b.max_trials > 0 && trials() >= exploration_trials()) {
    stop_reason_ = StopReason::kTrials;
    return true;
  }
  if (b.early_stopping > 0 && trials() - last_improvement_trial_ >= b.early_stopping) {
    stop_reason_ = StopReason::kEarlyStopping;
    return true;
  }
  if (b.max_seconds > 0 && elapsed_s() >= b.max_seconds) {
    stop_reason_ = StopReason::kTime;
    return true;
  }
  return false;
}

Expected<bool> Search::evaluate_pending(const ProgressFn& progress) {
  while (pending_done_.size() < pending_.size()) {
    // Candidates already evaluated cost nothing.
    const Evaluation* known = lookup(pending_[pending_done_.size()]);
    if (known) {
      pending_done_.push_back(*known);
      continue;
    }
    if (budget_spent()) return false;
    // The next chunk: distinct new traces, no more than the budgets allow, so that
    // chunking never changes which candidates are evaluated.
    int64_t limit = std::numeric_limits<int64_t>::max();
    const SearchBudget& b = setup_.budget;
    if (b.max_trials > 0) limit = std::min(limit, exploration_trials() - trials());
    if (b.early_stopping > 0) limit = std::min(limit, b.early_stopping - (trials() - last_improvement_trial_));
    if (setup_.eval_chunk > 0) limit = std::min<int64_t>(limit, setup_.eval_chunk);
    std::vector<std::string> chunk;
    for (size_t i = pending_done_.size(); i < pending_.size() && int64_t(chunk.size()) < limit; ++i) {
      const std::string& t = pending_[i];
      if (lookup(t) || std::find(chunk.begin(), chunk.end(), t) != chunk.end()) continue;
      chunk.push_back(t);
    }
    std::vector<Candidate> candidates;
    for (const std::string& t : chunk) candidates.push_back({benchmark_.uri, "", t});
    std::vector<Evaluation> evals = setup_.evaluator->evaluate(candidates);
    if (evals.size() != candidates.size())
      return internal_error(
          fmt::format("the evaluator returned {} evaluations for {} candidates", evals.size(), candidates.size()));
    double t = elapsed_s();
    for (size_t i = 0; i < chunk.size(); ++i) {
      TrialRecord r;
      r.trial = trials() + 1;
      r.trace = chunk[i];
      r.eval = std::move(evals[i]);
      r.elapsed_s = t;
      by_trace_[r.trace] = records_.size();
      records_.push_back(std::move(r));
      const TrialRecord& added = records_.back();
      best_finalist_ = -1;  // picked among candidates that are no longer all there are
      if (added.eval.ok() && (best_index_ < 0 || added.eval.cost < records_[size_t(best_index_)].eval.cost)) {
        best_index_ = int64_t(records_.size()) - 1;
        last_improvement_trial_ = added.trial;
      }
    }
    if (progress) progress(this->progress());
  }
  return true;
}

Status Search::run(const ProgressFn& progress) {
  TG_RETURN_IF_ERROR(explore(progress));
  return measure_finalists(progress);
}

Status Search::explore(const ProgressFn& progress) {
  SearchContext ctx = context();
  for (;;) {
    if (has_pending_) {
      int64_t before = trials();
      TG_ASSIGN_OR_RETURN(bool finished, evaluate_pending(progress));
      if (!finished) return Status();  // stop_reason_ set by budget_spent()
      idle_rounds_ = trials() == before ? idle_rounds_ + 1 : 0;
      std::vector<std::string> traces = std::move(pending_);
      std::vector<Evaluation> evals = std::move(pending_done_);
      pending_.clear();
      pending_done_.clear();
      has_pending_ = false;
      TG_RETURN_IF_ERROR(agent_->observe(ctx, traces, evals));
    }
    if (budget_spent()) return Status();
    if (agent_done_) {
      stop_reason_ = StopReason::kAgentDone;
      return Status();
    }
    if (idle_rounds_ >= kMaxIdleRounds) {
      stop_reason_ = StopReason::kNoProgress;
      return Status();
    }
    TG_ASSIGN_OR_RETURN(std::vector<std::string> proposals, agent_->propose(ctx));
    if (proposals.empty()) {
      agent_done_ = true;
      stop_reason_ = StopReason::kAgentDone;
      return Status();
    }
    pending_ = std::move(proposals);
    pending_done_.clear();
    has_pending_ = true;
  }
}

std::string Search::checkpoint_bytes() const {
  Record r;
  r.put("magic", kMagic);
  r.put_int("version", kVersion);
  r.put("benchmark", benchmark_.uri);
  r.put("agent", agent_->name());
  r.put_u64("seed", setup_.seed);
  r.put("metric", metric_);
  if (!target_.empty()) r.put("target", target_);
  r.put("options", options_bytes(setup_.options));
  r.put_u64("rng", rng_.state());
  r.put_double("elapsed_s", elapsed_s());
  for (const TrialRecord& t : records_) {
    Record tr;
    tr.put_int("trial", t.trial);
    tr.put("trace", t.trace);
    tr.put("eval", evaluation_bytes(t.eval));
    tr.put_double("elapsed_s", t.elapsed_s);
    r.put("record", tr.bytes());
  }
  r.put_bool("has_pending", has_pending_);
  for (const std::string& p : pending_) r.put("pending", p);
  for (const Evaluation& e : pending_done_) r.put("pending_done", evaluation_bytes(e));
  r.put_bool("agent_done", agent_done_);
  r.put_int("idle_rounds", idle_rounds_);
  for (const FinalistRecord& f : finalists_) {
    Record fr;
    fr.put_int("trial", f.trial);
    for (double c : f.costs) fr.put_double("cost", c);
    r.put("finalist", fr.bytes());
  }
  r.put("agent_state", agent_->save());
  return r.bytes();
}

Status Search::save_checkpoint(const std::string& path) const {
  const std::string bytes = checkpoint_bytes();
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return failed_precondition("cannot write checkpoint " + tmp);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    out.flush();
    if (!out) return failed_precondition("cannot write checkpoint " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return failed_precondition("cannot rename " + tmp + " to " + path);
  return Status();
}

Expected<std::unique_ptr<Search>> Search::resume(const std::string& checkpoint_path, const SearchSetup& setup) {
  std::ifstream in(checkpoint_path, std::ios::binary);
  if (!in) return not_found("cannot read checkpoint " + checkpoint_path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string what = "checkpoint " + checkpoint_path;
  TG_ASSIGN_OR_RETURN(Record r, Record::parse(ss.str(), what));
  Expected<std::string> magic = r.get("magic");
  if (!magic.ok() || *magic != kMagic) return invalid_argument(what + " is not a search checkpoint");
  TG_ASSIGN_OR_RETURN(int64_t version, r.get_int("version"));
  if (version != kVersion) return invalid_argument(fmt::format("{}: unsupported version {}", what, version));

  SearchSetup s = setup;
  TG_ASSIGN_OR_RETURN(s.benchmark, r.get("benchmark"));
  TG_ASSIGN_OR_RETURN(s.agent, r.get("agent"));
  TG_ASSIGN_OR_RETURN(s.seed, r.get_u64("seed"));
  TG_ASSIGN_OR_RETURN(std::string options, r.get("options"));
  TG_ASSIGN_OR_RETURN(s.options, options_from_bytes(options));
  TG_ASSIGN_OR_RETURN(std::string metric, r.get("metric"));
  if (setup.evaluator && setup.evaluator->metric() != metric)
    return invalid_argument(what + " was made with reward " + metric + ", not " + setup.evaluator->metric());
  const std::string target = r.has("target") ? *r.get("target") : "";
  if (setup.evaluator && setup.evaluator->target() != target)
    return invalid_argument(what + " was made for target " + (target.empty() ? "cpu" : target) + ", not " +
                            (setup.evaluator->target().empty() ? "cpu" : setup.evaluator->target()));

  std::unique_ptr<Search> search(new Search());
  TG_RETURN_IF_ERROR(search->init(s));
  TG_ASSIGN_OR_RETURN(uint64_t rng, r.get_u64("rng"));
  search->rng_ = Rng(rng);
  TG_ASSIGN_OR_RETURN(search->elapsed_before_, r.get_double("elapsed_s"));
  for (const std::string& bytes : r.get_all("record")) {
    TG_ASSIGN_OR_RETURN(Record tr, Record::parse(bytes, what + " record"));
    TrialRecord t;
    TG_ASSIGN_OR_RETURN(t.trial, tr.get_int("trial"));
    TG_ASSIGN_OR_RETURN(t.trace, tr.get("trace"));
    TG_ASSIGN_OR_RETURN(std::string eval, tr.get("eval"));
    TG_ASSIGN_OR_RETURN(t.eval, evaluation_from_bytes(eval));
    TG_ASSIGN_OR_RETURN(t.elapsed_s, tr.get_double("elapsed_s"));
    if (t.trial != search->trials() + 1) return invalid_argument(what + ": trials out of order");
    search->by_trace_[t.trace] = search->records_.size();
    search->records_.push_back(std::move(t));
    const TrialRecord& added = search->records_.back();
    if (added.eval.ok() &&
        (search->best_index_ < 0 || added.eval.cost < search->records_[size_t(search->best_index_)].eval.cost)) {
      search->best_index_ = int64_t(search->records_.size()) - 1;
      search->last_improvement_trial_ = added.trial;
    }
  }
  TG_ASSIGN_OR_RETURN(search->has_pending_, r.get_bool("has_pending"));
  search->pending_ = r.get_all("pending");
  for (const std::string& bytes : r.get_all("pending_done")) {
    TG_ASSIGN_OR_RETURN(Evaluation e, evaluation_from_bytes(bytes));
    search->pending_done_.push_back(std::move(e));
  }
  TG_ASSIGN_OR_RETURN(search->agent_done_, r.get_bool("agent_done"));
  TG_ASSIGN_OR_RETURN(int64_t idle, r.get_int("idle_rounds"));
  search->idle_rounds_ = int(idle);
  for (const std::string& bytes : r.get_all("finalist")) {
    TG_ASSIGN_OR_RETURN(Record fr, Record::parse(bytes, what + " finalist"));
    FinalistRecord f;
    TG_ASSIGN_OR_RETURN(f.trial, fr.get_int("trial"));
    if (f.trial < 1 || f.trial > search->trials() || !search->records_[size_t(f.trial - 1)].eval.ok())
      return invalid_argument(fmt::format("{}: finalist {} is not a valid trial", what, f.trial));
    for (const std::string& c : fr.get_all("cost")) {
      TG_ASSIGN_OR_RETURN(double cost, double_from_exact(c));
      f.costs.push_back(cost);
    }
    search->finalists_.push_back(std::move(f));
  }
  search->pick_best_finalist();
  TG_ASSIGN_OR_RETURN(std::string agent_state, r.get("agent_state"));
  SearchContext ctx = search->context();
  TG_RETURN_IF_ERROR(search->agent_->start(ctx));
  // start() may draw from the generator; the checkpoint's state wins.
  search->rng_ = Rng(rng);
  Status st = search->agent_->load(ctx, agent_state);
  if (!st.ok()) return Status(st.code(), what + ": agent state: " + st.message());
  return search;
}

Expected<EpisodeState> Search::best_episode_state() {
  const TrialRecord* b = best();
  if (!b) return failed_precondition("the search found no valid schedule for " + benchmark_.uri);
  TG_ASSIGN_OR_RETURN(Trace trace, parse_trace(b->trace));
  std::vector<std::string> actions;
  for (Primitive p : trace.steps) {
    p.loc = {};
    actions.push_back(p.to_string());
  }
  // Replay in-process for the deterministic reward, exactly as `validate` will.
  std::shared_ptr<EnvContext> ctx = setup_.env_context;
  if (!ctx) {
    ctx = std::make_shared<EnvContext>();
    ctx->datasets = setup_.datasets;
  }
  TG_ASSIGN_OR_RETURN(std::unique_ptr<Env> env, make_env("schedule-v0", ctx));
  ResetOptions options;
  options.target = target_;
  TG_ASSIGN_OR_RETURN(std::vector<Event> first, env->reset(benchmark_.uri, options, {}));
  (void)first;
  // The deterministic reward of the search's target: the cpu's cost model, the GPU's, or
  // a simulated target's runtime (fpga: cycles at its clock).
  Expected<const Backend*> backend = find_backend(options.target);
  const std::string model = backend.ok() && (*backend)->target().simulated ? "runtime"
                            : options.target.empty()                      ? "est_cycles"
                                                                          : "est_gpu_time";
  StepResult r0 = env->step({}, {}, {model});
  if (!r0.error.ok()) return r0.error;
  for (size_t i = 0; i < actions.size(); ++i) {
    StepResult r = env->step({Event(actions[i])}, {}, {model});
    if (!r.error.ok())
      return Status(r.error.code(), fmt::format("replaying the best schedule, action {} ({}): {}", i + 1, actions[i],
                                                r.error.message()));
  }
  if (metric_ == "runtime") {
    // The runtime reward of the whole episode: (unscheduled - best) / unscheduled.
    StepResult r = env->step({}, {}, {"runtime"});
    if (!r.error.ok()) return Status(r.error.code(), "measuring the runtime reward: " + r.error.message());
  }
  EpisodeState s = env->state();
  if (metric_ == "runtime") s.provenance_json = b->eval.provenance_json;
  return s;
}

}  // namespace tensorgym
