// Operator splitting, as patch-based inference does (MCUNetV2, Lin et al. 2021): a
// chain of operators runs tile by tile along one axis (an image's rows, a matrix's
// rows), so only one tile of each intermediate lives at a time. Each tile slices
// the rows of the chain's input it needs (its receptive field, with the halo that
// convolutions and pools read), runs the chain on them with the padding only at the
// tensor's edges, and writes its rows of the chain's output into one accumulator
// (`pad` for the first tile, then `update_slice`, in place). Halo rows are computed
// by more than one tile: that is the runtime the memory costs.
//
// The rewrite is a graph of its own, with the same inputs, constants and outputs;
// planners plan it and memplan/exec/ runs it like any other graph.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memplan/graph.h"
#include "support/status.h"

namespace tensorgym {

// Operators first..last, contiguous in program order, that compute the last one's
// output rows from intervals of rows along `axis`: conv2d and pools (axis 2 of
// NCHW), elementwise operators (an operand of the same rows read by rows, a
// broadcast one or a constant whole), matmul (rows of its first operand), softmax
// and layernorm (not over the axis), concat (along another axis). Every other tensor the region produces is read
// only inside it, by rows; residual blocks and branches qualify. Tensors from
// outside are sliced to the rows each tile reads.
struct OpRegion {
  int first = 0, last = 0;
  size_t axis = 0;
  int64_t extent = 0;  // the last operator's output rows along `axis`

  std::string describe(const Graph& graph) const;  // "conv_3..relu_5 (3 ops) along axis 2"
};

// Every valid region that contains `op` (any op when `op` < 0), up to `max_length`
// operators long, with an intermediate or an operator's scratch to gain from.
std::vector<OpRegion> regions_through(const Graph& graph, int op, int max_length = 24);

// The region checked against the rules above: INVALID_ARGUMENT naming the first
// operator or tensor that breaks one.
Status check_region(const Graph& graph, const OpRegion& region);

// The graph with `region` run in `tiles` tiles (2 .. extent) of near-equal rows.
Expected<Graph> split_region(const Graph& graph, const OpRegion& region, int64_t tiles);

}  // namespace tensorgym
