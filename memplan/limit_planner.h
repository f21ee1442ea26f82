// Plans that fit a memory limit below what any order and placement of the graph
// can reach: the graph is rewritten, trading time for memory (the approach of
// "Deep Learning Inference with Limited Memory" and of patch-based inference), by
// operator splitting (memplan/op_split.h) and rematerialization
// (memplan/rematerialize.h), then planned by `best`.
//
// The search is greedy: while the peak of live bytes is over the limit, it takes
// the rewrite, among those through the operator at the peak that lower the peak or
// keep it and lower the excess, that leaves the least excess (live bytes over the
// limit, summed over the steps: a model's repeated layers peak alike, and one
// layer's split lowers the excess before the peak), and of those within 2% of it
// the one that adds the least arithmetic (op_work), then the least excess; once
// rewrites reach the limit, the cheapest that does, or, given a way to measure
// runtimes, the fastest of the cheapest few measured. Splits first, recomputations
// when no split helps.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "memplan/graph.h"
#include "memplan/planner.h"
#include "support/status.h"

namespace tensorgym {

struct LimitPlanOptions {
  int64_t memory_limit = 0;  // bytes, > 0
  int64_t alignment = kDefaultAlignment;
  double time_limit_s = 10;  // for the whole search and the final plan
  uint64_t seed = 1;
  int max_rewrites = 64;
  int max_region = 48;  // operators in one split region
  // When set: the seconds of one run of a rewritten graph (memplan/exec/graph_job.h
  // measures them). Of the rewrites that reach the limit in the last step, the
  // `measure_candidates` cheapest are measured while the time limit allows, and the
  // fastest is taken.
  std::function<Expected<double>(const Graph&)> runtime;
  int measure_candidates = 4;
};

struct LimitPlan {
  Graph graph;                        // the rewritten graph the plan is for
  GraphPlan plan;                     // verified; arena <= the limit
  std::vector<std::string> rewrites;  // in the order applied
  int64_t work = 0, original_work = 0;
  // The last step's candidates that were measured (none without `runtime`): each
  // one's rewrites ("; "-separated) and seconds, the chosen one first.
  std::vector<std::pair<std::string, double>> measured;
};

// The sum of op_work over the graph's operators.
Expected<int64_t> graph_work(const Graph& graph);

// RESOURCE_EXHAUSTED, with the smallest arena reached, when no sequence of rewrites
// fits the limit. A graph that fits as it is comes back unchanged.
Expected<LimitPlan> plan_under_limit(const Graph& graph, const LimitPlanOptions& options);

}  // namespace tensorgym
