// Schedule primitives. Each lives in its own file, checks its arguments and the
// state, and either applies or returns an error. The Schedule applies primitives on
// a copy of the state, so an error never leaves a half-applied change behind.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/schedule/schedule_state.h"
#include "support/status.h"

namespace tensorgym {

// Whether a valid primitive changed the state (reorder into the current order, or
// parallel on a loop that is already parallel, have no effect).
enum class ApplyEffect : uint8_t { kChanged, kNoEffect };
using PrimitiveResult = Expected<ApplyEffect>;
using PrimitiveArgs = std::vector<std::string>;
using PrimitiveFn = PrimitiveResult (*)(ScheduleState& state, const PrimitiveArgs& args);

struct PrimitiveInfo {
  std::string_view name;
  int min_args;
  int max_args;          // -1: any number
  std::string_view usage;  // "split(STAGE.loop, factor, outer, inner)"
  PrimitiveFn apply;
};

// Every primitive, in the order of primitive_table.cc.
std::span<const PrimitiveInfo> all_primitives();
const PrimitiveInfo* find_primitive(std::string_view name);

// Limits that keep generated code sane.
inline constexpr int64_t kMaxVectorLanes = 64;
inline constexpr int64_t kMaxUnrollExtent = 256;
inline constexpr int64_t kMaxLoopExtent = (int64_t(1) << 31) - 1;

PrimitiveResult apply_split(ScheduleState& state, const PrimitiveArgs& args);
PrimitiveResult apply_reorder(ScheduleState& state, const PrimitiveArgs& args);
PrimitiveResult apply_fuse(ScheduleState& state, const PrimitiveArgs& args);
PrimitiveResult apply_tile(ScheduleState& state, const PrimitiveArgs& args);
PrimitiveResult apply_vectorize(ScheduleState& state, const PrimitiveArgs& args);
PrimitiveResult apply_parallel(ScheduleState& state, const PrimitiveArgs& args);
PrimitiveResult apply_unroll(ScheduleState& state, const PrimitiveArgs& args);
PrimitiveResult apply_cache_read(ScheduleState& state, const PrimitiveArgs& args);
PrimitiveResult apply_cache_write(ScheduleState& state, const PrimitiveArgs& args);
PrimitiveResult apply_compute_at(ScheduleState& state, const PrimitiveArgs& args);
PrimitiveResult apply_compute_inline(ScheduleState& state, const PrimitiveArgs& args);
PrimitiveResult apply_compute_root(ScheduleState& state, const PrimitiveArgs& args);
PrimitiveResult apply_rfactor(ScheduleState& state, const PrimitiveArgs& args);
PrimitiveResult apply_storage_align(ScheduleState& state, const PrimitiveArgs& args);
PrimitiveResult apply_reorder_storage(ScheduleState& state, const PrimitiveArgs& args);
PrimitiveResult apply_pragma(ScheduleState& state, const PrimitiveArgs& args);
PrimitiveResult apply_bind(ScheduleState& state, const PrimitiveArgs& args);

// Checks the invariants every state keeps (attachments point at leaf loops of the one
// consumer, vectorized loops are innermost, ...). The Schedule runs it after each
// primitive and rejects the primitive when it fails.
Status validate_state(const ScheduleState& state);

}  // namespace tensorgym
