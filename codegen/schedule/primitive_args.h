// What the primitives share: resolving text arguments to handles (for binding, with
// messages that say what was wrong), reading handles back, and common checks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "codegen/schedule/primitive.h"
#include "codegen/schedule/schedule_state.h"
#include "support/status.h"

namespace tensorgym {

// A loop of a stage.
struct LoopRef {
  const StageSchedule* stage = nullptr;
  int loop = -1;
  const Loop& get() const { return stage->loops[size_t(loop)]; }
  std::string text() const { return stage->name() + "." + get().name; }
};

// The handles of a bound argument.
inline const StageSchedule& stage_of(const ScheduleState& state, const PrimitiveArg& a) { return state.stages()[size_t(a.stage)]; }
inline StageSchedule& stage_of(ScheduleState& state, const PrimitiveArg& a) { return state.stages()[size_t(a.stage)]; }
inline LoopRef loop_of(const ScheduleState& state, const PrimitiveArg& a) { return LoopRef{&stage_of(state, a), a.loop}; }
inline Loop& mutable_loop(ScheduleState& state, const PrimitiveArg& a) { return stage_of(state, a).loops[size_t(a.loop)]; }
// The name of a kTensor argument.
const std::string& tensor_name(const ScheduleState& state, const PrimitiveArg& a);
// The kTensor argument naming `tensor`, an input or a stage (value -1 when neither).
PrimitiveArg tensor_arg(const ScheduleState& state, std::string_view tensor);

// Text to handles. A stage of the schedule (not an input, which has no loops):
Expected<int> parse_stage(const ScheduleState& state, std::string_view arg);
// A loop `STAGE.loop`; with `must_be_leaf`, one that has not been split or fused away.
Expected<LoopRef> parse_loop(const ScheduleState& state, std::string_view arg, bool must_be_leaf = true);
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
// Marking a loop parallel / vectorized / unrolled: an error when it carries another
// annotation or a thread binding; set_loop_kind has no effect when it already is.
Status check_loop_kind(const LoopRef& ref, ForKind kind);
PrimitiveResult set_loop_kind(Loop& loop, ForKind kind);
bool annotated(const Loop& l);

// The comma-separated leaf loop names of a stage, for messages.
std::string leaf_names(const StageSchedule& stage);

}  // namespace tensorgym
