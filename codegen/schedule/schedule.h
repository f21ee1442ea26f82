// A Schedule is a program plus the trace of primitives applied to it, and the state
// that trace builds. Applying a primitive is all-or-nothing.
#pragma once

#include <string_view>

#include "codegen/schedule/primitive.h"
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
  const Trace& trace() const { return trace_; }

  // Applies one primitive. On error the schedule is unchanged; a primitive with no
  // effect is not added to the trace.
  PrimitiveResult apply(const Primitive& primitive);
  // Applies every primitive of a trace text, or none of them.
  Status apply_text(std::string_view trace_text);

 private:
  ScheduleState state_;
  Trace trace_;
};

}  // namespace tensorgym
