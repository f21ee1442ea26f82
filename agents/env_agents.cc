// Agents that step through the schedule-v0 `primitives` action space with an Env:
// random (random legal actions), greedy (one-step lookahead) and beam (beam search
// over action sequences). They use the Env for what is legal (action_mask), for
// lookahead (fork) and for the canonical text of each action; candidates are the
// episodes' action lists as schedule traces, evaluated by the search's Evaluator.
#include "agents/env_agents.h"

#include <algorithm>
#include <limits>
#include <set>

#include "agents/evaluator.h"
#include "agents/serial.h"
#include "codegen/backend/registry.h"
#include "codegen/lower/random_gpu_schedule.h"
#include "envs/env_context.h"
#include "support/quote.h"

namespace tensorgym {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A node of the search: the actions applied since reset, as one trace text (one
// primitive per line, newline-terminated; empty for the unscheduled program).
std::string trace_of(const std::vector<std::string>& actions) {
  std::string t;
  for (const std::string& a : actions) t += a + "\n";
  return t;
}

std::vector<std::string> actions_of(const std::string& trace) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < trace.size()) {
    size_t nl = trace.find('\n', pos);
    if (nl == std::string::npos) nl = trace.size();
    if (nl > pos) out.push_back(trace.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return out;
}

double cost_of(const Evaluation& e) { return e.ok() ? e.cost : kInf; }

// An environment at `trace` (reset on the search's target, then each action): on the
// cuda target the mask offers bind and set_scope, not parallel.
Expected<std::unique_ptr<Env>> env_at(SearchContext& ctx, const std::string& trace) {
  TG_ASSIGN_OR_RETURN(std::unique_ptr<Env> env, ctx.make_env());
  ResetOptions options;
  options.target = ctx.target;
  TG_ASSIGN_OR_RETURN(std::vector<Event> obs, env->reset(ctx.benchmark->uri, options, {}));
  (void)obs;
  for (const std::string& a : actions_of(trace)) {
    StepResult r = env->step({Event(a)}, {}, {});
    if (!r.error.ok()) return Status(r.error.code(), "replaying " + quote_text(a) + ": " + r.error.message());
  }
  return env;
}

// Indices the action mask allows, in order.
Expected<std::vector<int64_t>> legal_actions(Env& env) {
  StepResult r = env.step({}, {"action_mask"}, {});
  if (!r.error.ok()) return r.error;
  std::vector<int64_t> out;
  if (!r.observations.empty() && r.observations[0].is<Int64Tensor>()) {
    const std::vector<int64_t>& m = r.observations[0].as<Int64Tensor>().values;
    for (size_t i = 0; i < m.size(); ++i)
      if (m[i]) out.push_back(int64_t(i));
  }
  return out;
}

void shuffle(std::vector<int64_t>& v, Rng& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[size_t(rng.below(i))]);
}

// Up to `count` distinct children of the node at `trace`: legal actions drawn at
// random (without replacement) that apply and change the schedule. Children already in
// `seen` are skipped (and new ones added to it).
Expected<std::vector<std::string>> sample_children(SearchContext& ctx, const std::string& trace, int count,
                                                   std::set<std::string>* seen) {
  TG_ASSIGN_OR_RETURN(std::unique_ptr<Env> env, env_at(ctx, trace));
  TG_ASSIGN_OR_RETURN(std::vector<int64_t> legal, legal_actions(*env));
  shuffle(legal, *ctx.rng);
  std::vector<std::string> out;
  for (int64_t a : legal) {
    if (int(out.size()) >= count) break;
    TG_ASSIGN_OR_RETURN(std::unique_ptr<Env> child, env->fork());
    StepResult r = child->step({Event(a)}, {}, {});
    if (!r.error.ok() || r.action_had_no_effect) continue;
    std::string t = trace_of(child->state().actions);
    if (seen->insert(t).second) out.push_back(t);
  }
  return out;
}

// ---- random --------------------------------------------------------------------------

class RandomAgent : public SearchAgent {
 public:
  std::string name() const override { return "random"; }
  Status start(SearchContext&) override { return Status(); }

  Expected<std::vector<std::string>> propose(SearchContext& ctx) override {
    std::vector<std::string> out;
    for (int e = 0; e < ctx.options->batch_size; ++e) {
      // On a GPU target a few random actions rarely bind a whole stage: draw random
      // legal GPU schedules (codegen/lower/random_gpu_schedule.h) instead, and fall
      // back to random actions for a program that has none.
      if (ctx.target == "cuda") {
        TG_ASSIGN_OR_RETURN(const Backend* backend, find_backend(ctx.target));
        Expected<Schedule> drawn = random_gpu_schedule(ctx.benchmark->program, backend->lowering(), *ctx.rng);
        if (drawn.ok()) {
          out.push_back(drawn->trace().to_string());
          continue;
        }
      }
      TG_ASSIGN_OR_RETURN(std::unique_ptr<Env> env, env_at(ctx, ""));
      int length = int(ctx.rng->range(1, ctx.options->episode_length));
      for (int step = 0; step < length; ++step) {
        TG_ASSIGN_OR_RETURN(std::vector<int64_t> legal, legal_actions(*env));
        if (legal.empty()) break;
        // A masked-in action may still be rejected; draw again a few times.
        for (int attempt = 0; attempt < 8; ++attempt) {
          StepResult r = env->step({Event(ctx.rng->pick(legal))}, {}, {});
          if (r.error.ok() && !r.action_had_no_effect) break;
        }
      }
      out.push_back(trace_of(env->state().actions));
    }
    return out;
  }

  Status observe(SearchContext&, const std::vector<std::string>&, const std::vector<Evaluation>&) override {
    return Status();
  }
  std::string save() const override { return ""; }
  Status load(SearchContext&, const std::string&) override { return Status(); }
};

// ---- greedy --------------------------------------------------------------------------

// Hill climbing: from the current state, try `branching` random legal actions, move to
// the best child if it improves on the current state, else restart from the
// unscheduled program; restart also at the depth limit.
class GreedyAgent : public SearchAgent {
 public:
  std::string name() const override { return "greedy"; }
  Status start(SearchContext&) override {
    current_.clear();
    current_cost_ = kInf;
    depth_ = 0;
    root_evaluated_ = false;
    return Status();
  }

  Expected<std::vector<std::string>> propose(SearchContext& ctx) override {
    if (!root_evaluated_) return std::vector<std::string>{""};
    for (int attempt = 0; attempt < 2; ++attempt) {
      std::set<std::string> seen;
      TG_ASSIGN_OR_RETURN(std::vector<std::string> children,
                          sample_children(ctx, current_, ctx.options->branching, &seen));
      if (!children.empty()) return children;
      restart(ctx);  // a dead end: nothing applies here
    }
    return std::vector<std::string>{};
  }

  Status observe(SearchContext& ctx, const std::vector<std::string>& traces,
                 const std::vector<Evaluation>& evals) override {
    if (!root_evaluated_) {
      root_evaluated_ = true;
      current_cost_ = cost_of(evals[0]);
      return Status();
    }
    size_t best = traces.size();
    for (size_t i = 0; i < traces.size(); ++i)
      if (cost_of(evals[i]) < (best == traces.size() ? current_cost_ : cost_of(evals[best]))) best = i;
    if (best == traces.size()) {
      restart(ctx);
      return Status();
    }
    current_ = traces[best];
    current_cost_ = cost_of(evals[best]);
    if (++depth_ >= ctx.options->episode_length) restart(ctx);
    return Status();
  }

  std::string save() const override {
    Record r;
    r.put("current", current_);
    r.put_double("current_cost", current_cost_);
    r.put_int("depth", depth_);
    r.put_bool("root_evaluated", root_evaluated_);
    return r.bytes();
  }
  Status load(SearchContext&, const std::string& bytes) override {
    TG_ASSIGN_OR_RETURN(Record r, Record::parse(bytes, "greedy state"));
    TG_ASSIGN_OR_RETURN(current_, r.get("current"));
    TG_ASSIGN_OR_RETURN(current_cost_, r.get_double("current_cost"));
    TG_ASSIGN_OR_RETURN(int64_t d, r.get_int("depth"));
    depth_ = int(d);
    TG_ASSIGN_OR_RETURN(root_evaluated_, r.get_bool("root_evaluated"));
    return Status();
  }

 private:
  void restart(SearchContext& ctx) {
    current_.clear();
    const Evaluation* root = ctx.lookup("");
    current_cost_ = root ? cost_of(*root) : kInf;
    depth_ = 0;
  }

  std::string current_;
  double current_cost_ = kInf;
  int depth_ = 0;
  bool root_evaluated_ = false;
};

// ---- beam ----------------------------------------------------------------------------

// Beam search: every state of the beam expands `branching` random legal actions; the
// `beam_width` best children (valid, distinct) form the next beam. At the depth limit,
// or when no child is valid, the search restarts from the unscheduled program.
class BeamAgent : public SearchAgent {
 public:
  std::string name() const override { return "beam"; }
  Status start(SearchContext&) override {
    beam_.clear();
    depth_ = 0;
    root_evaluated_ = false;
    return Status();
  }

  Expected<std::vector<std::string>> propose(SearchContext& ctx) override {
    if (!root_evaluated_) return std::vector<std::string>{""};
    for (int attempt = 0; attempt < 2; ++attempt) {
      std::set<std::string> seen;
      std::vector<std::string> out;
      for (const std::string& node : beam_) {
        TG_ASSIGN_OR_RETURN(std::vector<std::string> children,
                            sample_children(ctx, node, ctx.options->branching, &seen));
        out.insert(out.end(), children.begin(), children.end());
      }
      if (!out.empty()) return out;
      restart();
    }
    return std::vector<std::string>{};
  }

  Status observe(SearchContext& ctx, const std::vector<std::string>& traces,
                 const std::vector<Evaluation>& evals) override {
    if (!root_evaluated_) {
      root_evaluated_ = true;
      restart();
      return Status();
    }
    std::vector<size_t> order;
    for (size_t i = 0; i < traces.size(); ++i)
      if (evals[i].ok()) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return evals[a].cost < evals[b].cost; });
    beam_.clear();
    for (size_t i : order) {
      if (int(beam_.size()) >= ctx.options->beam_width) break;
      beam_.push_back(traces[i]);
    }
    if (beam_.empty() || ++depth_ >= ctx.options->episode_length) restart();
    return Status();
  }

  std::string save() const override {
    Record r;
    for (const std::string& b : beam_) r.put("beam", b);
    r.put_int("depth", depth_);
    r.put_bool("root_evaluated", root_evaluated_);
    return r.bytes();
  }
  Status load(SearchContext&, const std::string& bytes) override {
    TG_ASSIGN_OR_RETURN(Record r, Record::parse(bytes, "beam state"));
    beam_ = r.get_all("beam");
    TG_ASSIGN_OR_RETURN(int64_t d, r.get_int("depth"));
    depth_ = int(d);
    TG_ASSIGN_OR_RETURN(root_evaluated_, r.get_bool("root_evaluated"));
    return Status();
  }

 private:
  void restart() {
    beam_ = {""};
    depth_ = 0;
  }

  std::vector<std::string> beam_;
  int depth_ = 0;
  bool root_evaluated_ = false;
};

}  // namespace

std::unique_ptr<SearchAgent> make_random_agent() { return std::make_unique<RandomAgent>(); }
std::unique_ptr<SearchAgent> make_greedy_agent() { return std::make_unique<GreedyAgent>(); }
std::unique_ptr<SearchAgent> make_beam_agent() { return std::make_unique<BeamAgent>(); }

}  // namespace tensorgym
