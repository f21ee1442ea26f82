// Argument parsing shared by the primitives, with messages that say what was wrong.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "codegen/schedule/primitive.h"
#include "codegen/schedule/schedule_state.h"
#include "support/status.h"

namespace tensorgym {

// A loop named `STAGE.loop`.
struct LoopRef {
  StageSchedule* stage = nullptr;
  int loop = -1;
  const Loop& get() const { return stage->loops[size_t(loop)]; }
  std::string text() const { return stage->name() + "." + get().name; }
};

// A stage of the schedule (not an input, which has no loops).
Expected<StageSchedule*> parse_stage(ScheduleState& state, std::string_view arg);
// A loop of a stage; with `must_be_leaf`, one that has not been split or fused away.
Expected<LoopRef> parse_loop(ScheduleState& state, std::string_view arg, bool must_be_leaf = true);
// A leaf loop of `stage` named by `arg` alone (reorder's arguments).
Expected<int> parse_leaf_of(const StageSchedule& stage, std::string_view arg);
Expected<int64_t> parse_int(std::string_view arg, std::string_view what, int64_t min, int64_t max);
// A new loop name for `stage`: an identifier not yet used by its loops.
Status check_new_loop_name(const StageSchedule& stage, std::string_view name);
// A new tensor name: an identifier not used by any input or stage.
Status check_new_tensor_name(const ScheduleState& state, std::string_view name);
bool is_identifier(std::string_view s);

// FAILED_PRECONDITION when some stage is computed at loop `loop` of target's stage;
// the message begins "cannot <verb> <target>" (built only then: this runs on every step).
Status check_nothing_attached_at(const ScheduleState& state, const LoopRef& target, int loop, std::string_view verb);
// Marks a loop parallel / vectorized / unrolled. No effect when it already is; an
// error when it carries another annotation or a thread binding.
PrimitiveResult set_loop_kind(LoopRef ref, ForKind kind);

// The comma-separated leaf loop names of a stage, for messages.
std::string leaf_names(const StageSchedule& stage);

}  // namespace tensorgym
