#include "memplan/rewrites.h"

#include <fmt/format.h>

#include <algorithm>

#include "memplan/lifetimes.h"
#include "memplan/order.h"

namespace tensorgym {

Expected<Graph> apply_rewrites(const Graph& original, const Rewrites& rewrites) {
  std::vector<Split> splits = rewrites.splits;
  std::sort(splits.begin(), splits.end(), [](const Split& a, const Split& b) { return a.region.first > b.region.first; });
  Graph g = original;
  for (const Split& s : splits) {
    TG_ASSIGN_OR_RETURN(g, split_region(g, s.region, s.tiles));
  }
  for (const Recompute& r : rewrites.recomputes) {
    TG_ASSIGN_OR_RETURN(g, rematerialize(g, r));
  }
  return g;
}

LivePeak live_peak(const Graph& graph, int64_t alignment) {
  OrderOptions oo;
  oo.inplace = true;
  oo.alignment = alignment;
  LivePeak best;
  best.bytes = INT64_MAX;
  for (const char* name : {"program_order", "best_of_list_dfs_postorder"}) {
    Expected<std::vector<int>> order = plan_order(name, graph, oo);
    if (!order.ok()) continue;
    const int64_t p = order_peak(graph, *order, true, alignment);
    if (p < best.bytes) {
      best.bytes = p;
      best.order = std::move(*order);
    }
  }
  if (best.order.empty()) return best;
  GraphDecisions d{best.order, all_inplace(graph, best.order)};
  Expected<GraphLayout> layout = layout_graph(graph, d, alignment);
  if (!layout.ok()) return best;
  const std::vector<Buffer>& buffers = layout->instance.buffers;
  std::vector<int64_t>& bytes = best.profile;
  bytes.assign(best.order.size(), 0);
  for (const Buffer& b : buffers)
    for (int64_t s = b.lower; s < b.upper && s < int64_t(bytes.size()); ++s) bytes[size_t(s)] += b.size;
  const size_t step = size_t(std::max_element(bytes.begin(), bytes.end()) - bytes.begin());
  best.op = best.order[step];
  for (size_t b = 0; b < buffers.size(); ++b)
    if (buffers[b].lower <= int64_t(step) && int64_t(step) < buffers[b].upper)
      for (int t : layout->tensors_of_buffer[b]) best.live.push_back(t);
  return best;
}

int64_t LivePeak::excess(int64_t target) const {
  int64_t sum = 0;
  for (int64_t b : profile) sum += std::max<int64_t>(0, b - target);
  return sum;
}

int origin_operator(const Graph& original, const std::string& name) {
  const std::string base = name.substr(0, name.find('@'));
  for (size_t o = 0; o < original.ops.size(); ++o)
    if (original.ops[o].name == base) return int(o);
  const int t = original.find_tensor(base);
  return t >= 0 ? original.tensors[size_t(t)].producer : -1;
}

std::vector<NextRewrite> next_rewrites(const Graph& original, const Rewrites& current, const Graph& graph,
                                       int64_t alignment, int max_region, size_t limit, int max_depth) {
  std::vector<NextRewrite> out;
  const LivePeak peak = live_peak(graph, alignment);
  if (peak.op < 0) return out;
  const int origin = origin_operator(original, graph.ops[size_t(peak.op)].name);
  if (current.recomputes.empty() && origin >= 0) {
    // Shorter regions first (the cheaper splits), then by their first operator.
    std::vector<OpRegion> regions = regions_through(original, origin, max_region);
    std::stable_sort(regions.begin(), regions.end(), [](const OpRegion& a, const OpRegion& b) {
      return a.last - a.first < b.last - b.first;
    });
    for (const OpRegion& region : regions) {
      Rewrites kept;
      bool straddles = false;
      for (const Split& s : current.splits) {
        const bool inside = s.region.first >= region.first && s.region.last <= region.last;
        const bool apart = s.region.last < region.first || s.region.first > region.last;
        straddles |= !inside && !apart;
        if (apart) {
          kept.splits.push_back(s);
          kept.texts.push_back(fmt::format("split {} in {} tiles", s.region.describe(original), s.tiles));
        }
      }
      if (straddles) continue;
      // Powers of two, and one row or channel group a tile where there are fewer than 64.
      std::vector<int64_t> counts;
      for (int64_t tiles = 2; tiles <= std::min<int64_t>(region.extent, 64); tiles *= 2) counts.push_back(tiles);
      if (region.extent <= 64 && counts.back() != region.extent) counts.push_back(region.extent);
      for (int64_t tiles : counts) {
        if (out.size() >= limit) break;
        NextRewrite n{kept, fmt::format("split {} in {} tiles", region.describe(original), tiles)};
        n.next.splits.push_back({region, tiles});
        n.next.texts.push_back(n.text);
        out.push_back(std::move(n));
      }
    }
  }
  for (const Recompute& r : recompute_candidates(graph, peak.live, max_depth)) {
    if (out.size() >= limit) break;
    NextRewrite n{current, r.describe(graph)};
    n.next.recomputes.push_back(r);
    n.next.texts.push_back(n.text);
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace tensorgym
