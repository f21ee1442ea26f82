#include "memplan/offset_planners.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>

#include "memplan/offset_search.h"
#include "support/random.h"

namespace tensorgym {

int64_t choose_offset(const Instance& instance, const std::vector<std::vector<int>>& conflicts, const Offsets& offsets,
                      int buffer, GapChoice choice) {
  const int64_t size = instance.buffers[size_t(buffer)].size;
  if (size == 0) return 0;
  const int64_t a = instance.alignment;
  std::vector<std::pair<int64_t, int64_t>> placed;  // (offset, end)
  for (int j : conflicts[size_t(buffer)])
    if (offsets[size_t(j)] >= 0)
      placed.push_back({offsets[size_t(j)], offsets[size_t(j)] + instance.buffers[size_t(j)].size});
  std::sort(placed.begin(), placed.end());
  int64_t cur = 0;
  int64_t best = -1, best_gap = INT64_MAX;
  for (const auto& [off, end] : placed) {
    const int64_t start = align_up(cur, a);
    if (choice != GapChoice::kTop && off > start && off - start >= size) {
      const int64_t gap = off - start;
      if (choice == GapChoice::kFirstFit || choice == GapChoice::kLowest) return start;
      if (gap < best_gap) {
        best_gap = gap;
        best = start;
      }
    }
    cur = std::max(cur, end);
  }
  if (best >= 0) return best;
  return align_up(cur, a);
}

Offsets place_in_order(const Instance& instance, const std::vector<std::vector<int>>& conflicts,
                       const std::vector<int>& order, GapChoice choice) {
  Offsets offsets(instance.buffers.size(), -1);
  for (int b : order) offsets[size_t(b)] = choose_offset(instance, conflicts, offsets, b, choice);
  return offsets;
}

namespace {

using Conflicts = std::vector<std::vector<int>>;

std::vector<int> sorted_order(const Instance& inst, const std::function<bool(const Buffer&, const Buffer&)>& before) {
  std::vector<int> order(inst.buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return before(inst.buffers[size_t(a)], inst.buffers[size_t(b)]); });
  return order;
}

// TFLite's arena planner: largest first, earlier first use on ties, best fit.
std::vector<int> size_order(const Instance& inst) {
  return sorted_order(inst, [](const Buffer& a, const Buffer& b) {
    if (a.size != b.size) return a.size > b.size;
    return a.lower < b.lower;
  });
}

// XLA's spatial order (size, then lifetime length) and temporal order (length, then size).
std::vector<int> spatial_order(const Instance& inst) {
  return sorted_order(inst, [](const Buffer& a, const Buffer& b) {
    if (a.size != b.size) return a.size > b.size;
    return a.upper - a.lower > b.upper - b.lower;
  });
}
std::vector<int> temporal_order(const Instance& inst) {
  return sorted_order(inst, [](const Buffer& a, const Buffer& b) {
    if (a.upper - a.lower != b.upper - b.lower) return a.upper - a.lower > b.upper - b.lower;
    return a.size > b.size;
  });
}

// TFLite GPU "greedy by breadth": shared objects filled operator by operator, widest
// operator first; each tensor takes the free object closest to its size (grown if
// smaller), or a new one. Objects are laid end to end.
Offsets greedy_by_breadth(const Instance& inst) {
  const size_t n = inst.buffers.size();
  // Time points: every start; the buffers live at each, with the breadth.
  std::vector<int> by_lower(n);
  std::iota(by_lower.begin(), by_lower.end(), 0);
  std::stable_sort(by_lower.begin(), by_lower.end(),
                   [&](int a, int b) { return inst.buffers[size_t(a)].lower < inst.buffers[size_t(b)].lower; });
  struct Point {
    int64_t breadth = 0;
    std::vector<int> live;
  };
  std::vector<Point> points;
  std::multimap<int64_t, int> active;  // by upper
  for (size_t k = 0; k < n;) {
    const int64_t t = inst.buffers[size_t(by_lower[k])].lower;
    while (k < n && inst.buffers[size_t(by_lower[k])].lower == t) {
      active.emplace(inst.buffers[size_t(by_lower[k])].upper, by_lower[k]);
      ++k;
    }
    while (!active.empty() && active.begin()->first <= t) active.erase(active.begin());
    Point p;
    for (const auto& [u, b] : active) {
      p.live.push_back(b);
      p.breadth += inst.buffers[size_t(b)].size;
    }
    points.push_back(std::move(p));
  }
  std::stable_sort(points.begin(), points.end(), [](const Point& a, const Point& b) { return a.breadth > b.breadth; });
  struct Object {
    int64_t size = 0;
    std::map<int64_t, int64_t> used;  // lower -> upper, disjoint
    bool free_for(const Buffer& b) const {
      auto it = used.lower_bound(b.upper);  // first with lower >= b.upper
      if (it == used.begin()) return true;
      --it;
      return it->second <= b.lower;
    }
  };
  std::vector<Object> objects;
  std::vector<int> object_of(n, -1);
  for (Point& p : points) {
    std::stable_sort(p.live.begin(), p.live.end(),
                     [&](int a, int b) { return inst.buffers[size_t(a)].size > inst.buffers[size_t(b)].size; });
    for (int b : p.live) {
      if (object_of[size_t(b)] >= 0) continue;
      const Buffer& buf = inst.buffers[size_t(b)];
      int best = -1;
      int64_t best_diff = INT64_MAX;
      for (size_t o = 0; o < objects.size(); ++o) {
        const int64_t diff = std::abs(objects[o].size - buf.size);
        if (diff < best_diff && objects[o].free_for(buf)) {
          best = int(o);
          best_diff = diff;
        }
      }
      if (best < 0) {
        best = int(objects.size());
        objects.emplace_back();
      }
      Object& obj = objects[size_t(best)];
      obj.size = std::max(obj.size, buf.size);
      obj.used.emplace(buf.lower, buf.upper);
      object_of[size_t(b)] = best;
    }
  }
  std::vector<int64_t> base(objects.size(), 0);
  int64_t cur = 0;
  for (size_t o = 0; o < objects.size(); ++o) {
    base[o] = cur;
    cur = align_up(cur + objects[o].size, inst.alignment);
  }
  Offsets offsets(n, 0);
  for (size_t b = 0; b < n; ++b)
    if (object_of[b] >= 0) offsets[b] = base[size_t(object_of[b])];
  return offsets;
}

// TVM USMP hill climbing: first fit over an order, improved by swapping a buffer that
// reaches the top of the arena with a random other one; a swap stays when the arena
// does not grow.
Offsets hill_climb(const Instance& inst, const Conflicts& conflicts, const OffsetPlannerOptions& options) {
  std::vector<int> order = size_order(inst);
  Offsets best = place_in_order(inst, conflicts, order, GapChoice::kFirstFit);
  int64_t best_arena = arena_size(inst, best);
  if (order.size() < 2) return best;
  Rng rng(options.seed);
  for (int step = 0; step < options.hill_climb_steps; ++step) {
    std::vector<int> at_top;
    for (size_t k = 0; k < order.size(); ++k) {
      const int b = order[k];
      if (best[size_t(b)] + inst.buffers[size_t(b)].size == best_arena) at_top.push_back(int(k));
    }
    const size_t i = at_top.empty() ? size_t(rng.below(order.size())) : size_t(rng.pick(at_top));
    size_t j = size_t(rng.below(order.size() - 1));
    if (j >= i) ++j;
    std::swap(order[i], order[j]);
    Offsets trial = place_in_order(inst, conflicts, order, GapChoice::kFirstFit);
    const int64_t arena = arena_size(inst, trial);
    if (arena <= best_arena) {
      best_arena = arena;
      best = std::move(trial);
    } else {
      std::swap(order[i], order[j]);
    }
  }
  return best;
}

}  // namespace

const std::vector<std::string>& offset_planner_names() {
  static const std::vector<std::string> names = {"naive",
                                                 "greedy_by_size",
                                                 "first_fit",
                                                 "greedy_by_breadth",
                                                 "best_fit_spatial",
                                                 "best_fit_temporal",
                                                 "best_fit_best",
                                                 "usmp_greedy_by_size",
                                                 "usmp_greedy_by_conflicts",
                                                 "hill_climb",
                                                 "search",
                                                 "exact"};
  return names;
}

Expected<OffsetPlan> plan_offsets(const std::string& planner, const Instance& instance,
                                  const OffsetPlannerOptions& options) {
  TG_RETURN_IF_ERROR(validate_instance(instance));
  OffsetPlan plan;
  if (planner == "naive") {
    plan.offsets.resize(instance.buffers.size());
    int64_t cur = 0;
    for (size_t i = 0; i < instance.buffers.size(); ++i) {
      plan.offsets[i] = cur;
      cur = align_up(cur + instance.buffers[i].size, instance.alignment);
    }
  } else if (planner == "greedy_by_breadth") {
    plan.offsets = greedy_by_breadth(instance);
  } else {
    const Conflicts conflicts = lifetime_conflicts(instance);
    if (planner == "greedy_by_size") {
      plan.offsets = place_in_order(instance, conflicts, size_order(instance), GapChoice::kBestFit);
    } else if (planner == "first_fit") {
      plan.offsets = place_in_order(instance, conflicts, size_order(instance), GapChoice::kFirstFit);
    } else if (planner == "best_fit_spatial" || planner == "best_fit_temporal" || planner == "best_fit_best") {
      Offsets spatial, temporal;
      if (planner != "best_fit_temporal")
        spatial = place_in_order(instance, conflicts, spatial_order(instance), GapChoice::kBestFit);
      if (planner != "best_fit_spatial")
        temporal = place_in_order(instance, conflicts, temporal_order(instance), GapChoice::kBestFit);
      if (spatial.empty()) {
        plan.offsets = std::move(temporal);
      } else if (temporal.empty() || arena_size(instance, spatial) <= arena_size(instance, temporal)) {
        plan.offsets = std::move(spatial);
      } else {
        plan.offsets = std::move(temporal);
      }
    } else if (planner == "usmp_greedy_by_size" || planner == "usmp_greedy_by_conflicts") {
      std::vector<int> order(instance.buffers.size());
      std::iota(order.begin(), order.end(), 0);
      const bool by_conflicts = planner == "usmp_greedy_by_conflicts";
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        const int64_t sa = instance.buffers[size_t(a)].size, sb = instance.buffers[size_t(b)].size;
        const size_t ca = conflicts[size_t(a)].size(), cb = conflicts[size_t(b)].size();
        if (by_conflicts) return ca != cb ? ca > cb : sa > sb;
        return sa != sb ? sa > sb : ca > cb;
      });
      plan.offsets = place_in_order(instance, conflicts, order, GapChoice::kTop);
    } else if (planner == "hill_climb") {
      plan.offsets = hill_climb(instance, conflicts, options);
    } else if (planner == "search" || planner == "exact") {
      // Start from the better of the best-fit plans; search from there.
      Offsets start = place_in_order(instance, conflicts, size_order(instance), GapChoice::kBestFit);
      Offsets temporal = place_in_order(instance, conflicts, temporal_order(instance), GapChoice::kBestFit);
      if (arena_size(instance, temporal) < arena_size(instance, start)) start = std::move(temporal);
      OffsetSearchOptions so;
      so.time_limit_s = options.time_limit_s;
      so.memory_limit = options.memory_limit;
      so.node_budget = planner == "search";
      OffsetSearchResult r = search_offsets(instance, start, so);
      plan.offsets = std::move(r.offsets);
      plan.proven_optimal = r.proven_optimal;
      plan.lower_bound = r.lower_bound;
    } else {
      std::string known;
      for (const std::string& n : offset_planner_names()) known += (known.empty() ? "" : ", ") + n;
      return invalid_argument("unknown offset planner '" + planner + "' (known: " + known + ")");
    }
  }
  plan.arena = arena_size(instance, plan.offsets);
  int64_t largest = 0;
  for (const Buffer& b : instance.buffers) largest = std::max(largest, b.size);
  plan.lower_bound = std::max({plan.lower_bound, peak_live_bytes(instance), largest});
  plan.proven_optimal = plan.proven_optimal || plan.arena <= plan.lower_bound;
  return plan;
}

}  // namespace tensorgym
