// Rejects what the target cannot run: thread-bound loops and memory scopes on the CPU.
#include <fmt/format.h>

#include "codegen/lower/lowering_context.h"

namespace tensorgym {

Status check_target_support(const ScheduleState& state, const LowerOptions& options) {
  if (options.allow_thread_binding) return Status();
  for (const StageSchedule& s : state.stages()) {
    if (s.attach == AttachKind::kInline) continue;
    if (s.scope != MemoryScope::kAuto)
      return failed_precondition(fmt::format("stage {} is placed in {} memory (set_scope); the CPU target has one "
                                             "memory: memory scopes are the GPU's",
                                             s.name(), memory_scope_name(s.scope)));
    for (int l : s.leaf) {
      const Loop& loop = s.loops[size_t(l)];
      if (!loop.thread_tag.empty())
        return failed_precondition("loop " + s.name() + "." + loop.name + " is bound to " + loop.thread_tag +
                                   "; the CPU target does not support thread binding");
    }
  }
  return Status();
}

}  // namespace tensorgym
