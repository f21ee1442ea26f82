// What the host does to run a nest lowered for cuda: the device buffers it allocates,
// and the kernels it launches, in order, with their arguments. Derived from the nest's
// host part (what lies outside every kernel) walked as the PTX emitter walks it
// (nvptx_emitter.cc), and checked against the kernels the emitter reported: the same
// kernels in the same order, with the same parameters. Pure: no driver, no GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/backend/backend.h"
#include "codegen/lower/loop_nest.h"
#include "support/status.h"

namespace tensorgym::cuda {

// A buffer in device memory.
struct PlanBuffer {
  std::string name;
  DataType dtype;
  int64_t elements = 0;
  int64_t bytes() const { return elements * dtype.bytes(); }
  // One of Executable::run's args (an input or an output, in args order), or a global
  // intermediate only the device holds (allocated by the host around the kernels).
  enum Role { kInput, kOutput, kGlobal } role = kGlobal;
};

// One launch of one kernel.
struct PlanLaunch {
  int kernel = 0;  // index into the kernels (DeviceKernel list, launch order)
  // The values of the host loops' variables around it, outermost first: the kernel's
  // i32 parameters after its buffers.
  std::vector<int32_t> loop_values;
};

struct LaunchPlan {
  // The nest's inputs, then its outputs (Executable::run's args, in order), then the
  // global intermediates in the order the host allocates them.
  std::vector<PlanBuffer> buffers;
  int num_args = 0;  // inputs + outputs: the first buffers
  // Per kernel, its buffer parameters as indices into `buffers`, in parameter order.
  std::vector<std::vector<int>> kernel_buffers;
  // Every launch of one run, in order (a host loop around a kernel: one per iteration).
  std::vector<PlanLaunch> launches;
};

// The most launches one run may make (host loops around kernels multiply them).
inline constexpr int64_t kMaxLaunchesPerRun = int64_t(1) << 20;

// The plan of `nest` (lowered for cuda) whose kernels the cuda backend compiled into
// `kernels`. INTERNAL when they disagree (a kernel, its order or its parameters);
// UNIMPLEMENTED when a host loop's bounds are not known before its launches;
// RESOURCE_EXHAUSTED past `max_launches`.
Expected<LaunchPlan> make_launch_plan(const LoopNest& nest, const std::vector<DeviceKernel>& kernels,
                                      int64_t max_launches = kMaxLaunchesPerRun);

// The plan as text, one line per buffer and per run of launches (tests, diagnostics):
//   buffer A f32[3072] input
//   launch tg_kernel_1 (A, B, C, C.k=0)
std::string describe(const LaunchPlan& plan, const std::vector<DeviceKernel>& kernels);

}  // namespace tensorgym::cuda
