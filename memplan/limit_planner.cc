#include "memplan/limit_planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "memplan/op_stages.h"
#include "memplan/rewrites.h"

namespace tensorgym {
namespace {

using Clock = std::chrono::steady_clock;

struct Candidate {
  Rewrites rewrites;
  Graph graph;
  int64_t peak = 0, excess = 0, work = 0;
};

// Reaching the target: the cheapest that does; otherwise the least excess over the
// target, and of those within 2% of it the cheapest.
const Candidate* pick(const std::vector<Candidate>& candidates, int64_t target) {
  const Candidate* best = nullptr;
  for (const Candidate& c : candidates)
    if (c.peak <= target && (!best || c.work < best->work)) best = &c;
  if (best) return best;
  int64_t least = INT64_MAX;
  for (const Candidate& c : candidates) least = std::min(least, c.excess);
  // Equal work (channel tiles add next to none): the lower excess.
  for (const Candidate& c : candidates)
    if (c.excess <= least + least / 50 &&
        (!best || c.work < best->work || (c.work == best->work && c.excess < best->excess)))
      best = &c;
  return best;
}

// Of the candidates that reach the target, the cheapest few by work measured (while
// more than a quarter of the time is left, and at least the cheapest), the fastest.
Expected<const Candidate*> fastest(const std::vector<Candidate>& candidates, int64_t target,
                                   const LimitPlanOptions& options, const std::function<double()>& seconds_left,
                                   std::vector<std::pair<std::string, double>>* measured) {
  std::vector<const Candidate*> fitting;
  for (const Candidate& c : candidates)
    if (c.peak <= target) fitting.push_back(&c);
  std::stable_sort(fitting.begin(), fitting.end(),
                   [](const Candidate* a, const Candidate* b) { return a->work < b->work; });
  const Candidate* best = nullptr;
  double best_s = 0;
  measured->clear();
  for (const Candidate* c : fitting) {
    if (int(measured->size()) >= std::max(1, options.measure_candidates)) break;
    if (best && seconds_left() < options.time_limit_s / 4) break;
    TG_ASSIGN_OR_RETURN(double s, options.runtime(c->graph));
    std::string texts;
    for (const std::string& t : c->rewrites.texts) texts += (texts.empty() ? "" : "; ") + t;
    measured->emplace_back(texts, s);
    if (!best || s < best_s) {
      best = c;
      best_s = s;
      std::rotate(measured->begin(), measured->end() - 1, measured->end());  // the chosen one first
    }
  }
  return best;
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
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration<double>(options.time_limit_s * 0.6);
  auto seconds_left = [&] {
    return options.time_limit_s - std::chrono::duration<double>(Clock::now() - start).count();
  };
  LimitPlan result;
  result.graph = graph;
  TG_ASSIGN_OR_RETURN(result.original_work, graph_work(graph));
  result.work = result.original_work;
  GraphPlanOptions po;
  po.planner = "best";
  po.alignment = options.alignment;
  po.seed = options.seed;
  int64_t target = options.memory_limit;
  int64_t smallest = INT64_MAX;
  Rewrites state;
  auto plan_now = [&]() -> Expected<GraphPlan> {
    po.time_limit_s = std::max(0.2, std::min(seconds_left(), options.time_limit_s * 0.2));
    TG_ASSIGN_OR_RETURN(GraphPlan plan, plan_graph(result.graph, po));
    smallest = std::min(smallest, plan.arena);
    return plan;
  };
  for (int round = 0;; ++round) {
    const LivePeak now = live_peak(result.graph, options.alignment);
    const int64_t peak = now.bytes, excess = now.excess(target);
    const bool stop = round >= options.max_rewrites || Clock::now() > deadline;
    if (peak <= target || stop) {
      // Plan it; an arena over the limit although the peak fits asks for a lower peak.
      TG_ASSIGN_OR_RETURN(result.plan, plan_now());
      if (result.plan.arena <= options.memory_limit) {
        result.rewrites = state.texts;
        return result;
      }
      if (peak > target || stop) break;
      target -= std::max<int64_t>(options.alignment, result.plan.arena - options.memory_limit);
      continue;
    }
    // Splits first; recomputations when no split lowers the excess.
    std::vector<Candidate> splits, recomputes;
    for (NextRewrite& n : next_rewrites(graph, state, result.graph, options.alignment, options.max_region)) {
      if (Clock::now() > deadline) break;
      Expected<Graph> g = apply_rewrites(graph, n.next);
      if (!g.ok()) continue;
      const LivePeak after = live_peak(*g, options.alignment);
      // A lower peak counts even where the excess rises: the quick orders behind both
      // figures change with the graph, and the excess is summed along them.
      if (after.bytes > peak || (after.bytes == peak && after.excess(target) >= excess)) continue;
      Expected<int64_t> work = graph_work(*g);  // after the filter: it costs as much as the rest
      if (!work.ok()) continue;
      const bool split = n.next.recomputes.size() == state.recomputes.size();
      (split ? splits : recomputes)
          .push_back({std::move(n.next), std::move(*g), after.bytes, after.excess(target), *work});
    }
    std::vector<Candidate>& pool = splits.empty() ? recomputes : splits;
    const Candidate* chosen = pick(pool, target);
    if (chosen && chosen->peak <= target && options.runtime) {
      TG_ASSIGN_OR_RETURN(chosen, fastest(pool, target, options, seconds_left, &result.measured));
    }
    if (!chosen) {
      (void)plan_now();
      break;
    }
    state = chosen->rewrites;
    result.graph = chosen->graph;
    result.work = chosen->work;
  }
  return resource_exhausted(fmt::format("graph '{}' does not fit {} bytes: the smallest arena reached is {} bytes "
                                        "after {} rewrites (splitting operators and recomputing tensors)",
                                        graph.name, options.memory_limit, smallest == INT64_MAX ? 0 : smallest,
                                        state.texts.size()));
}

}  // namespace tensorgym
