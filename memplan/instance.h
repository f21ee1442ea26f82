// The offset problem every memory planner solves: buffers with half-open lifetimes
// [lower, upper) and sizes in bytes, to be given offsets in one arena so that no two
// buffers whose lifetimes overlap share a byte. The common CSV format
// `id,lower,upper,size` (MiniMalloc's) reads into an Instance (datasets/lifetimes_csv.h);
// model graphs derive one from an operator order and in-place choices
// (memplan/lifetimes.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/status.h"

namespace tensorgym {

struct Buffer {
  std::string id;     // as in the input (a CSV id, or a tensor name)
  int64_t lower = 0;  // first time step it is live
  int64_t upper = 0;  // first time step it is no longer live (upper > lower)
  int64_t size = 0;   // bytes
};

struct Instance {
  std::vector<Buffer> buffers;
  int64_t alignment = 1;  // every offset must be a multiple of this
};

// Offsets by buffer index; -1 where a buffer is not placed.
using Offsets = std::vector<int64_t>;

// Caps on what an instance may hold (every size a request controls has a cap).
inline constexpr int64_t kMaxBuffers = 1 << 22;
inline constexpr int64_t kMaxBufferBytes = int64_t(1) << 50;

// Checks sizes (> 0 up to the cap; a size of 0 is allowed and never conflicts),
// lifetimes (lower < upper, both >= 0) and the alignment (a power of two).
Status validate_instance(const Instance& instance);

// Rounds `v` up to a multiple of `alignment` (>= 1).
inline int64_t align_up(int64_t v, int64_t alignment) { return (v + alignment - 1) / alignment * alignment; }

// The largest total of sizes live at any one time: no plan's arena is smaller.
int64_t peak_live_bytes(const Instance& instance);

// The live-bytes profile: live[k] is the total live over [times[k], times[k + 1]).
struct LiveProfile {
  std::vector<int64_t> times;
  std::vector<int64_t> live;
};
LiveProfile live_profile(const Instance& instance);

// For every buffer, the buffers whose lifetimes overlap its own (sorted, without
// itself); zero-size buffers have none. O(n log n + pairs).
std::vector<std::vector<int>> lifetime_conflicts(const Instance& instance);

// The end of the highest buffer: the arena size of a complete plan.
int64_t arena_size(const Instance& instance, const Offsets& offsets);

}  // namespace tensorgym
