// Rematerialization: instead of keeping a tensor alive until its last reader, its
// producer runs again right before a later reader, and that reader and the ones
// after it read the copy. The producer's own inputs then live longer instead: it
// pays where they are small or alive anyway, and the producer is cheap. Where they
// are neither (a randomly wired network's node outputs, each waiting for a node far
// ahead), a recomputation takes its cone: the producers of the copy's intermediate
// inputs run again too, `depth` levels up, as checkpointing does (Chen et al. 2016),
// so the ancestors die at their last earlier reader as well.
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
  int depth = 1;    // 1: the producer alone; d: and the cones of its inputs' copies, d - 1 levels up

  // "recompute relu_4 for add_9 and 1 more", "... with its inputs 2 levels up"
  std::string describe(const Graph& graph) const;
};

constexpr int kMaxRecomputeDepth = 8;

// Every recomputation of an intermediate in `tensors` (all intermediates when empty),
// with depths 1 to `max_depth` where a deeper cone recomputes more operators.
std::vector<Recompute> recompute_candidates(const Graph& graph, const std::vector<int>& tensors = {},
                                            int max_depth = 1);

// The graph with the copy's producer inserted right before the first reader it
// serves; with a depth over 1, each intermediate input of that copy that an earlier
// operator also reads is recomputed for it the same way, one level less deep.
// INVALID_ARGUMENT when `what` names no intermediate or no later reader, or a depth
// outside 1..kMaxRecomputeDepth.
Expected<Graph> rematerialize(const Graph& graph, const Recompute& what);

}  // namespace tensorgym
