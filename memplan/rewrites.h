// A graph's rewrites for a memory limit as one state: splits of disjoint regions of
// the original graph (memplan/op_split.h), then recomputations on the split graph
// (memplan/rematerialize.h), in order. The state replays exactly from the original,
// and names the rewrites that can follow it: what the limit planner searches and
// memory-v0's `rewrite` action space offers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memplan/graph.h"
#include "memplan/op_split.h"
#include "memplan/rematerialize.h"
#include "support/status.h"

namespace tensorgym {

struct Split {
  OpRegion region;  // of the original graph
  int64_t tiles = 2;
};

struct Rewrites {
  std::vector<Split> splits;
  std::vector<Recompute> recomputes;  // each on the graph the ones before it left
  std::vector<std::string> texts;     // the state's rewrites: its splits, then its recomputations
};

// The original graph with the rewrites applied: splits from the last region back
// (earlier regions keep their operator indices), then the recomputations.
Expected<Graph> apply_rewrites(const Graph& original, const Rewrites& rewrites);

// The peak of live bytes of the better of program order and the quick orders, with
// every legal in-place reuse; the operator running at that peak and the tensors live
// there.
struct LivePeak {
  int64_t bytes = 0;
  std::vector<int> order;
  int op = -1;
  std::vector<int> live;
  std::vector<int64_t> profile;  // live bytes at each step of `order`

  // Bytes over `target`, summed over the steps: what a limit still asks to remove. It
  // falls when any one of several equal peaks (a model's repeated layers) falls.
  int64_t excess(int64_t target) const;
};
LivePeak live_peak(const Graph& graph, int64_t alignment);

// The original operator a rewritten one comes from (-1 when none): tile copies,
// slices and recomputations carry the name of the operator up to '@', accumulators
// the name of the tensor they fill.
int origin_operator(const Graph& original, const std::string& name);

struct NextRewrite {
  Rewrites next;
  std::string text;  // "split conv2d_0..add_15 (16 ops) along axis 2 in 4 tiles", "recompute relu_4 for add_9"
};

// The rewrites that may follow `current` (`graph` is its result), all through the
// peak: while there are no recomputations, every region of the original through
// the operator at the peak, up to `max_region` operators, in 2, 4, .. 64 tiles (no
// more than its rows or channels) and, under 64, one row or channel group a tile (a
// head of BERT's 12), in place of the splits it contains, shorter regions first;
// then the recomputations of the tensors live at the peak, with their cones up to
// `max_depth` levels. At most `limit`.
std::vector<NextRewrite> next_rewrites(const Graph& original, const Rewrites& current, const Graph& graph,
                                       int64_t alignment, int max_region = 48, size_t limit = 4096, int max_depth = 4);

}  // namespace tensorgym
