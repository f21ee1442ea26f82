// The timing protocol of timing.h on a device's own clock, for an executable that times
// its kernels itself (Executable::has_device_clock; cuda: events around the launches,
// the buffers already on the device, no copies):
//
//   1. calibration: a first sample of one run after `warmup_runs` (at least one: each
//      call starts on fresh device buffers) says how long a run takes; `number` grows
//      so that a repeat lasts at least `min_repeat_ms`;
//   2. `repeat` samples of `number` back-to-back runs, each divided by `number`.
//
// `flush_cache` evicts the host's caches, not the device's: it is ignored here.
#pragma once

#include "codegen/backend/backend.h"
#include "codegen/measure/timing.h"
#include "support/status.h"

namespace tensorgym {

// The statistics of the samples; the executable's error (a device failure) as it is.
Expected<TimingStats> time_on_device(const Executable& executable, void* const* args, const TimingOptions& options);

}  // namespace tensorgym
