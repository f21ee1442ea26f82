#include "memplan/limit_planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>

#include "memplan/op_stages.h"
#include "memplan/rewrites.h"

namespace tensorgym {
namespace {

using Clock = std::chrono::steady_clock;

struct Candidate {
  Rewrites rewrites;
  LivePeak peak;
  int64_t work = 0;
};

// A state's rewrites as a set: its splits in any order, then its recomputations in
// order (each applies to the graph the ones before it left).
std::string state_key(const Rewrites& r) {
  std::vector<std::string> splits(r.texts.begin(), r.texts.begin() + long(r.splits.size()));
  std::sort(splits.begin(), splits.end());
  std::string key;
  for (const std::string& t : splits) key += t + "\n";
  key += "|";
  for (size_t i = r.splits.size(); i < r.texts.size(); ++i) key += r.texts[i] + "\n";
  return key;
}

// Reaching the target: the cheapest that does; otherwise the least excess over the
// target, and of those within 2% of it the cheapest.
const Candidate* pick(const std::vector<Candidate>& candidates, int64_t target) {
  const Candidate* best = nullptr;
  for (const Candidate& c : candidates)
    if (c.peak.bytes <= target && (!best || c.work < best->work)) best = &c;
  if (best) return best;
  int64_t least = INT64_MAX;
  for (const Candidate& c : candidates) least = std::min(least, c.peak.excess(target));
  // Equal work (channel tiles add next to none): the lower excess.
  for (const Candidate& c : candidates) {
    const int64_t e = c.peak.excess(target);
    if (e <= least + least / 50 &&
        (!best || c.work < best->work || (c.work == best->work && e < best->peak.excess(target))))
      best = &c;
  }
  return best;
}

// The search over rewrite states for one target.
class Search {
 public:
  Search(const Graph& original, const LimitPlanOptions& options, Clock::time_point deadline)
      : original_(original), options_(options), deadline_(deadline) {}

  // Beam search from `start`: each round expands every state of the beam; children
  // that reach `target` are kept in fits(), and of the others the beam keeps the one
  // the greedy rule picks among the first state's children (so width 1 is the greedy
  // search), then the `width` - 1 with the least excess, then the least arithmetic.
  // States with as much arithmetic as the cheapest fit found are not expanded.
  Status run(const Candidate& start, int64_t target, size_t width) {
    std::set<std::string> seen{state_key(start.rewrites)};
    std::vector<Candidate> beam{start};
    while (!beam.empty() && Clock::now() <= deadline_) {
      std::vector<Candidate> next;
      std::optional<Candidate> lead;
      for (size_t i = 0; i < beam.size(); ++i) {
        TG_ASSIGN_OR_RETURN(std::vector<Candidate> kids, children(beam[i], target));
        if (i == 0) {
          if (const Candidate* p = pick(kids, target); p && p->peak.bytes > target) lead = *p;
        }
        for (Candidate& c : kids) {
          if (!seen.insert(state_key(c.rewrites)).second) continue;  // reached before
          if (closest_.peak.bytes == 0 || c.peak.bytes < closest_.peak.bytes) closest_ = c;
          if (c.peak.bytes <= target) {
            cheapest_fit_ = std::min(cheapest_fit_, c.work);
            if (fit_keys_.insert(state_key(c.rewrites)).second) fits_.push_back(std::move(c));
          } else {
            next.push_back(std::move(c));
          }
        }
      }
      std::vector<Candidate> kept;
      const std::string lead_key = lead ? state_key(lead->rewrites) : "";
      if (lead && lead->work < cheapest_fit_) kept.push_back(std::move(*lead));
      std::stable_sort(next.begin(), next.end(), [&](const Candidate& a, const Candidate& b) {
        const int64_t ea = a.peak.excess(target), eb = b.peak.excess(target);
        return ea != eb ? ea < eb : a.work < b.work;
      });
      size_t others = 0;
      for (Candidate& c : next) {
        if (others + 1 >= width) break;
        if (c.work < cheapest_fit_ && state_key(c.rewrites) != lead_key) {
          kept.push_back(std::move(c));
          ++others;
        }
      }
      beam = std::move(kept);
    }
    return {};
  }

  // From now on, a state that no split or recomputation improves takes cones.
  void allow_cones() { depth_ = options_.recompute_depth; }

  std::vector<Candidate>& fits() { return fits_; }
  // The state with the lowest peak seen (for the message when nothing fits).
  const Candidate& closest() const { return closest_; }

 private:
  // The rewrites that may follow `parent` and lower its peak, or keep it and lower
  // the excess: splits, or recomputations where no split does, and cones (deeper
  // recomputations, several times as many) where neither does.
  Expected<std::vector<Candidate>> children(const Candidate& parent, int64_t target) {
    std::vector<Candidate> splits, recomputes;
    if (int(parent.rewrites.texts.size()) >= options_.max_rewrites) return splits;
    TG_ASSIGN_OR_RETURN(const Graph graph, apply_rewrites(original_, parent.rewrites));
    const int64_t excess = parent.peak.excess(target);
    auto consider = [&](NextRewrite& n) {
      const Evaluated* e = evaluate(n.next);
      if (!e) return;
      // A lower peak counts even where the excess rises: the quick orders behind both
      // figures change with the graph, and the excess is summed along them.
      if (e->peak.bytes > parent.peak.bytes || (e->peak.bytes == parent.peak.bytes && e->peak.excess(target) >= excess))
        return;
      const int64_t work = work_of(n.next);  // after the filter: it costs as much as the rest
      if (work < 0) return;
      const bool split = n.next.recomputes.size() == parent.rewrites.recomputes.size();
      (split ? splits : recomputes).push_back({std::move(n.next), e->peak, work});
    };
    for (NextRewrite& n : next_rewrites(original_, parent.rewrites, graph, options_.alignment, options_.max_region,
                                        4096, /*max_depth=*/1)) {
      if (Clock::now() > deadline_) break;
      consider(n);
    }
    if (splits.empty() && recomputes.empty() && depth_ > 1) {
      for (NextRewrite& n :
           next_rewrites(original_, parent.rewrites, graph, options_.alignment, options_.max_region, 4096, depth_)) {
        if (Clock::now() > deadline_) break;
        if (n.next.recomputes.size() > parent.rewrites.recomputes.size() && n.next.recomputes.back().depth > 1)
          consider(n);
      }
    }
    return splits.empty() ? recomputes : splits;
  }

  // A state's peak and arithmetic, each computed once for each state (null where its
  // rewrites do not apply).
  struct Evaluated {
    LivePeak peak;
    std::optional<int64_t> work;  // -1 where it cannot be computed
  };
  const Evaluated* evaluate(const Rewrites& rewrites) {
    const std::string key = state_key(rewrites);
    auto it = evaluated_.find(key);
    if (it != evaluated_.end()) return it->second ? &*it->second : nullptr;
    std::optional<Evaluated>& slot = evaluated_[key];
    Expected<Graph> g = apply_rewrites(original_, rewrites);
    if (!g.ok()) return nullptr;
    slot.emplace();
    slot->peak = live_peak(*g, options_.alignment);
    slot->peak.order.clear();  // kept: the profile, for the excess
    slot->peak.live.clear();
    return &*slot;
  }
  int64_t work_of(const Rewrites& rewrites) {
    std::optional<Evaluated>& slot = evaluated_[state_key(rewrites)];
    if (!slot->work) {
      Expected<Graph> g = apply_rewrites(original_, rewrites);
      Expected<int64_t> work = g.ok() ? graph_work(*g) : Expected<int64_t>(g.status());
      slot->work = work.ok() ? *work : -1;
    }
    return *slot->work;
  }

  const Graph& original_;
  const LimitPlanOptions& options_;
  Clock::time_point deadline_;
  int depth_ = 1;  // of the recomputations offered
  std::map<std::string, std::optional<Evaluated>> evaluated_;
  std::vector<Candidate> fits_;  // each state once, over both passes
  std::set<std::string> fit_keys_;
  int64_t cheapest_fit_ = INT64_MAX;
  Candidate closest_;
};

// Of the states that reach the target, the cheapest few by work measured while more
// than a quarter of the time is left, the fastest; the cheapest when none could be.
Expected<const Candidate*> fastest(const Graph& original, const std::vector<Candidate>& fits,
                                   const LimitPlanOptions& options, const std::function<double()>& seconds_left,
                                   std::vector<std::pair<std::string, double>>* measured) {
  std::vector<const Candidate*> order;
  for (const Candidate& c : fits) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(),
                   [](const Candidate* a, const Candidate* b) { return a->work < b->work; });
  const Candidate* best = nullptr;
  double best_s = 0;
  measured->clear();
  for (const Candidate* c : order) {
    if (int(measured->size()) >= std::max(1, options.measure_candidates)) break;
    if (seconds_left() < options.time_limit_s / 4) break;
    TG_ASSIGN_OR_RETURN(const Graph g, apply_rewrites(original, c->rewrites));
    TG_ASSIGN_OR_RETURN(double s, options.runtime(g));
    std::string texts;
    for (const std::string& t : c->rewrites.texts) texts += (texts.empty() ? "" : "; ") + t;
    measured->emplace_back(texts, s);
    if (!best || s < best_s) {
      best = c;
      best_s = s;
      std::rotate(measured->begin(), measured->end() - 1, measured->end());  // the chosen one first
    }
  }
  return best ? best : order.front();
}

}  // namespace

Expected<int64_t> graph_work(const Graph& graph) {
  int64_t work = 0;
  for (const GraphOp& op : graph.ops) {
    TG_ASSIGN_OR_RETURN(OpProgram p, op_program(graph, op));
    work += op_work(p);
  }
  return work;
}

Expected<LimitPlan> plan_under_limit(const Graph& graph, const LimitPlanOptions& options) {
  if (options.memory_limit <= 0) return invalid_argument("a memory limit of at least 1 byte is needed");
  if (options.recompute_depth < 1 || options.recompute_depth > kMaxRecomputeDepth)
    return invalid_argument(
        fmt::format("a recomputation's depth is 1 to {}, not {}", kMaxRecomputeDepth, options.recompute_depth));
  const auto began = Clock::now();
  const Clock::time_point deadline =
      began + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.time_limit_s * 0.6));
  auto seconds_left = [&] {
    return options.time_limit_s - std::chrono::duration<double>(Clock::now() - began).count();
  };
  LimitPlan result;
  TG_ASSIGN_OR_RETURN(result.original_work, graph_work(graph));
  GraphPlanOptions po;
  po.planner = "best";
  po.alignment = options.alignment;
  po.seed = options.seed;
  int64_t smallest = INT64_MAX;
  std::vector<std::string> smallest_rewrites;  // those of the smallest arena planned
  auto plan = [&](const Graph& g, const Rewrites& rewrites) -> Expected<GraphPlan> {
    po.time_limit_s = std::max(0.2, std::min(seconds_left(), options.time_limit_s * 0.2));
    TG_ASSIGN_OR_RETURN(GraphPlan p, plan_graph(g, po));
    if (p.arena < smallest) {
      smallest = p.arena;
      smallest_rewrites = rewrites.texts;
    }
    return p;
  };
  int64_t target = options.memory_limit;
  Candidate start{{}, live_peak(graph, options.alignment), result.original_work};
  for (;;) {
    if (start.peak.bytes <= target) {
      // Plan it; an arena over the limit although the peak fits asks for a lower peak.
      TG_ASSIGN_OR_RETURN(result.graph, apply_rewrites(graph, start.rewrites));
      TG_ASSIGN_OR_RETURN(result.plan, plan(result.graph, start.rewrites));
      if (result.plan.arena <= options.memory_limit) {
        result.rewrites = start.rewrites.texts;
        result.work = start.work;
        return result;
      }
      if (Clock::now() > deadline) break;
      target -= std::max<int64_t>(options.alignment, result.plan.arena - options.memory_limit);
      start.peak = live_peak(result.graph, options.alignment);
      continue;
    }
    // The greedy search first, then a wider beam with the time left, bounded by the
    // arithmetic of what the greedy search found; where neither fits, both again
    // with cones (each state already seen is not evaluated again).
    Search search(graph, options, deadline);
    for (int pass = 0; pass < 2 && search.fits().empty(); ++pass) {
      if (pass == 1) {
        if (options.recompute_depth == 1) break;
        search.allow_cones();
      }
      TG_RETURN_IF_ERROR(search.run(start, target, 1));
      if (options.beam_width > 1) TG_RETURN_IF_ERROR(search.run(start, target, size_t(options.beam_width)));
    }
    std::vector<Candidate>& fits = search.fits();
    if (fits.empty()) {
      const Candidate& near = search.closest().peak.bytes > 0 ? search.closest() : start;
      TG_ASSIGN_OR_RETURN(const Graph g, apply_rewrites(graph, near.rewrites));
      (void)plan(g, near.rewrites);
      break;
    }
    const Candidate* cheapest = &*std::min_element(
        fits.begin(), fits.end(), [](const Candidate& a, const Candidate& b) { return a.work < b.work; });
    const Candidate* chosen = cheapest;
    if (options.runtime) {
      // Measured only once the cheapest one's plan fits: a peak under the limit can
      // still leave an arena over it, and then the search goes on instead.
      TG_ASSIGN_OR_RETURN(Graph g, apply_rewrites(graph, cheapest->rewrites));
      TG_ASSIGN_OR_RETURN(GraphPlan p, plan(g, cheapest->rewrites));
      if (p.arena <= options.memory_limit) {
        TG_ASSIGN_OR_RETURN(chosen, fastest(graph, fits, options, seconds_left, &result.measured));
        if (chosen == cheapest) {
          result.graph = std::move(g);
          result.plan = std::move(p);
          result.rewrites = cheapest->rewrites.texts;
          result.work = cheapest->work;
          return result;
        }
      }
    }
    start = *chosen;
  }
  std::string which;
  for (const std::string& t : smallest_rewrites) which += (which.empty() ? ": " : "; ") + t;
  return resource_exhausted(fmt::format(
      "graph '{}' does not fit {} bytes: the smallest arena reached is {} bytes "
      "after {} rewrites (splitting operators and recomputing tensors){}",
      graph.name, options.memory_limit, smallest == INT64_MAX ? 0 : smallest, smallest_rewrites.size(), which));
}

}  // namespace tensorgym
