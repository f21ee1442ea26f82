// What every GPU executable of the runner does around its launches: device memory that
// lives as long as one run, host <-> device copies, and the event timing of a launch
// sequence. Internal to codegen/cuda.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "codegen/cuda/cuda_driver.h"
#include "support/status.h"

namespace tensorgym::cuda {

// Device allocations freed together when it goes out of scope.
class DeviceAllocations {
 public:
  explicit DeviceAllocations(const Driver& driver) : driver_(driver) {}
  ~DeviceAllocations();
  DeviceAllocations(const DeviceAllocations&) = delete;
  DeviceAllocations& operator=(const DeviceAllocations&) = delete;

  // `bytes` (at least one) with `slack` zero-filled bytes on both sides; returns where
  // the data starts. `what` names the buffer in the error.
  Expected<CUdeviceptr> allocate(size_t bytes, size_t slack, const std::string& what);
  Status copy_in(CUdeviceptr dst, const void* src, size_t bytes) const;
  Status copy_out(void* dst, CUdeviceptr src, size_t bytes) const;

 private:
  const Driver& driver_;
  std::vector<CUdeviceptr> bases_;
};

// `warmup_runs` calls of `launch_once` (which enqueues one run on the default stream),
// then `repeat` samples: events recorded around `number` calls, the elapsed time divided
// by `number` (seconds per run). The first error, the call's, as it is.
Expected<std::vector<double>> time_with_events(const Driver& driver, const std::function<Status()>& launch_once,
                                               int warmup_runs, int number, int repeat);

}  // namespace tensorgym::cuda
