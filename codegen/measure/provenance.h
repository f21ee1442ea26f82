// Where a measured number came from, attached to every MeasureResult so results are
// only compared like with like: TensorGym's version, the target (its name, and what it
// says of itself: code generator version, triple, device, features), threads, the
// resolved runner settings (seed included), the host name and the pid of the worker
// that produced it.
#pragma once

#include <cstdint>
#include <string>

#include "codegen/backend/backend.h"
#include "codegen/measure/measurement.h"

namespace tensorgym {

// The machine's host name ("" when unknown).
std::string host_name();

// Provenance for a result of `settings` (resolved: threads is a count) produced on
// `target` by process `worker_pid`.
Provenance make_provenance(const TargetInfo& target, const RunnerSettings& settings, int64_t worker_pid);
// The same for a target named by a request (empty: the default); a name no backend
// has gives a provenance that names it and says nothing more of it.
Provenance make_provenance(const std::string& target, const RunnerSettings& settings, int64_t worker_pid);

}  // namespace tensorgym
