// Rejects what the target cannot run: thread-bound loops and memory scopes on the CPU;
// the accelerator's tensorize and dma_copy anywhere else.
#include <fmt/format.h>

#include "codegen/lower/lowering_context.h"
#include "codegen/schedule/loop_marks.h"

namespace tensorgym {

Status check_no_accelerator_marks(const ScheduleState& state, const std::string& target) {
  for (const StageSchedule& s : state.stages()) {
    if (s.attach == AttachKind::kInline) continue;
    for (int l : s.leaf) {
      const Loop& loop = s.loops[size_t(l)];
      if (is_tensorized(loop) || is_dma_copy(loop))
        return failed_precondition(fmt::format("loop {}.{} is {}, the accelerator's; the {} target cannot run it",
                                               s.name(), loop.name,
                                               is_tensorized(loop) ? "tensorized (gemm)" : "a DMA transfer (dma_copy)",
                                               target));
    }
  }
  return Status();
}

Status check_target_support(const ScheduleState& state, const LowerOptions& options) {
  if (options.allow_thread_binding && options.allow_accelerator_scopes) return Status();
  for (const StageSchedule& s : state.stages()) {
    if (s.attach == AttachKind::kInline) continue;
    const bool accelerator_scope = s.scope == MemoryScope::kInpBuffer || s.scope == MemoryScope::kWgtBuffer ||
                                   s.scope == MemoryScope::kAccBuffer;
    if (s.scope != MemoryScope::kAuto &&
        !(accelerator_scope ? options.allow_accelerator_scopes : options.allow_thread_binding))
      return failed_precondition(fmt::format("stage {} is placed in {} memory (set_scope); the CPU target has one "
                                             "memory: memory scopes are the GPU's and the accelerator's",
                                             s.name(), memory_scope_name(s.scope)));
    for (int l : s.leaf) {
      const Loop& loop = s.loops[size_t(l)];
      if (loop.thread_tag.empty() || options.allow_thread_binding) continue;
      if (loop.thread_tag == "vthread" && options.allow_accelerator_scopes) continue;
      return failed_precondition("loop " + s.name() + "." + loop.name + " is bound to " + loop.thread_tag +
                                 "; the CPU target does not support thread binding");
    }
  }
  return Status();
}

}  // namespace tensorgym
