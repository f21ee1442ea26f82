// The schedule a GPU runs a program with when nobody scheduled it (TVM's
// DefaultGPUSchedule): each stage's spatial loops fused into one, split into blocks of
// 256 threads along blockIdx.x and threadIdx.x, its reductions inside each thread.
// Deterministic; the baseline of measured rewards on a GPU target, where the
// unscheduled program (one thread) cannot run.
#pragma once

#include "codegen/lower/lower.h"
#include "codegen/schedule/schedule.h"

namespace tensorgym {

inline constexpr int64_t kDefaultGpuThreads = 256;

// One stage of it: its spatial loops fused, split over blockIdx.x and threadIdx.x
// (`threads_per_block`, or the extent when smaller); nothing for a stage without one.
Status bind_gpu_stage_default(Schedule& s, const std::string& stage, int64_t threads_per_block = kDefaultGpuThreads);

// FAILED_PRECONDITION when it does not lower for `target` (a stage that reduces to one
// value has no spatial loop to spread over threads).
Expected<Schedule> default_gpu_schedule(const ProgramPtr& program, const LoweringTarget& target);

}  // namespace tensorgym
