#include "agents/knob_agents.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "agents/serial.h"
#include "codegen/backend/registry.h"

namespace tensorgym {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kDrawAttempts = 64;  // random draws per wanted candidate before giving up
constexpr size_t kElite = 16;      // the evolutionary agent's tournament pool

using Choice = std::vector<int>;  // an index into each knob's values

std::string choice_text(const Choice& c) {
  std::string s;
  for (int i : c) s += (s.empty() ? "" : " ") + std::to_string(i);
  return s;
}

Expected<Choice> choice_from_text(const std::string& text, size_t knobs) {
  Choice c;
  std::istringstream in(text);
  for (int i; in >> i;) c.push_back(i);
  if (c.size() != knobs) return invalid_argument("a saved knob choice has " + std::to_string(c.size()) + " values");
  return c;
}

// What every knob agent shares: the knobs, rendering a choice, and the choice behind
// every trace it proposed (kept in checkpoints).
class KnobAgent : public SearchAgent {
 public:
  Status start(SearchContext& ctx) override {
    TG_ASSIGN_OR_RETURN(backend_, find_backend(ctx.target));
    TG_ASSIGN_OR_RETURN(knobs_, backend_->schedule_knobs(ctx.benchmark->program));
    for (const ScheduleKnob& k : knobs_)
      if (k.values.empty()) return failed_precondition("schedule knob " + k.name + " has no value");
    return Status();
  }

  std::string save() const override {
    Record r;
    for (const auto& [trace, choice] : choices_) r.put("choice", choice_text(choice) + "\n" + trace);
    save_more(r);
    return r.bytes();
  }

  Status load(SearchContext& ctx, const std::string& bytes) override {
    TG_ASSIGN_OR_RETURN(Record r, Record::parse(bytes, name() + " state"));
    choices_.clear();
    for (const std::string& entry : r.get_all("choice")) {
      const size_t nl = entry.find('\n');
      if (nl == std::string::npos) return invalid_argument("a saved knob choice has no trace");
      TG_ASSIGN_OR_RETURN(Choice c, choice_from_text(entry.substr(0, nl), knobs_.size()));
      choices_[entry.substr(nl + 1)] = c;
    }
    return load_more(ctx, r);
  }

 protected:
  virtual void save_more(Record&) const {}
  virtual Status load_more(SearchContext&, const Record&) { return Status(); }

  // The choice's schedule; empty when the target refuses the combination.
  std::string render(SearchContext& ctx, const Choice& c) {
    std::vector<int64_t> values;
    for (size_t k = 0; k < knobs_.size(); ++k) values.push_back(knobs_[k].values[size_t(c[k])]);
    Expected<std::string> trace = backend_->knob_schedule(ctx.benchmark->program, values);
    if (!trace.ok()) return "";
    choices_.emplace(*trace, c);
    return *trace;
  }

  Choice random_choice(SearchContext& ctx) {
    Choice c;
    for (const ScheduleKnob& k : knobs_) c.push_back(int(ctx.rng->below(k.values.size())));
    return c;
  }

  // A legal choice not evaluated and not in `taken`, drawn at random; empty when none
  // turned up in kDrawAttempts draws.
  std::string draw_new(SearchContext& ctx, std::set<std::string>& taken) {
    for (int attempt = 0; attempt < kDrawAttempts; ++attempt) {
      std::string t = render(ctx, random_choice(ctx));
      if (!t.empty() && !ctx.lookup(t) && taken.insert(t).second) return t;
    }
    return "";
  }

  // The choices one knob one step away, in knob order.
  std::vector<Choice> neighbours(const Choice& c) const {
    std::vector<Choice> out;
    for (size_t k = 0; k < knobs_.size(); ++k)
      for (int d : {-1, 1}) {
        const int v = c[k] + d;
        if (v < 0 || v >= int(knobs_[k].values.size())) continue;
        Choice n = c;
        n[k] = v;
        out.push_back(n);
      }
    return out;
  }

  const Choice* choice_of(const std::string& trace) const {
    auto it = choices_.find(trace);
    return it == choices_.end() ? nullptr : &it->second;
  }

  const Backend* backend_ = nullptr;
  std::vector<ScheduleKnob> knobs_;
  std::map<std::string, Choice> choices_;  // trace -> the choice that rendered it
};

double cost_of(const Evaluation* e) { return e && e->ok() ? e->cost : kInf; }

// ---- random --------------------------------------------------------------------------

class KnobRandomAgent : public KnobAgent {
 public:
  std::string name() const override { return "random"; }
  Expected<std::vector<std::string>> propose(SearchContext& ctx) override {
    std::set<std::string> taken;
    std::vector<std::string> out;
    for (int i = 0; i < ctx.options->batch_size; ++i) {
      std::string t = draw_new(ctx, taken);
      if (t.empty()) break;
      out.push_back(t);
    }
    return out;
  }
  Status observe(SearchContext&, const std::vector<std::string>&, const std::vector<Evaluation>&) override {
    return Status();
  }
};

// ---- greedy --------------------------------------------------------------------------

class KnobGreedyAgent : public KnobAgent {
 public:
  std::string name() const override { return "greedy"; }

  Expected<std::vector<std::string>> propose(SearchContext& ctx) override {
    std::set<std::string> taken;
    if (!current_.empty()) {
      const Choice* at = choice_of(current_);
      std::vector<std::string> out;
      for (const Choice& n : neighbours(*at)) {
        if (int(out.size()) >= ctx.options->branching) break;
        std::string t = render(ctx, n);
        if (!t.empty() && !ctx.lookup(t) && taken.insert(t).second) out.push_back(t);
      }
      if (!out.empty()) return out;
    }
    // A start, or a restart from a local optimum: a random legal choice.
    current_.clear();
    std::string t = draw_new(ctx, taken);
    if (t.empty()) return std::vector<std::string>{};
    return std::vector<std::string>{t};
  }

  Status observe(SearchContext& ctx, const std::vector<std::string>& traces,
                 const std::vector<Evaluation>& evals) override {
    if (current_.empty()) {
      // A start: move there when it is valid.
      if (!traces.empty() && evals[0].ok()) current_ = traces[0];
      return Status();
    }
    const double here = cost_of(ctx.lookup(current_));
    size_t best = traces.size();
    for (size_t i = 0; i < traces.size(); ++i)
      if (cost_of(&evals[i]) < (best == traces.size() ? here : cost_of(&evals[best]))) best = i;
    current_ = best == traces.size() ? std::string() : traces[best];  // none better: restart
    return Status();
  }

 protected:
  void save_more(Record& r) const override { r.put("current", current_); }
  Status load_more(SearchContext&, const Record& r) override {
    TG_ASSIGN_OR_RETURN(current_, r.get("current"));
    return Status();
  }

 private:
  std::string current_;  // empty: start again
};

// ---- evolutionary --------------------------------------------------------------------

class KnobEvolutionaryAgent : public KnobAgent {
 public:
  std::string name() const override { return "evolutionary"; }

  Expected<std::vector<std::string>> propose(SearchContext& ctx) override {
    // The valid candidates so far, best first (ties by trace: deterministic).
    std::vector<std::pair<double, std::string>> ranked;
    for (const TrialRecord& r : *ctx.records)
      if (r.eval.ok() && choice_of(r.trace)) ranked.emplace_back(r.eval.cost, r.trace);
    std::sort(ranked.begin(), ranked.end());
    ranked.resize(std::min(ranked.size(), kElite));

    std::set<std::string> taken;
    std::vector<std::string> out;
    const int want = ctx.options->batch_size;
    for (int misses = 0; int(out.size()) < want && misses < kDrawAttempts * want;) {
      std::string t;
      if (ranked.empty() || ctx.rng->chance(ctx.options->eps_greedy)) {
        t = draw_new(ctx, taken);
        if (t.empty()) break;  // nothing new left to draw
      } else {
        Choice child = *choice_of(tournament(ctx, ranked));
        if (ctx.rng->chance(ctx.options->mutation_probability)) {
          mutate(ctx, child);
        } else {
          const Choice& other = *choice_of(tournament(ctx, ranked));
          for (size_t k = 0; k < child.size(); ++k)
            if (ctx.rng->chance(0.5)) child[k] = other[k];
        }
        t = render(ctx, child);
        if (t.empty() || ctx.lookup(t) || !taken.insert(t).second) {
          ++misses;
          continue;
        }
      }
      out.push_back(t);
    }
    return out;
  }

  Status observe(SearchContext&, const std::vector<std::string>&, const std::vector<Evaluation>&) override {
    return Status();
  }

 private:
  // The better of two of the ranked candidates drawn at random.
  const std::string& tournament(SearchContext& ctx, const std::vector<std::pair<double, std::string>>& ranked) {
    const size_t a = size_t(ctx.rng->below(ranked.size())), b = size_t(ctx.rng->below(ranked.size()));
    return ranked[std::min(a, b)].second;
  }

  // One knob (two, one time in four) to a neighbouring value, or to any value one time
  // in four.
  void mutate(SearchContext& ctx, Choice& c) {
    const int changes = ctx.rng->chance(0.25) ? 2 : 1;
    for (int i = 0; i < changes; ++i) {
      const size_t k = size_t(ctx.rng->below(c.size()));
      const int n = int(knobs_[k].values.size());
      if (n < 2) continue;
      if (ctx.rng->chance(0.25)) {
        c[k] = int(ctx.rng->below(uint64_t(n)));
      } else {
        c[k] = std::clamp(c[k] + (ctx.rng->chance(0.5) ? 1 : -1), 0, n - 1);
      }
    }
  }
};

}  // namespace

bool has_schedule_knobs(const std::string& target, const ProgramPtr& program) {
  Expected<const Backend*> backend = find_backend(target);
  if (!backend.ok()) return false;
  Expected<std::vector<ScheduleKnob>> knobs = (*backend)->schedule_knobs(program);
  return knobs.ok() || knobs.status().code() != StatusCode::kUnimplemented;
}

Expected<std::unique_ptr<SearchAgent>> make_knob_agent(const std::string& name) {
  if (name == "random") return std::unique_ptr<SearchAgent>(std::make_unique<KnobRandomAgent>());
  if (name == "greedy") return std::unique_ptr<SearchAgent>(std::make_unique<KnobGreedyAgent>());
  if (name == "evolutionary") return std::unique_ptr<SearchAgent>(std::make_unique<KnobEvolutionaryAgent>());
  return not_found("no agent '" + name + "' for a target scheduled by knobs (agents there: random, greedy, "
                   "evolutionary; beam steps through primitives)");
}

}  // namespace tensorgym
