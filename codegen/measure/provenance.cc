#include "codegen/measure/provenance.h"

#include <unistd.h>

#include <climits>

#include "codegen/backend/registry.h"

#ifndef TENSORGYM_VERSION
#define TENSORGYM_VERSION "unknown"
#endif

namespace tensorgym {

std::string host_name() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

Provenance make_provenance(const TargetInfo& target, const RunnerSettings& settings, int64_t worker_pid) {
  Provenance p;
  p.tensorgym_version = TENSORGYM_VERSION;
  p.target = target.name;
  p.compiler_version = target.compiler_version;
  p.target_triple = target.triple;
  p.device = target.device;
  p.features = target.features;
  p.clock = target.simulated && !settings.simulator.empty() ? settings.simulator : target.clock;
  p.threads = settings.threads;
  p.settings = settings;
  p.hostname = host_name();
  p.worker_pid = worker_pid;
  return p;
}

Provenance make_provenance(const std::string& target, const RunnerSettings& settings, int64_t worker_pid) {
  Expected<const Backend*> backend = find_backend(target);
  if (backend.ok()) return make_provenance((*backend)->target(), settings, worker_pid);
  TargetInfo unknown;
  unknown.name = target;
  return make_provenance(unknown, settings, worker_pid);
}

}  // namespace tensorgym
