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
#include <functional>
#include <string>
#include <vector>

#include "memplan/graph.h"
#include "support/status.h"

namespace tensorgym {

// Operators first..last, contiguous in program order. In tiles of rows, they
// compute the last one's output rows from intervals of rows along `axis`: conv2d and pools (axis 2 of
// NCHW), elementwise operators (an operand of the same rows read by rows, a
// broadcast one or a constant whole), matmul (rows of its first operand), softmax
// and layernorm (not over the axis), concat (along another axis). Every other tensor the region produces is read
// only inside it, by rows; residual blocks and branches qualify. Tensors from
// outside are sliced to the rows each tile reads.
//
// In channel tiles (`channels`), each tile computes a range of channels of every
// tensor the region produces, and nothing twice: the channels of a convolution
// (groups 1) or of a matmul by a 2-D weight reading a tensor from outside whole (its
// weight read through a window), then operators that keep channels apart
// (elementwise, depthwise convolutions, pools, softmax and layernorm over another
// axis, transposes, reshapes that group channels, batched matmuls over them), and
// last either one of those (its channels written into the output as rows are) or a
// convolution or matmul that sums over the channels: each tile adds its partial
// sums into the output. An inverted residual block then never holds its wide
// middle, a transformer its feed-forward layer, nor attention all its heads.
struct OpRegion {
  int first = 0, last = 0;
  size_t axis = 0;     // rows: the split axis; channels: the first operator's channel axis
  int64_t extent = 0;  // rows: the last operator's output rows along `axis`; channels: the channels
  bool channels = false;

  // "conv_3..relu_5 (3 ops) along axis 2", "conv_3..conv_7 (5 ops) by channels"
  std::string describe(const Graph& graph) const;
};

// Every valid region that contains `op` (any op when `op` < 0), up to `max_length`
// operators long, with an intermediate or an operator's scratch to gain from: in
// rows, then in channels.
std::vector<OpRegion> regions_through(const Graph& graph, int op, int max_length = 24);

// The region checked against the rules above: INVALID_ARGUMENT naming the first
// operator or tensor that breaks one.
Status check_region(const Graph& graph, const OpRegion& region);

// The graph with `region` run in `tiles` tiles (2 .. extent) of near-equal rows or channels.
Expected<Graph> split_region(const Graph& graph, const OpRegion& region, int64_t tiles);

// What both splitters share: `graph` with operators first..last replaced by what
// `emit` adds where the last one was. Every tensor but the region's intermediates
// keeps its place (`remap`: old index to new, -1 for those); operators outside are
// copied. The result is finalized, with its scratch.
Expected<Graph> replace_region(const Graph& graph, int first, int last,
                               const std::function<void(Graph& g, const std::vector<int>& remap)>& emit);

// The channel-tile forms of the three above (memplan/channel_split.cc).
std::vector<OpRegion> channel_regions_through(const Graph& graph, int op, int max_length);
Status check_channel_region(const Graph& graph, const OpRegion& region);
Expected<Graph> split_channels(const Graph& graph, const OpRegion& region, int64_t tiles);

}  // namespace tensorgym
