// From a graph and the decisions of a memory plan (an operator order, the in-place
// and fusion choices) to the arena's buffers: one buffer per group of tensors that
// share memory, one per operator with scratch; lifetimes in operator steps. Also the
// lower bounds and the checks of the decisions' legality.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memplan/graph.h"
#include "memplan/instance.h"

namespace tensorgym {

inline constexpr int64_t kDefaultAlignment = 64;

// Operator `op` writes `output` (its outputs[0]) into the memory of `input`, which
// dies there. `fused`: `op` is an elementwise consumer fused into the producer of
// `input` (it then runs right after that producer, and `input` is never stored on
// its own).
struct Alias {
  int op = -1;
  int input = -1;
  int output = -1;
  bool fused = false;
  bool operator==(const Alias&) const = default;
};

struct GraphDecisions {
  std::vector<int> order;      // operator indices, each once, producers first
  std::vector<Alias> aliases;  // in-place and fusion choices
};

enum class BufferKind : uint8_t { kInput, kOutput, kIntermediate, kScratch };

struct GraphLayout {
  Instance instance;                                // sizes rounded up to the alignment
  std::vector<BufferKind> kind;                     // per buffer
  std::vector<std::vector<int>> tensors_of_buffer;  // per buffer (empty for scratch)
  std::vector<int> buffer_of_tensor;                // -1 for constants
  std::vector<int> scratch_of_op;                   // -1 when the operator has none
  std::vector<int> position;                        // operator -> step
  int64_t lb_live = 0;                              // peak of live bytes for this order and these choices
  int64_t lb_op = 0;                                // largest bytes any one operator touches (inputs, outputs, scratch)
};

// Checks the decisions (a topological order; each alias legal: the operator allows
// in-place on that input, the bytes match, the input is an intermediate that dies
// at the operator, each input taken over once; fusion right after the producer of a
// single-consumer input) and builds the buffers. INVALID_ARGUMENT naming the first
// illegal decision.
Expected<GraphLayout> layout_graph(const Graph& graph, const GraphDecisions& decisions,
                                   int64_t alignment = kDefaultAlignment);

// Whether operator `op`, at step `position` of `order`, may write its output over
// input position `k` (positions of the other consumers known from `position_of`,
// -1 for not scheduled yet). Shared by the planners and the environment.
bool inplace_legal(const Graph& graph, int op, int k, const std::vector<int>& position_of, int position);

// Every legal in-place choice, taken greedily along the order (the first legal input
// of each operator).
std::vector<Alias> all_inplace(const Graph& graph, const std::vector<int>& order);

// The bound no order or plan beats: the largest bytes any one operator touches with
// no in-place reuse... minus what in-place could save at that operator.
int64_t order_independent_bound(const Graph& graph, bool allow_inplace, int64_t alignment = kDefaultAlignment);

// Bytes per category (graph inputs, outputs, intermediates, scratch): the total of
// the buffers, and what is live at the peak.
struct ArenaBreakdown {
  int64_t total[4] = {0, 0, 0, 0};
  int64_t at_peak[4] = {0, 0, 0, 0};
  int count[4] = {0, 0, 0, 0};
};
ArenaBreakdown arena_breakdown(const GraphLayout& layout);

}  // namespace tensorgym
