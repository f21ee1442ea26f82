#include "agents/evolutionary_agent.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "agents/cost_model_xgb.h"
#include "agents/gpu_sketch.h"
#include "agents/serial.h"
#include "agents/sketch.h"
#include "codegen/analysis/cost_model.h"
#include "codegen/backend/registry.h"
#include "codegen/lower/lower.h"

namespace tensorgym {
namespace {

using Rows = std::vector<StoreFeatureRow>;

constexpr size_t kPriorSample = 8;  // random genomes estimated per warm-up pick of the prior

// The cpu's sketches (agents/sketch.h), valued by est_cycles on the
// target-independent nest, with as many cores as the kernels are measured on (a
// one-thread search must not prefer parallel loops it cannot run), on the machine they
// are measured on: this host's model (MachineModel::from_host: its vector width and
// registers, caches and cores, read, not measured, so the same on every run here)
// where local workers measure them, the reference machine otherwise (est_cycles
// searches stay reproducible anywhere). An AVX-512 host holds a register tile of 16
// vectors of 16 lanes that the reference machine's 16 registers of 8 would spill.
struct CpuSketches {
  using Genome = tensorgym::Genome;
  SketchPlan plan;
  MachineModel machine;
  CpuSketches(const ProgramPtr& program, int threads, bool on_this_host)
      : plan(make_sketch_plan(*program)),
        machine(on_this_host ? MachineModel::from_host() : MachineModel::reference()) {
    if (threads > 0) machine.cores = threads;
  }
  std::string machine_name() const { return machine.name; }
  Genome random(Rng& rng) const { return random_genome(plan, rng); }
  Genome mutate(const Genome& g, Rng& rng) const { return mutate_genome(plan, g, rng); }
  Genome crossover(const Genome& a, const Genome& b, Rng& rng) const { return crossover_genomes(plan, a, b, rng); }
  Expected<Schedule> render(const Genome& g, const ProgramPtr& program) const {
    return render_genome(plan, g, program);
  }
  std::string to_text(const Genome& g) const { return genome_to_text(g); }
  Expected<Genome> from_text(const std::string& text) const { return genome_from_text(plan, text); }
  Expected<LoopNest> lower_nest(const Schedule& s) const { return lower(s); }
  Expected<double> estimate(const LoopNest& nest) const { return est_cycles(nest, machine); }
};

// The GPU sketches (agents/gpu_sketch.h), valued by the GPU model (est_gpu_time) on
// the nest the est_gpu_time evaluator reads; a schedule the target's checks refuse
// has no nest, so it is never proposed.
struct GpuSketches {
  using Genome = GpuGenome;
  GpuSketchPlan plan;
  const Backend* backend = nullptr;
  GpuSketches(const ProgramPtr& program, const Backend* b) : plan(make_gpu_sketch_plan(program)), backend(b) {}
  std::string machine_name() const { return "est_gpu_time"; }
  Genome random(Rng& rng) const { return random_gpu_genome(plan, rng); }
  Genome mutate(const Genome& g, Rng& rng) const { return mutate_gpu_genome(plan, g, rng); }
  Genome crossover(const Genome& a, const Genome& b, Rng& rng) const { return crossover_gpu_genomes(plan, a, b, rng); }
  Expected<Schedule> render(const Genome& g, const ProgramPtr&) const { return render_gpu_genome(plan, g); }
  std::string to_text(const Genome& g) const { return gpu_genome_to_text(g); }
  Expected<Genome> from_text(const std::string& text) const { return gpu_genome_from_text(plan, text); }
  Expected<LoopNest> lower_nest(const Schedule& s) const {
    TG_ASSIGN_OR_RETURN(LoopNest nest, lower(s, LowerOptions{.allow_thread_binding = true}));
    TG_RETURN_IF_ERROR(lower_for_target(nest, backend->lowering()).status());
    return nest;
  }
  Expected<double> estimate(const LoopNest& nest) const {
    TG_ASSIGN_OR_RETURN(RuntimeEstimate e, backend->estimate_runtime(nest));
    return e.seconds;
  }
};

template <class Sketches>
class Evolution : public SearchAgent {
 public:
  using Genome = typename Sketches::Genome;
  struct Member {
    Genome genome;
    std::string trace;
    const Rows* rows = nullptr;
    double est = 0;  // the analytical model's estimate of the lowered nest
    double score = 0;
  };

  explicit Evolution(Sketches sketches) : sketches_(std::move(sketches)) {}

  // Unmeasured members ordered by the analytical model, best first.
  static std::vector<const Member*> by_estimate(std::vector<const Member*> members) {
    std::stable_sort(members.begin(), members.end(), [](const Member* a, const Member* b) { return a->est < b->est; });
    return members;
  }

  std::string name() const override { return "evolutionary"; }

  Status start(SearchContext& ctx) override {
    program_ = ctx.benchmark->program;
    XgbCostModelOptions mo;
    mo.rounds = ctx.options->retrain_rounds;
    model_ = std::make_unique<XgbCostModel>(mo);
    if (!ctx.initial_cost_model.empty()) TG_RETURN_IF_ERROR(model_->load(ctx.initial_cost_model));
    round_ = 0;
    genomes_.clear();
    quality_.clear();
    return Status();
  }

  Expected<std::vector<std::string>> propose(SearchContext& ctx) override {
    ++round_;
    scratch_.clear();
    const AgentOptions& o = *ctx.options;
    Rng& rng = *ctx.rng;
    const size_t batch = size_t(o.batch_size);
    std::vector<std::string> out;
    std::set<std::string> chosen;
    std::map<std::string, Genome> proposed;
    auto fresh = [&](const std::string& t) { return !ctx.lookup(t) && !chosen.count(t); };
    auto take = [&](const Member& m) {
      out.push_back(m.trace);
      chosen.insert(m.trace);
      proposed[m.trace] = m.genome;
    };

    const bool evolve = o.use_cost_model ? model_->trained() && round_ > o.warmup_random_rounds
                                         : round_ > o.warmup_random_rounds;
    const size_t prior_part = size_t(std::llround(double(batch) * o.analytical_prior));
    if (!evolve) {
      // The best-estimated of a random sample (kPriorSample per pick), then random ones.
      if (prior_part > 0) {
        std::vector<Member> sample;
        for (size_t attempt = 0; attempt < batch * 64 && sample.size() < prior_part * kPriorSample; ++attempt) {
          Member m;
          if (make_member(sketches_.random(rng), &m) && fresh(m.trace)) sample.push_back(std::move(m));
        }
        std::vector<const Member*> ptrs;
        for (const Member& m : sample) ptrs.push_back(&m);
        for (const Member* m : by_estimate(ptrs)) {
          if (out.size() >= prior_part) break;
          if (fresh(m->trace)) take(*m);
        }
      }
      for (size_t attempt = 0; attempt < batch * 64 && out.size() < batch; ++attempt) {
        Member m;
        if (make_member(sketches_.random(rng), &m) && fresh(m.trace)) take(m);
      }
      remember(proposed);
      return out;
    }

    // The initial population: the best measured genomes, then random ones.
    const size_t population = size_t(o.population);
    std::vector<Member> pop;
    {
      std::vector<const TrialRecord*> measured;
      for (const TrialRecord& r : *ctx.records)
        if (r.eval.ok() && genomes_.count(r.trace)) measured.push_back(&r);
      std::stable_sort(measured.begin(), measured.end(),
                       [](const TrialRecord* a, const TrialRecord* b) { return a->eval.cost < b->eval.cost; });
      size_t seeds = std::min(measured.size(), std::max<size_t>(1, population / 8));
      for (size_t i = 0; i < seeds; ++i) {
        Member m;
        if (make_member(genomes_.at(measured[i]->trace), &m)) pop.push_back(std::move(m));
      }
    }
    for (size_t attempt = 0; pop.size() < population && attempt < population * 8; ++attempt) {
      Member m;
      if (make_member(sketches_.random(rng), &m)) pop.push_back(std::move(m));
    }
    TG_RETURN_IF_ERROR(score(pop, rng, o.use_cost_model));

    // Every unmeasured candidate seen, with its score.
    std::map<std::string, Member> seen;
    auto collect = [&](const std::vector<Member>& p) {
      for (const Member& m : p)
        if (!ctx.lookup(m.trace)) seen.emplace(m.trace, m);
    };
    collect(pop);
    for (int gen = 0; gen < o.generations && !pop.empty(); ++gen) {
      std::vector<double> prefix = selection_prefix(pop);
      auto parent = [&]() -> const Member& {
        double x = rng.uniform() * prefix.back();
        size_t i = size_t(std::upper_bound(prefix.begin(), prefix.end(), x) - prefix.begin());
        return pop[std::min(i, pop.size() - 1)];
      };
      std::vector<Member> next;
      for (size_t attempt = 0; next.size() < population && attempt < population * 8; ++attempt) {
        Genome child = rng.chance(o.mutation_probability) ? sketches_.mutate(parent().genome, rng)
                                                          : sketches_.crossover(parent().genome, parent().genome, rng);
        Member m;
        if (make_member(std::move(child), &m)) next.push_back(std::move(m));
      }
      pop = std::move(next);
      TG_RETURN_IF_ERROR(score(pop, rng, o.use_cost_model));
      collect(pop);
    }

    // The best-estimated unmeasured candidates, the best-scored, then a few at random.
    std::vector<const Member*> ranked;
    for (const auto& [trace, m] : seen) ranked.push_back(&m);
    for (const Member* m : by_estimate(ranked)) {
      if (out.size() >= prior_part) break;
      if (fresh(m->trace)) take(*m);
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const Member* a, const Member* b) { return a->score > b->score; });
    size_t random_part = size_t(std::llround(double(batch) * o.eps_greedy));
    for (const Member* m : ranked) {
      if (out.size() + random_part >= batch) break;
      if (fresh(m->trace)) take(*m);
    }
    for (size_t attempt = 0; out.size() < batch && attempt < batch * 64; ++attempt) {
      Member m;
      if (!pop.empty() && rng.chance(0.5)) {
        m = pop[size_t(rng.below(pop.size()))];
      } else if (!make_member(sketches_.random(rng), &m)) {
        continue;
      }
      if (fresh(m.trace)) take(m);
    }
    remember(proposed);
    return out;
  }

  Status observe(SearchContext& ctx, const std::vector<std::string>& traces,
                 const std::vector<Evaluation>& evals) override {
    // The model's ranking of the new batch, which it has not seen.
    if (model_->trained()) {
      std::vector<const Rows*> programs;
      std::vector<double> costs;
      std::vector<bool> valid;
      for (size_t i = 0; i < traces.size(); ++i) {
        const Rows* rows = record_rows(traces[i]);
        if (!rows || rows->empty()) continue;
        programs.push_back(rows);
        costs.push_back(evals[i].ok() ? evals[i].cost : std::numeric_limits<double>::infinity());
        valid.push_back(evals[i].ok());
      }
      TG_ASSIGN_OR_RETURN(std::vector<double> scores, model_->predict(programs));
      RankingQuality q = ranking_quality(scores, costs, valid, std::max(1, int(traces.size()) / 4));
      if (q.pairs > 0) quality_.push_back(q);
    }
    if (!ctx.options->use_cost_model) return Status();
    std::vector<CostSample> samples;
    for (const TrialRecord& r : *ctx.records) {
      const Rows* rows = record_rows(r.trace);
      if (!rows || rows->empty()) continue;
      samples.push_back({*rows, r.eval.ok() ? r.eval.cost : 0.0, r.eval.ok()});
    }
    Status st = model_->train(samples);
    if (!st.ok() && st.code() != StatusCode::kFailedPrecondition) return st;
    return Status();
  }

  std::string save() const override {
    Record r;
    r.put_int("round", round_);
    Expected<std::string> model = model_->save();
    r.put("model", model.ok() ? *model : "");
    for (const auto& [trace, g] : genomes_) {
      Record e;
      e.put("trace", trace);
      e.put("genome", sketches_.to_text(g));
      r.put("genome", e.bytes());
    }
    for (const RankingQuality& q : quality_) {
      Record e;
      e.put_double("pairwise", q.pairwise_accuracy);
      e.put_double("recall", q.top_k_recall);
      e.put_int("k", q.k);
      e.put_int("pairs", q.pairs);
      e.put_int("samples", int64_t(q.samples));
      r.put("quality", e.bytes());
    }
    return r.bytes();
  }

  Status load(SearchContext& ctx, const std::string& bytes) override {
    TG_ASSIGN_OR_RETURN(Record r, Record::parse(bytes, "evolutionary state"));
    TG_ASSIGN_OR_RETURN(int64_t round, r.get_int("round"));
    round_ = int(round);
    TG_ASSIGN_OR_RETURN(std::string model, r.get("model"));
    TG_RETURN_IF_ERROR(model_->load(model));
    genomes_.clear();
    for (const std::string& e : r.get_all("genome")) {
      TG_ASSIGN_OR_RETURN(Record ge, Record::parse(e, "genome"));
      TG_ASSIGN_OR_RETURN(std::string trace, ge.get("trace"));
      TG_ASSIGN_OR_RETURN(std::string text, ge.get("genome"));
      TG_ASSIGN_OR_RETURN(Genome g, sketches_.from_text(text));
      genomes_[trace] = std::move(g);
    }
    quality_.clear();
    for (const std::string& e : r.get_all("quality")) {
      TG_ASSIGN_OR_RETURN(Record qe, Record::parse(e, "quality"));
      RankingQuality q;
      TG_ASSIGN_OR_RETURN(q.pairwise_accuracy, qe.get_double("pairwise"));
      TG_ASSIGN_OR_RETURN(q.top_k_recall, qe.get_double("recall"));
      TG_ASSIGN_OR_RETURN(int64_t k, qe.get_int("k"));
      q.k = int(k);
      TG_ASSIGN_OR_RETURN(q.pairs, qe.get_int("pairs"));
      TG_ASSIGN_OR_RETURN(int64_t n, qe.get_int("samples"));
      q.samples = size_t(n);
      quality_.push_back(q);
    }
    (void)ctx;
    return Status();
  }

  std::string cost_model() const override {
    Expected<std::string> bytes = model_->save();
    return bytes.ok() ? *bytes : "";
  }

  std::map<std::string, std::string> report() const override {
    std::map<std::string, std::string> out;
    out["analytical_prior.machine"] = sketches_.machine_name();
    out["cost_model.rounds_evaluated"] = std::to_string(quality_.size());
    if (!quality_.empty()) {
      double pa = 0, rc = 0, w = 0;
      for (const RankingQuality& q : quality_) {
        pa += q.pairwise_accuracy * double(q.pairs);
        rc += q.top_k_recall;
        w += double(q.pairs);
      }
      out["cost_model.pairwise_accuracy"] = fmt::format("{:.3f}", w > 0 ? pa / w : 0.0);
      out["cost_model.top_k_recall"] = fmt::format("{:.3f}", rc / double(quality_.size()));
      out["cost_model.pairwise_accuracy_last_round"] = fmt::format("{:.3f}", quality_.back().pairwise_accuracy);
    }
    return out;
  }

 private:
  // Renders, lowers, featurizes and estimates a genome; false when it does not render
  // or lower.
  bool make_member(Genome g, Member* m) {
    Expected<Schedule> s = sketches_.render(g, program_);
    if (!s.ok()) return false;
    m->trace = s->trace().to_string();
    auto it = scratch_.find(m->trace);
    if (it == scratch_.end()) {
      Expected<LoopNest> nest = sketches_.lower_nest(*s);
      Scratch sc;
      Expected<double> est = nest.ok() ? sketches_.estimate(*nest) : Expected<double>(nest.status());
      if (est.ok()) {
        sc.rows = extract_features(*nest).rows;
        sc.est = *est;
      }
      it = scratch_.emplace(m->trace, std::move(sc)).first;
    }
    if (it->second.rows.empty()) return false;
    m->rows = &it->second.rows;
    m->est = it->second.est;
    m->genome = std::move(g);
    return true;
  }

  // Ranks a population: the cost model's scores, or random ones without it.
  Status score(std::vector<Member>& pop, Rng& rng, bool use_model) {
    if (!use_model) {
      for (Member& m : pop) m.score = rng.uniform();
      return Status();
    }
    std::vector<const Rows*> programs;
    for (const Member& m : pop) programs.push_back(m.rows);
    TG_ASSIGN_OR_RETURN(std::vector<double> s, model_->predict(programs));
    for (size_t i = 0; i < pop.size(); ++i) pop[i].score = s[i];
    return Status();
  }

  // Cumulative selection weights: proportional to the score above the population's
  // minimum (every member keeps a small chance).
  static std::vector<double> selection_prefix(const std::vector<Member>& pop) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const Member& m : pop) {
      lo = std::min(lo, m.score);
      hi = std::max(hi, m.score);
    }
    double floor = std::max(1e-9, (hi - lo) * 0.01);
    std::vector<double> prefix;
    double sum = 0;
    for (const Member& m : pop) {
      sum += std::isfinite(m.score) ? m.score - lo + floor : floor;
      prefix.push_back(sum);
    }
    return prefix;
  }

  void remember(const std::map<std::string, Genome>& proposed) {
    for (const auto& [trace, g] : proposed) genomes_[trace] = g;
  }

  // Features of a measured trace (cached; recomputed after a resume).
  const Rows* record_rows(const std::string& trace) {
    auto it = record_features_.find(trace);
    if (it != record_features_.end()) return &it->second;
    Rows rows;
    auto sc = scratch_.find(trace);
    if (sc != scratch_.end()) {
      rows = sc->second.rows;
    } else {
      Expected<Schedule> s = Schedule::from_text(program_, trace);
      if (s.ok()) {
        Expected<LoopNest> nest = sketches_.lower_nest(*s);
        if (nest.ok()) rows = extract_features(*nest).rows;
      }
    }
    return &record_features_.emplace(trace, std::move(rows)).first->second;
  }

  Sketches sketches_;
  ProgramPtr program_;
  std::unique_ptr<XgbCostModel> model_;
  int round_ = 0;
  std::map<std::string, Genome> genomes_;  // proposed candidates' genomes, by trace
  std::vector<RankingQuality> quality_;
  struct Scratch {
    Rows rows;
    double est = 0;
  };
  std::map<std::string, Scratch> scratch_;       // features and estimates of this round's candidates
  std::map<std::string, Rows> record_features_;  // features of measured candidates
};

// The evolution over the search target's sketches: the cpu's, or the GPU's on cuda.
class EvolutionaryAgent : public SearchAgent {
 public:
  std::string name() const override { return "evolutionary"; }

  Status start(SearchContext& ctx) override {
    const ProgramPtr& program = ctx.benchmark->program;
    if (ctx.target.empty()) {
      impl_ = std::make_unique<Evolution<CpuSketches>>(CpuSketches(program, ctx.threads, ctx.on_this_host));
    } else if (ctx.target == "cuda") {
      TG_ASSIGN_OR_RETURN(const Backend* cuda, find_backend("cuda"));
      impl_ = std::make_unique<Evolution<GpuSketches>>(GpuSketches(program, cuda));
    } else {
      return unimplemented("the evolutionary agent has sketches for the cpu and cuda targets, not " + ctx.target +
                           "; search it with random, greedy or beam");
    }
    return impl_->start(ctx);
  }
  Expected<std::vector<std::string>> propose(SearchContext& ctx) override { return impl_->propose(ctx); }
  Status observe(SearchContext& ctx, const std::vector<std::string>& traces,
                 const std::vector<Evaluation>& evals) override {
    return impl_->observe(ctx, traces, evals);
  }
  std::string save() const override { return impl_ ? impl_->save() : ""; }
  Status load(SearchContext& ctx, const std::string& bytes) override { return impl_->load(ctx, bytes); }
  std::map<std::string, std::string> report() const override {
    return impl_ ? impl_->report() : std::map<std::string, std::string>{};
  }
  std::string cost_model() const override { return impl_ ? impl_->cost_model() : ""; }

 private:
  std::unique_ptr<SearchAgent> impl_;
};

}  // namespace

std::unique_ptr<SearchAgent> make_evolutionary_agent() { return std::make_unique<EvolutionaryAgent>(); }

}  // namespace tensorgym
