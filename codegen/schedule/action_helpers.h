// What the primitives' action forms (flat space, cursor, random proposals) share.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/schedule/naming.h"
#include "codegen/schedule/primitive.h"

namespace tensorgym {

// Flat-space split factors: 2, 4, 8, 16, 32, 64, then three divisors of the extent.
inline constexpr int kSplitChoices = 9;
// The split factor of every choice for a loop of `extent` (0 where there is none): the
// powers of two below the extent, then its proper divisors at the 1/4, 1/2 and 3/4
// quantiles.
std::array<int64_t, kSplitChoices> split_factors(int64_t extent);

// Whether some stage is computed at loop `loop` of `stage`.
bool has_attached_at(const ScheduleState& state, const StageSchedule& stage, int loop);
// Whether leaf position p of `s` is inside (or is) a vectorized loop.
bool inside_vectorized(const StageSchedule& s, size_t p);

// The state's stage `stage`, or INVALID_ARGUMENT naming the action.
Expected<const StageSchedule*> action_stage(const ScheduleState& state, std::string_view action, int stage);
// Leaf position `pos` of `s`, or INVALID_ARGUMENT naming the action.
Expected<int> action_leaf(const StageSchedule& s, std::string_view action, int pos);

// A random leaf loop of `s` (its index in s.loops).
int random_leaf(const StageSchedule& s, Rng& rng);

// The action forms of the primitives that take one leaf loop (parallel, vectorize,
// unroll): the loop at flat slot `slot`, or INVALID_ARGUMENT naming `action`; the loop
// under the cursor; and a random proposal that favours the outermost loop (parallel)
// or the innermost one (vectorize, unroll), six times in ten.
Expected<PrimitiveArgs> leaf_loop_at_slot(const ScheduleState& state, std::string_view action, int stage, int slot);
Expected<PrimitiveArgs> leaf_loop_at_cursor(const ScheduleState& state, int stage, int pos, int);
enum class FavouredLoop { kOutermost, kInnermost };
PrimitiveArgs propose_leaf_loop(const ScheduleState& state, int stage, Rng& rng, FavouredLoop favoured);

}  // namespace tensorgym
