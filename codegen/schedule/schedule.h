// A Schedule is a program plus the trace of primitives applied to it, and the state
// that trace builds. Applying a primitive is all-or-nothing.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "codegen/schedule/primitive.h"
#include "codegen/schedule/primitive_text.h"
#include "codegen/schedule/schedule_state.h"
#include "codegen/schedule/trace.h"

namespace tensorgym {

class Schedule {
 public:
  explicit Schedule(ProgramPtr program);

  // Parses and applies a whole trace; errors name the primitive and its line:column.
  static Expected<Schedule> from_text(ProgramPtr program, std::string_view trace_text);

  const Program& program() const { return state_.program(); }
  const ProgramPtr& program_ptr() const { return state_.program_ptr(); }
  const ScheduleState& state() const { return state_; }
  // The applied primitives, materialized on first use after a change (O(length));
  // copying a Schedule or applying a primitive never copies the trace.
  const Trace& trace() const;
  size_t trace_length() const { return last_ ? last_->length : 0; }
  // The last primitive of the trace (null when empty), in its canonical text.
  const Primitive* last_primitive() const { return last_ ? &last_->primitive : nullptr; }

  // Applies one primitive, given as text (bound to the state first) or bound to this
  // schedule's state (the action path: no text is parsed). On error the schedule is
  // unchanged; a primitive with no effect is not added to the trace.
  PrimitiveResult apply(const Primitive& primitive);
  PrimitiveResult apply(const BoundPrimitive& primitive);
  // Like apply(), but leaves this schedule as it is and, when the primitive changes
  // it, puts the schedule after it in *next: one copy of the state, where apply() on
  // a copy of the schedule makes two.
  PrimitiveResult apply_to_copy(const Primitive& primitive, std::optional<Schedule>* next) const;
  PrimitiveResult apply_to_copy(const BoundPrimitive& primitive, std::optional<Schedule>* next) const;
  // Applies every primitive of a trace text, or none of them.
  Status apply_text(std::string_view trace_text);

 private:
  // The trace as a persistent list: each node holds one primitive and shares its
  // predecessors with every copy of the schedule.
  struct TraceNode {
    Primitive primitive;
    std::shared_ptr<const TraceNode> prev;
    size_t length = 1;
    ~TraceNode();  // unlinks iteratively, so long traces do not recurse
  };

  Schedule(ScheduleState state, std::shared_ptr<const TraceNode> last)
      : state_(std::move(state)), last_(std::move(last)) {}
  // Checks and applies `bound` to a copy of state_; `text` is its text, for the trace
  // and for messages.
  PrimitiveResult apply_bound(const BoundPrimitive& bound, const Primitive& text, std::optional<Schedule>* next) const;
  void append_to_trace(const Primitive& primitive);

  ScheduleState state_;
  std::shared_ptr<const TraceNode> last_;
  mutable std::shared_ptr<const Trace> materialized_;  // the trace of last_, when built
};

}  // namespace tensorgym
