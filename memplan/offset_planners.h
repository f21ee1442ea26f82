// Offset planners: given an Instance, an offset for every buffer. The standard ones
// are reimplemented from their published descriptions (TFLite's arena and GPU
// shared-object planners, XLA's global decreasing-size best-fit heap, TVM USMP's
// greedy and hill-climb algorithms); `search` and `exact` are our own
// (memplan/offset_search.h): the same search, `search` within a node budget that
// scales with the time limit (repeatable), `exact` until it proves the optimum or the
// time limit ends (then with a proven gap: OffsetPlan::lower_bound).
// See docs/memory_planning.md for what each does and how it compares.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memplan/instance.h"
#include "support/status.h"

namespace tensorgym {

struct OffsetPlannerOptions {
  double time_limit_s = 10;    // for the search-based planners
  uint64_t seed = 1;           // hill_climb
  int hill_climb_steps = 500;  // hill_climb
  int64_t memory_limit = 0;    // > 0: the arena must fit (search stops trying above it)
};

struct OffsetPlan {
  Offsets offsets;
  int64_t arena = 0;
  bool proven_optimal = false;  // the arena equals a lower bound
  int64_t lower_bound = 0;      // no plan is smaller: the live bound, or a proof's
};

// naive, greedy_by_size, first_fit, greedy_by_breadth, best_fit_spatial,
// best_fit_temporal, best_fit_best, usmp_greedy_by_size, usmp_greedy_by_conflicts,
// hill_climb, search, exact.
const std::vector<std::string>& offset_planner_names();

// Runs a planner by name; INVALID_ARGUMENT for an unknown name. Deterministic except
// `exact` cut short by its time limit: the same instance and options give the same
// offsets (`search` stops on node counts, and the time limit only cuts it short).
Expected<OffsetPlan> plan_offsets(const std::string& planner, const Instance& instance,
                                  const OffsetPlannerOptions& options = {});

// Building blocks, shared with the environment's placement actions.
enum class GapChoice { kBestFit, kFirstFit, kLowest, kTop };
// The offset a buffer gets among the placed ones (offsets[j] >= 0) that conflict with
// it: the smallest gap that fits (best fit), the lowest gap that fits (first fit),
// the lowest gap that fits or else the lowest place above its conflicts (kLowest is
// first fit; kTop: above every placed conflict, no gap filling).
int64_t choose_offset(const Instance& instance, const std::vector<std::vector<int>>& conflicts, const Offsets& offsets,
                      int buffer, GapChoice choice);
// Places buffers in `order` one by one with `choice`.
Offsets place_in_order(const Instance& instance, const std::vector<std::vector<int>>& conflicts,
                       const std::vector<int>& order, GapChoice choice);

}  // namespace tensorgym
