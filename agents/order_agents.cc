#include "agents/order_agents.h"

#include <algorithm>
#include <numeric>
#include <queue>

#include "memplan/lifetimes.h"
#include "memplan/offset_planners.h"
#include "memplan/planner.h"
#include "support/random.h"

namespace tensorgym {
namespace {

using Keys = std::vector<double>;

// Kahn's algorithm, taking the ready operator with the highest key first.
std::vector<int> decode(const Graph& graph, const Keys& keys) {
  const size_t n = graph.ops.size();
  std::vector<int> missing(n, 0);
  for (size_t i = 0; i < n; ++i)
    for (int t : graph.ops[i].inputs)
      if (graph.tensors[size_t(t)].producer >= 0) ++missing[i];
  std::priority_queue<std::pair<double, int>> ready;
  for (size_t i = 0; i < n; ++i)
    if (missing[i] == 0) ready.push({keys[i], int(i)});
  std::vector<int> order;
  while (!ready.empty()) {
    const int op = ready.top().second;
    ready.pop();
    order.push_back(op);
    for (int t : graph.ops[size_t(op)].outputs)
      for (int c : graph.tensors[size_t(t)].consumers) {
        // A consumer reading this tensor twice counted it twice.
        for (int in : graph.ops[size_t(c)].inputs)
          if (in == t) --missing[size_t(c)];
        if (missing[size_t(c)] == 0) ready.push({keys[size_t(c)], c});
      }
  }
  return order;
}

// Keys that decode to program order: earlier operators rank higher.
Keys program_keys(size_t n) {
  Keys k(n);
  for (size_t i = 0; i < n; ++i) k[i] = double(n - i);
  return k;
}

}  // namespace

Expected<int64_t> order_arena(const Graph& graph, const std::vector<int>& order, const OrderSearchOptions& options) {
  GraphDecisions decisions;
  decisions.order = order;
  if (options.inplace) decisions.aliases = all_inplace(graph, order);
  TG_ASSIGN_OR_RETURN(GraphLayout layout, layout_graph(graph, decisions, options.alignment));
  GraphPlanOptions plan_options;
  plan_options.alignment = options.alignment;
  TG_ASSIGN_OR_RETURN(OffsetPlan plan, plan_instance(layout.instance, options.placement, plan_options));
  return verify_graph_plan(graph, decisions, plan.offsets, options.alignment);
}

Expected<OrderSearchResult> search_order(const Graph& graph, const OrderSearchOptions& options) {
  if (options.agent != "random" && options.agent != "evolutionary")
    return invalid_argument("unknown order agent '" + options.agent + "' (known: random, evolutionary)");
  if (options.trials < 1) return invalid_argument("trials must be at least 1");
  if (options.population < 2) return invalid_argument("population must be at least 2");
  const size_t n = graph.ops.size();
  Rng rng(options.seed);
  OrderSearchResult result;
  std::vector<std::pair<int64_t, Keys>> population;  // scored genomes
  auto score = [&](const Keys& keys) -> Expected<int64_t> {
    const std::vector<int> order = decode(graph, keys);
    TG_ASSIGN_OR_RETURN(int64_t arena, order_arena(graph, order, options));
    ++result.trials;
    if (result.order.empty() || arena < result.arena) {
      result.arena = arena;
      result.order = order;
    }
    return arena;
  };
  auto random_keys = [&] {
    Keys k(n);
    for (double& v : k) v = rng.uniform();
    return k;
  };
  // Program order first: the baseline every search starts from.
  TG_ASSIGN_OR_RETURN(result.program_order_arena, score(program_keys(n)));
  population.push_back({result.program_order_arena, program_keys(n)});
  while (result.trials < options.trials) {
    Keys child;
    if (options.agent == "random" || int(population.size()) < options.population) {
      child = random_keys();
    } else {
      // Tournament of two for each parent, uniform crossover, then a few keys redrawn.
      auto pick = [&]() -> const Keys& {
        const auto& a = population[size_t(rng.below(population.size()))];
        const auto& b = population[size_t(rng.below(population.size()))];
        return a.first <= b.first ? a.second : b.second;
      };
      const Keys& p = pick();
      const Keys& q = pick();
      child.resize(n);
      for (size_t i = 0; i < n; ++i) child[i] = rng.chance(0.5) ? p[i] : q[i];
      for (size_t i = 0; i < n; ++i)
        if (rng.chance(2.0 / double(std::max<size_t>(n, 1)))) child[i] = rng.uniform();
    }
    TG_ASSIGN_OR_RETURN(int64_t arena, score(child));
    if (options.agent == "evolutionary") {
      population.push_back({arena, std::move(child)});
      if (int(population.size()) > options.population) {
        // Drop the worst (the newest on ties keeps diversity moving).
        auto worst = std::max_element(population.begin(), population.end(),
                                      [](const auto& a, const auto& b) { return a.first < b.first; });
        population.erase(worst);
      }
    }
  }
  return result;
}

}  // namespace tensorgym
