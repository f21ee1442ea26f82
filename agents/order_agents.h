// Baseline agents for memory-v0's operator-order decision: random search and an
// evolutionary search over operator orders, each order scored by the arena of the
// whole plan it leads to (every legal in-place reuse taken when asked, offsets by a
// named planner). An order is decoded from random keys, one per operator: the ready
// operator with the highest key goes next, so every genome is a legal order and
// crossover and mutation need no repair (Bean's random-key encoding).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memplan/graph.h"
#include "support/status.h"

namespace tensorgym {

struct OrderSearchOptions {
  std::string agent = "evolutionary";  // random | evolutionary
  int trials = 200;                    // orders scored, program order included
  uint64_t seed = 1;
  bool inplace = true;
  std::string placement = "best_fit_best";  // an offset planner (memplan/offset_planners.h)
  int64_t alignment = 64;
  int population = 16;  // evolutionary
};

struct OrderSearchResult {
  std::vector<int> order;  // the best order found
  int64_t arena = 0;       // its arena, verified
  int64_t program_order_arena = 0;
  int trials = 0;
};

// The arena of the plan an order leads to (verified).
Expected<int64_t> order_arena(const Graph& graph, const std::vector<int>& order, const OrderSearchOptions& options);

// INVALID_ARGUMENT for an unknown agent or placement, or trials < 1.
Expected<OrderSearchResult> search_order(const Graph& graph, const OrderSearchOptions& options);

}  // namespace tensorgym
