// A model graph and its memory plan on the wire, as a measurement worker receives it:
// the bytes of a proto GraphExecution (proto/tensorgym.proto) in MeasureRequest::graph.
// Protocol Buffers stay inside graph_wire.cc.
#pragma once

#include <cstdint>
#include <string>

#include "memplan/graph.h"
#include "memplan/instance.h"
#include "memplan/lifetimes.h"
#include "support/status.h"

namespace tensorgym {

struct GraphExecution {
  Graph graph;
  GraphDecisions decisions;
  Offsets offsets;  // per buffer of layout_graph(graph, decisions, alignment)
  int64_t alignment = kDefaultAlignment;
  uint64_t seed = 1;  // of the random inputs and weights (memplan/exec/arena_exec.h)
};

// Deterministic: equal executions give equal bytes (a cache key).
std::string serialize_graph_execution(const GraphExecution& execution);

// The execution, its graph finalized and validated. INVALID_ARGUMENT naming the first
// problem (bytes that do not parse, an index out of range, a negative dimension, a
// size that does not match shape and dtype); RESOURCE_EXHAUSTED past the graph caps.
// The plan itself is checked where it is laid out (layout_graph).
Expected<GraphExecution> parse_graph_execution(const std::string& bytes);

}  // namespace tensorgym
