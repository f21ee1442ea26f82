// A plan finder that sweeps time: at each moment some buffers start, it places them
// in the space the live buffers leave free, backtracking over the choices. Where a
// moment leaves no slack (the buffers starting then must fill the free space
// exactly), the lowest free byte must be covered by one of them, and the search
// branches over which: every exact tiling of the free space is reachable, and a wrong
// one shows as soon as the buffers around it end. With slack, each buffer goes at the
// bottom or the top of a free gap (best fit first), which may miss plans. So it finds
// plans on tight instances that the offset-ordered search (offset_search.h) wanders
// on, but it proves nothing: it answers found or gave up.
#pragma once

#include <chrono>
#include <cstdint>

#include "memplan/instance.h"

namespace tensorgym {

// Its depth-first search recurses once per buffer: larger instances are left to the
// offset-ordered search.
inline constexpr int64_t kMaxSweepBuffers = 1000;

// A plan with an arena of at most `capacity` into `offsets`, within `node_limit`
// placements tried and before `deadline`; false when it gave up (or the instance has
// more than kMaxSweepBuffers buffers). Seed 0 tries the starters that cover the lowest
// free byte largest first; another seed, in an order drawn from it (for restarts).
bool sweep_fit(const Instance& instance, int64_t capacity, int64_t node_limit,
               std::chrono::steady_clock::time_point deadline, uint64_t seed, Offsets* offsets, int64_t* nodes);

}  // namespace tensorgym
