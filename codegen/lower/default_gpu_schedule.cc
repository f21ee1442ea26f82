#include "codegen/lower/default_gpu_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

namespace tensorgym {

Status bind_gpu_stage_default(Schedule& s, const std::string& stage, int64_t threads_per_block) {
  // The spatial loops with more than one iteration, in order (they lead the leaf order).
  std::vector<std::string> spatial;
  int64_t extent = 1;
  const StageSchedule* st = s.state().find_stage(stage);
  if (!st) return not_found("no stage " + stage);
  for (int l : st->leaf) {
    const Loop& loop = st->loops[size_t(l)];
    if (!loop.is_reduce && loop.extent > 1) {
      spatial.push_back(loop.name);
      extent *= loop.extent;
    }
  }
  if (spatial.empty()) return Status();  // lowering says why it cannot run
  std::string fused = spatial[0];
  for (size_t i = 1; i < spatial.size(); ++i) {
    const std::string next = fused + "_" + spatial[i];
    TG_RETURN_IF_ERROR(s.apply_text(fmt::format("fuse({0}.{1}, {0}.{2}, {3})", stage, fused, spatial[i], next)));
    fused = next;
  }
  const int64_t threads = std::min(threads_per_block, extent);
  return s.apply_text(fmt::format("split({0}.{1}, {2}, {1}_b, {1}_t); bind({0}.{1}_b, blockIdx.x); "
                                  "bind({0}.{1}_t, threadIdx.x)",
                                  stage, fused, threads));
}

Expected<Schedule> default_gpu_schedule(const ProgramPtr& program, const LoweringTarget& target) {
  Schedule s(program);
  std::vector<std::string> stages;
  for (const StageSchedule& st : s.state().stages()) stages.push_back(st.name());
  for (const std::string& stage : stages) TG_RETURN_IF_ERROR(bind_gpu_stage_default(s, stage));
  Expected<LoopNest> lowered = lower(s, target);
  if (!lowered.ok())
    return failed_precondition("the default GPU schedule of this program does not lower for " + target.name + ": " +
                               lowered.status().message());
  return s;
}

}  // namespace tensorgym
