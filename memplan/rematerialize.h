// Rematerialization: instead of keeping a tensor alive until its last reader, its
// producer runs again right before a later reader, and that reader and the ones
// after it read the copy. The producer's own inputs then live longer instead: it
// pays where they are small or alive anyway, and the producer is cheap.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memplan/graph.h"
#include "support/status.h"

namespace tensorgym {

struct Recompute {
  int tensor = -1;  // an intermediate with a producer of one output
  size_t from = 1;  // its readers from this one on (in program order; 1 .. readers - 1) read the copy

  std::string describe(const Graph& graph) const;  // "recompute relu_4 for add_9 and 1 more"
};

// Every recomputation of an intermediate in `tensors` (all intermediates when empty).
std::vector<Recompute> recompute_candidates(const Graph& graph, const std::vector<int>& tensors = {});

// The graph with the copy's producer inserted right before the first reader it
// serves. INVALID_ARGUMENT when `what` names no intermediate or no later reader.
Expected<Graph> rematerialize(const Graph& graph, const Recompute& what);

}  // namespace tensorgym
