// Whole memory plans for model graphs: an order, in-place choices and offsets, from
// a named planner; the verifier of graph plans; and the planners' table for tools.
//
// Planner names (`memplan_planner_names()`): the offset planners of
// memplan/offset_planners.h applied to the graph's buffers for the given order and
// in-place setting, and `best`: our own, which (unless told otherwise) searches the
// order, takes every legal in-place reuse, and searches offsets to the lower bound.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memplan/graph.h"
#include "memplan/lifetimes.h"
#include "memplan/offset_planners.h"

namespace tensorgym {

struct GraphPlanOptions {
  std::string planner = "best_fit_best";
  std::string order = "program_order";  // an order of memplan/order.h
  bool inplace = false;
  // `best` only: search the order and take in-place reuse whatever `order` and
  // `inplace` say (the command line turns this off when they are given).
  bool best_chooses = true;
  double time_limit_s = 10;
  int64_t memory_limit = 0;  // > 0: a hard limit on the arena
  int64_t alignment = kDefaultAlignment;
  uint64_t seed = 1;
};

struct GraphPlan {
  GraphDecisions decisions;
  GraphLayout layout;
  Offsets offsets;
  int64_t arena = 0;
  int64_t lower_bound = 0;  // for this order and in-place choice: lb_live or a proof's
  std::string order_name;
  bool inplace = false;
  double seconds = 0;
};

// naive, greedy_by_size, first_fit, greedy_by_breadth, best_fit_spatial,
// best_fit_temporal, best_fit_best, usmp_greedy_by_size, usmp_greedy_by_conflicts,
// hill_climb, best, exact.
const std::vector<std::string>& memplan_planner_names();

// Plans the graph; the result is verified before it is returned (INTERNAL if a
// planner produced an invalid plan). RESOURCE_EXHAUSTED when a memory limit is set
// and the plan does not fit it: an infeasible plan is never returned as if it fit.
Expected<GraphPlan> plan_graph(const Graph& graph, const GraphPlanOptions& options);

// An offset-only instance planned by name (`best` is the search); verified, and
// RESOURCE_EXHAUSTED past a memory limit as above.
Expected<OffsetPlan> plan_instance(const Instance& instance, const std::string& planner,
                                   const GraphPlanOptions& options);

// Verifies a whole graph plan: the decisions (layout_graph's checks), then the
// offsets (verify_offsets). The arena size, or the first violation.
Expected<int64_t> verify_graph_plan(const Graph& graph, const GraphDecisions& decisions, const Offsets& offsets,
                                    int64_t alignment = kDefaultAlignment);

}  // namespace tensorgym
