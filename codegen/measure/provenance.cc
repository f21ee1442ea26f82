#include "codegen/measure/provenance.h"

#include <unistd.h>

#include <climits>

#include "codegen/cpu/cpu_backend.h"

#ifndef TENSORGYM_VERSION
#define TENSORGYM_VERSION "unknown"
#endif

namespace tensorgym {

std::string host_name() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

proto::Provenance make_provenance(const proto::RunnerSettings& settings, int64_t worker_pid) {
  const CpuTarget& target = CpuTarget::host();
  proto::Provenance p;
  p.set_tensorgym_version(TENSORGYM_VERSION);
  p.set_llvm_version(target.llvm_version);
  p.set_target_triple(target.triple);
  p.set_cpu_name(target.cpu_name);
  p.set_cpu_features(target.features);
  p.set_threads(settings.threads());
  *p.mutable_settings() = settings;
  p.set_hostname(host_name());
  p.set_worker_pid(worker_pid);
  return p;
}

}  // namespace tensorgym
