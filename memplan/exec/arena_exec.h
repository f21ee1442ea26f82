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
class GraphKernelCache {
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
};

// A graph ready to run: its memory allocated, weights and inputs filled, every kernel
// compiled. With `offsets` (for layout_graph(graph, decisions, alignment)'s buffers):
// everything in one arena, filled with NaN first. Without: every tensor and every
// scratch stage in its own buffer. Inputs and weights are seeded random values, the
// same in both. Only f32 graphs run (UNIMPLEMENTED otherwise).
class PreparedGraph {
 public:
  static Expected<std::unique_ptr<PreparedGraph>> prepare(const Graph& graph, const GraphDecisions& decisions,
                                                          const Offsets* offsets, int64_t alignment,
                                                          GraphKernelCache& cache, uint64_t seed = 1);
  ~PreparedGraph();

  // Writes the inputs into their buffers (later tensors may have reused those bytes),
  // then runs every kernel in the plan's order on `threads` threads.
  void run(int threads = 1);
  // The outputs of the last run.
  GraphRun result() const;
  int kernels() const { return int(launches_.size()); }

  // A run step by step, to compare two preparations of one graph as they go: write
  // the inputs, then run the operators of the order one at a time.
  void write_inputs();
  size_t steps() const { return steps_.size(); }
  void run_step(size_t step, int threads = 1);
  // The operator a step runs and the values of its first output, as they are now.
  int step_op(size_t step) const { return steps_[step].op; }
  std::vector<float> step_output(size_t step) const;

 private:
  struct Memory;
  struct Launch {
    std::shared_ptr<const Executable> kernel;
    std::vector<void*> args;
  };
  struct Step {
    int op = -1;
    size_t first_launch = 0, end_launch = 0;  // its kernels (none for a reshape that is a view)
    const float* output = nullptr;
    int64_t elements = 0;
  };
  PreparedGraph() = default;
  const Graph* graph_ = nullptr;
  std::unique_ptr<Memory> memory_;
  std::vector<Launch> launches_;
  std::vector<Step> steps_;
  std::vector<std::pair<float*, std::vector<float>>> inputs_;  // where each input goes, and its values
  std::vector<std::pair<int, const float*>> outputs_;          // output tensor, where it is
};

// Prepares and runs the graph once (see PreparedGraph).
Expected<GraphRun> run_graph(const Graph& graph, const GraphDecisions& decisions, const Offsets* offsets,
                             int64_t alignment, GraphKernelCache& cache, uint64_t seed = 1);

// The largest |a - b| over all outputs (infinity when shapes differ or a value is NaN
// in one only).
double max_output_difference(const GraphRun& a, const GraphRun& b);

}  // namespace tensorgym
