#include "codegen/schedule/naming.h"

namespace tensorgym {

std::string fresh_loop_name(const StageSchedule& stage, const std::string& base) {
  if (stage.find_loop(base) < 0) return base;
  for (int i = 2;; ++i) {
    std::string n = base + std::to_string(i);
    if (stage.find_loop(n) < 0) return n;
  }
}

std::string fresh_tensor_name(const ScheduleState& state, const std::string& base) {
  if (!state.has_tensor(base)) return base;
  for (int i = 2;; ++i) {
    std::string n = base + std::to_string(i);
    if (!state.has_tensor(n)) return n;
  }
}

}  // namespace tensorgym
