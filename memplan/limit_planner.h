// Plans that fit a memory limit below what any order and placement of the graph
// can reach: the graph is rewritten, trading time for memory (the approach of
// "Deep Learning Inference with Limited Memory" and of patch-based inference), by
// operator splitting (memplan/op_split.h) and rematerialization
// (memplan/rematerialize.h), then planned by `best`.
//
// The search goes over states (sets of rewrites). From a state whose peak of live
// bytes is over the limit, it takes the rewrites through the operator at the peak
// that lower the peak, or keep it and lower the excess (live bytes over the limit,
// summed over the steps: a model's repeated layers peak alike, and one layer's split
// lowers the excess before the peak); splits first, recomputations when no split
// helps. The greedy rule follows one such rewrite a step: the least excess, and of
// those within 2% of it the one that adds the least arithmetic (op_work), then the
// least excess. It runs first; then, with the time left, a beam of `beam_width`
// states a step (the greedy choice and the others with the least excess), pruned at
// the arithmetic of the cheapest state found that fits. Where neither fits, both run
// again offering recomputations' cones (Recompute::depth up to `recompute_depth`)
// where no split or recomputation alone helps. Of all the states that fit, the
// cheapest, or, given a way to measure runtimes, the fastest of the cheapest few
// measured.
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
  // measures them). Of the states found that reach the limit, the
  // `measure_candidates` cheapest are measured once the cheapest one's arena fits, each
  // started only while a quarter of the time limit is left (none: the cheapest), and the
  // fastest is taken.
  std::function<Expected<double>(const Graph&)> runtime;
  int measure_candidates = 4;
  int beam_width = 4;  // 1: the greedy search alone
  // Levels of producers a recomputation may run again (Recompute::depth; 1: the
  // tensor's own producer alone).
  int recompute_depth = 4;
};

struct LimitPlan {
  Graph graph;                        // the rewritten graph the plan is for
  GraphPlan plan;                     // verified; arena <= the limit
  std::vector<std::string> rewrites;  // in the order applied
  int64_t work = 0, original_work = 0;
  // The states that fit and were measured (none without `runtime`): each one's
  // rewrites ("; "-separated) and seconds, the chosen one first.
  std::vector<std::pair<std::string, double>> measured;
};

// The sum of op_work over the graph's operators.
Expected<int64_t> graph_work(const Graph& graph);

// RESOURCE_EXHAUSTED, with the smallest arena reached, when no sequence of rewrites
// fits the limit. A graph that fits as it is comes back unchanged.
Expected<LimitPlan> plan_under_limit(const Graph& graph, const LimitPlanOptions& options);

}  // namespace tensorgym
