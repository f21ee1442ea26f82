// A plan finder that sweeps time: at each moment some buffers start, it places them
// in the space the live buffers leave free, backtracking over the choices. Where a
// moment leaves no slack (the buffers starting then must fill the free space
// exactly), the lowest free byte must be covered by one of them, and the search
// branches over which: every exact tiling of the free space is reachable, and a wrong
// one shows when the buffers around it end, often many moments later. The search then
// jumps back to the placements that failure involves (conflict-directed
// backjumping), and remembers every arrangement of live buffers at a moment's start
// from which it found no plan. With slack, each buffer goes at the bottom or the top
// of a free gap (best fit first), which may miss plans. So it finds plans on tight
// instances that the offset-ordered search (offset_search.h) wanders on, but it
// proves nothing: it answers found or gave up.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "memplan/instance.h"

namespace tensorgym {

// Its depth-first search recurses once per buffer: larger instances are left to the
// offset-ordered search.
inline constexpr int64_t kMaxSweepBuffers = 1000;

// The fraction of the moments at which buffers start that leave no slack at
// `capacity` (the live bytes then equal it): where the sweep is at its strongest.
double tight_moment_fraction(const Instance& instance, int64_t capacity);

// What the sweep learned about one instance at one capacity: the arrangements of live
// buffers at the start of a moment from which no plan exists (a 64-bit hash each, up
// to about a million: tens of MB). Restarts that share it skip what earlier ones
// refuted.
class SweepMemo {
 public:
  SweepMemo();
  ~SweepMemo();

 private:
  struct Failed;
  std::unique_ptr<Failed> failed_;
  friend bool sweep_fit(const Instance&, int64_t, int64_t, std::chrono::steady_clock::time_point, uint64_t, Offsets*,
                        int64_t*, SweepMemo*);
};

// A plan with an arena of at most `capacity` into `offsets`, within `node_limit`
// placements tried and before `deadline`; false when it gave up (or the instance has
// more than kMaxSweepBuffers buffers). Seed 0 tries the starters that cover the lowest
// free byte largest first; another seed, in an order drawn from it (for restarts).
// `memo`, when given, carries what failed from one call to the next on the same
// instance (it forgets when the capacity changes).
bool sweep_fit(const Instance& instance, int64_t capacity, int64_t node_limit,
               std::chrono::steady_clock::time_point deadline, uint64_t seed, Offsets* offsets, int64_t* nodes,
               SweepMemo* memo = nullptr);

}  // namespace tensorgym
