// Operator orders. The baselines: program order, XLA's list, DFS and post-order
// memory schedulers, and XLA's default, the best of those three by peak memory. Our
// own: a beam search over orders minimizing the peak of live bytes (with in-place
// reuse taken wherever legal when `inplace` is on).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memplan/graph.h"
#include "support/status.h"

namespace tensorgym {

struct OrderOptions {
  bool inplace = false;  // score orders with every legal in-place choice taken
  int64_t alignment = 64;
  int beam_width = 64;       // search
  double time_limit_s = 5;   // search
  int64_t memory_limit = 0;  // search: > 0, states whose peak exceeds it are dropped
};

// program_order, list, dfs, postorder, best_of_list_dfs_postorder, search.
const std::vector<std::string>& order_names();

Expected<std::vector<int>> plan_order(const std::string& name, const Graph& graph, const OrderOptions& options = {});

// The peak of live bytes of an order (with all legal in-place choices when `inplace`).
int64_t order_peak(const Graph& graph, const std::vector<int>& order, bool inplace, int64_t alignment = 64);

}  // namespace tensorgym
