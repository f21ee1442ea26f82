// Where a measured number came from, attached to every MeasureResult so results are
// only compared like with like: TensorGym and LLVM versions, the target (triple, CPU,
// features), threads, the resolved runner settings (seed included), the host name
// and the pid of the worker that produced it.
#pragma once

#include <cstdint>
#include <string>

#include "proto/tensorgym.pb.h"

namespace tensorgym {

// The machine's host name ("" when unknown).
std::string host_name();

// Provenance for a result of `settings` (resolved: threads is a count) produced by
// process `worker_pid`. The target comes from CpuTarget::host().
proto::Provenance make_provenance(const proto::RunnerSettings& settings, int64_t worker_pid);

}  // namespace tensorgym
