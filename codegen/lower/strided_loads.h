// Which vector loads of a constant stride the CPU backend emits as one wide contiguous
// load and a shuffle (every stride-th element) rather than a gather. Shared by the
// LLVM emitter and the cost model, so that the model prices what the emitter emits.
#pragma once

#include <cstdint>

namespace tensorgym {

// Strides up to this magnitude, spans of at most this many elements: wider ones gather
// (the shuffles of a wide span cost more than the lanes' loads).
inline constexpr int64_t kMaxLoadStride = 8;
inline constexpr int64_t kMaxStridedSpan = 256;

// Whether a load of `lanes` elements `stride` apart is a wide load and a shuffle
// (stride -1 included: a reversed contiguous load; stride 1 is a plain vector load).
inline bool strided_load_fits(int64_t stride, int64_t lanes) {
  const int64_t s = stride < 0 ? -stride : stride;
  return stride != 1 && s >= 1 && s <= kMaxLoadStride && s * lanes <= kMaxStridedSpan;
}

}  // namespace tensorgym
