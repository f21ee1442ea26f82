// Our exact offset planner. A depth-first search over canonical solutions in the
// manner of MiniMalloc (Moffitt, ASPLOS 2023): buffers are placed in non-decreasing
// offset order, each at the lowest offset its placed conflicts allow; a candidate
// that leaves room below it for another buffer is dominated and skipped, and so are
// the alternatives to a buffer that nothing still to place overlaps; a section of
// time is given up as soon as the buffers still to place there cannot fit between
// its floor and the capacity, or when a section without slack at some level cannot
// be filled at that level by buffers disjoint in time (levels_coverable); and the
// instance splits into independent sections of time wherever no buffer still to
// place crosses a boundary, each part searched in a preorder of its own (by the
// section totals of the buffers still to place, as MiniMalloc re-sorts its
// partitions). Around that decision procedure, a search over the
// capacity: first the lower bound, then bisection between what is proven infeasible
// or given up and the best plan found. A capacity the search exhausts is a proof:
// the lower bound rises above it, so the gap it reports is never below the true one.
#pragma once

#include <cstdint>

#include "memplan/instance.h"

namespace tensorgym {

struct OffsetSearchOptions {
  double time_limit_s = 10;
  int64_t memory_limit = 0;  // > 0: capacities above it are not tried
  // Node budget of the first attempt per capacity; doubled per round (the search is
  // deterministic for a given budget, the time limit only cuts it short).
  int64_t initial_nodes = 20000;
  // true: the total node budget scales with the time limit (about 50,000 nodes per
  // second of it), so a run repeats on any machine unless load cuts it short. false:
  // only the time limit stops the search (the `exact` planner).
  bool node_budget = true;
};

struct OffsetSearchResult {
  Offsets offsets;  // the best plan found (the initial one if nothing better)
  int64_t arena = 0;
  int64_t lower_bound = 0;  // max(peak live bytes, largest buffer), raised by proofs
  // arena / lower_bound - 1: 0 when proven optimal; never below the true gap.
  bool proven_optimal = false;
  int64_t nodes = 0;  // search nodes visited
};

// Improves on `initial` (a valid plan, e.g. a greedy one) within the time limit.
OffsetSearchResult search_offsets(const Instance& instance, const Offsets& initial,
                                  const OffsetSearchOptions& options = {});

enum class FitResult { kFound, kInfeasible, kGaveUp };
// The decision procedure alone: a plan whose arena is at most `capacity`, within
// `node_limit` nodes and the deadline (seconds from now).
FitResult fit_offsets(const Instance& instance, int64_t capacity, int64_t node_limit, double seconds, Offsets* offsets,
                      int64_t* nodes = nullptr);

}  // namespace tensorgym
