#include "memplan/limit_planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "memplan/lifetimes.h"
#include "memplan/op_split.h"
#include "memplan/op_stages.h"
#include "memplan/order.h"
#include "memplan/rematerialize.h"

namespace tensorgym {
namespace {

using Clock = std::chrono::steady_clock;

// The order of least peak among the quick ones, with every legal in-place choice.
struct Peak {
  int64_t bytes = INT64_MAX;
  std::vector<int> order;
};

Peak quick_peak(const Graph& graph, int64_t alignment) {
  OrderOptions oo;
  oo.inplace = true;
  oo.alignment = alignment;
  Peak best;
  for (const char* name : {"program_order", "best_of_list_dfs_postorder"}) {
    Expected<std::vector<int>> order = plan_order(name, graph, oo);
    if (!order.ok()) continue;
    const int64_t p = order_peak(graph, *order, true, alignment);
    if (p < best.bytes) best = {p, std::move(*order)};
  }
  return best;
}

// The operator at the peak of `order`, and the tensors live there.
int peak_operator(const Graph& graph, const std::vector<int>& order, int64_t alignment, std::vector<int>* live) {
  GraphDecisions d{order, all_inplace(graph, order)};
  Expected<GraphLayout> layout = layout_graph(graph, d, alignment);
  if (!layout.ok()) return -1;
  const std::vector<Buffer>& buffers = layout->instance.buffers;
  std::vector<int64_t> bytes(order.size() + 1, 0);
  for (const Buffer& b : buffers)
    for (int64_t s = b.lower; s < b.upper && s < int64_t(bytes.size()); ++s) bytes[size_t(s)] += b.size;
  const size_t step = size_t(std::max_element(bytes.begin(), bytes.end()) - bytes.begin());
  for (size_t b = 0; b < buffers.size(); ++b)
    if (buffers[b].lower <= int64_t(step) && int64_t(step) < buffers[b].upper)
      for (int t : layout->tensors_of_buffer[b]) live->push_back(t);
  return order[std::min(step, order.size() - 1)];
}

// The original operator a rewritten one comes from: its name up to '@' (tiles,
// slices, copies) names the operator, or the tensor an accumulator fills.
int origin_of(const Graph& original, const std::string& name) {
  const std::string base = name.substr(0, name.find('@'));
  for (size_t o = 0; o < original.ops.size(); ++o)
    if (original.ops[o].name == base) return int(o);
  const int t = original.find_tensor(base);
  return t >= 0 ? original.tensors[size_t(t)].producer : -1;
}

struct Split {
  OpRegion region;
  int64_t tiles = 2;
};

// The splits, disjoint regions of the original graph, applied from the last region
// back (so earlier regions keep their operator indices).
Expected<Graph> apply_splits(const Graph& graph, std::vector<Split> splits) {
  std::sort(splits.begin(), splits.end(), [](const Split& a, const Split& b) { return a.region.first > b.region.first; });
  Graph g = graph;
  for (const Split& s : splits) {
    TG_ASSIGN_OR_RETURN(g, split_region(g, s.region, s.tiles));
  }
  return g;
}

struct Candidate {
  std::vector<Split> splits;
  Graph graph;
  std::string what;
  int64_t peak = 0, work = 0;
};

// Reaching the target: the cheapest that does; otherwise the lowest peak, and of
// those within 2% the cheapest.
const Candidate* pick(const std::vector<Candidate>& candidates, int64_t target) {
  const Candidate* best = nullptr;
  for (const Candidate& c : candidates)
    if (c.peak <= target && (!best || c.work < best->work)) best = &c;
  if (best) return best;
  int64_t lowest = INT64_MAX;
  for (const Candidate& c : candidates) lowest = std::min(lowest, c.peak);
  for (const Candidate& c : candidates)
    if (c.peak <= lowest + lowest / 50 && (!best || c.work < best->work)) best = &c;
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
  std::vector<Split> splits;           // on the original graph
  std::vector<std::string> recomputes;  // then on the split graph
  auto describe = [&] {
    std::vector<std::string> out;
    for (const Split& s : splits)
      out.push_back(fmt::format("split {} in {} tiles", s.region.describe(graph), s.tiles));
    out.insert(out.end(), recomputes.begin(), recomputes.end());
    return out;
  };
  for (int round = 0;; ++round) {
    const Peak peak = quick_peak(result.graph, options.alignment);
    const bool stop = round >= options.max_rewrites || Clock::now() > deadline;
    if (peak.bytes <= target || stop) {
      // Plan it; an arena over the limit although the peak fits asks for a lower peak.
      po.time_limit_s = std::max(0.2, std::min(seconds_left(), options.time_limit_s * 0.2));
      TG_ASSIGN_OR_RETURN(result.plan, plan_graph(result.graph, po));
      smallest = std::min(smallest, result.plan.arena);
      if (result.plan.arena <= options.memory_limit) {
        result.rewrites = describe();
        return result;
      }
      if (peak.bytes > target || stop) break;
      target -= std::max<int64_t>(options.alignment, result.plan.arena - options.memory_limit);
      continue;
    }
    std::vector<int> live;
    const int at = peak_operator(result.graph, peak.order, options.alignment, &live);
    std::vector<Candidate> candidates;
    auto consider = [&](std::vector<Split> s, Expected<Graph> g, std::string what) {
      if (!g.ok()) return;
      Expected<int64_t> work = graph_work(*g);
      if (!work.ok()) return;
      const int64_t p = quick_peak(*g, options.alignment).bytes;
      if (p < peak.bytes) candidates.push_back({std::move(s), std::move(*g), std::move(what), p, *work});
    };
    const int origin = at < 0 ? -1 : origin_of(graph, result.graph.ops[size_t(at)].name);
    if (recomputes.empty() && origin >= 0) {
      // Operator splitting, on the original graph: a region through the operator at
      // the peak, in place of the splits it contains; or more tiles for the split
      // already there.
      for (const OpRegion& region : regions_through(graph, origin, options.max_region)) {
        std::vector<Split> kept;
        bool straddles = false;
        for (const Split& s : splits) {
          const bool inside = s.region.first >= region.first && s.region.last <= region.last;
          const bool apart = s.region.last < region.first || s.region.first > region.last;
          straddles |= !inside && !apart;
          if (apart) kept.push_back(s);
        }
        if (straddles) continue;
        for (int64_t tiles = 2; tiles <= std::min<int64_t>(region.extent, 64) && Clock::now() < deadline; tiles *= 2) {
          std::vector<Split> next = kept;
          next.push_back({region, tiles});
          Expected<Graph> g = apply_splits(graph, next);
          consider(next, std::move(g), "");
        }
      }
    }
    if (candidates.empty()) {
      // Rematerialization, on the graph as split: tensors live at the peak.
      for (const Recompute& r : recompute_candidates(result.graph, live)) {
        if (Clock::now() > deadline) break;
        consider(splits, rematerialize(result.graph, r), r.describe(result.graph));
      }
    }
    const Candidate* chosen = pick(candidates, target);
    if (!chosen) {
      po.time_limit_s = std::max(0.2, std::min(seconds_left(), options.time_limit_s * 0.2));
      Expected<GraphPlan> plan = plan_graph(result.graph, po);
      if (plan.ok()) smallest = std::min(smallest, plan->arena);
      break;
    }
    if (chosen->what.empty()) {
      splits = chosen->splits;
    } else {
      recomputes.push_back(chosen->what);
    }
    result.graph = chosen->graph;
    result.work = chosen->work;
  }
  return resource_exhausted(fmt::format("graph '{}' does not fit {} bytes: the smallest arena reached is {} bytes "
                                        "after {} rewrites (splitting operators and recomputing tensors)",
                                        graph.name, options.memory_limit, smallest == INT64_MAX ? 0 : smallest,
                                        describe().size()));
}

}  // namespace tensorgym
