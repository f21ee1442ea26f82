// Deterministic names for loops and stages that actions create: the base name, or the
// base with the smallest number (from 2) that is still free.
#pragma once

#include <string>

#include "codegen/schedule/schedule_state.h"

namespace tensorgym {

std::string fresh_loop_name(const StageSchedule& stage, const std::string& base);
std::string fresh_tensor_name(const ScheduleState& state, const std::string& base);

}  // namespace tensorgym
