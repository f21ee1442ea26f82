// What each graph operator computes, as tensor programs in the program language:
// the source of truth for an operator's scratch (its internal stages, e.g. a conv's
// padded input, softmax's row maxima) and for executing a graph on a backend
// (memplan/exec/). The operator types and their attributes are listed in
// docs/memory_planning.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memplan/graph.h"
#include "support/status.h"

namespace tensorgym {

// One stage of an operator's program: a single-stage program of its own (the inputs
// it reads declared, then the stage), so each stage can run as one kernel with its
// buffers wherever the memory plan put them.
struct OpStage {
  std::string name;  // "Y" for the operator's output, "T0", "T1", ... for scratch
  std::vector<int64_t> shape;
  std::string line;                // the stage in the program language
  std::vector<std::string> reads;  // the names it reads: "X0".. (operator inputs) or earlier stages
};

struct OpProgram {
  std::vector<std::string> input_names;  // "X0", "X1", ... for the operator's inputs, in order
  std::vector<OpStage> stages;           // the last one writes the operator's output

  // Stage `k` as a program of its own: its reads declared as inputs, then the stage.
  std::string stage_text(const Graph& graph, const GraphOp& op, size_t k) const;
};

// A window on an operator's input: the operator sees `size` entries of it along
// `axis`, from `start` (attribute "window": quadruples of input, axis, start, size).
// A split operator reads its tile of a weight, or of a tensor from outside the
// split, in place this way.
struct InputWindow {
  int64_t axis = -1;  // -1: the whole input
  int64_t start = 0, size = 0;
};
// One per input; INVALID_ARGUMENT naming the operator for a window that is not
// inside its input.
Expected<std::vector<InputWindow>> op_input_windows(const Graph& graph, const GraphOp& op);

// The program of an operator; UNIMPLEMENTED naming the type when there is none.
Expected<OpProgram> op_program(const Graph& graph, const GraphOp& op);

// Bytes of the operator's internal stages, each rounded up to `alignment`: its scratch.
int64_t op_scratch_bytes(const OpProgram& program, int64_t alignment = 64);
// Sets every operator's scratch_bytes from its program (a finalized graph).
Status fill_scratch(Graph& graph);
// Where stage `k` (not the last) lives inside the operator's scratch.
int64_t op_stage_offset(const OpProgram& program, size_t k, int64_t alignment = 64);

// The operator's arithmetic: the iteration spaces of its stages summed (a
// convolution's multiply-adds, a pool's window reads, one per element otherwise). A
// cost model for choosing among rewrites; runtimes are measured (memplan/exec/).
int64_t op_work(const OpProgram& program);

}  // namespace tensorgym
