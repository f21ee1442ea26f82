// Executes a whole model graph on the host backend (codegen/backend/registry.h) with every tensor where a memory
// plan put it: one arena holds graph inputs, outputs, intermediates and each
// operator's scratch (its internal stages run as kernels of their own, so the plan's
// scratch offsets are exercised too). The same graph run with every tensor in a
// buffer of its own is the reference: a plan that lets two live tensors share bytes
// corrupts data, and the outputs differ.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "memplan/graph.h"
#include "memplan/lifetimes.h"
#include "support/status.h"

namespace tensorgym {

class Executable;  // codegen/backend/backend.h

// Compiled kernels by program text (operators of one shape compile once).
class KernelCache {
 public:
  Expected<std::shared_ptr<const Executable>> get(const std::string& program_text);
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const Executable>> kernels_;
};

struct GraphRun {
  std::vector<std::vector<float>> outputs;  // per graph output tensor, in tensor order
  std::vector<std::string> output_names;
  int kernels_run = 0;
  double seconds = 0;  // in the kernels, compilation and set-up excluded
};

// Runs the graph in `decisions.order`. With `offsets` (for layout_graph(graph,
// decisions, alignment)'s buffers): everything in one arena, filled with NaN first.
// Without: every tensor and every scratch stage in its own buffer. Inputs and
// weights are seeded random values, the same in both. Only f32 graphs run.
Expected<GraphRun> run_graph(const Graph& graph, const GraphDecisions& decisions, const Offsets* offsets,
                             int64_t alignment, KernelCache& cache, uint64_t seed = 1);

// The largest |a - b| over all outputs (infinity when shapes differ or a value is NaN
// in one only).
double max_output_difference(const GraphRun& a, const GraphRun& b);

}  // namespace tensorgym
