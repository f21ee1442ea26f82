#include "codegen/measure/runner.h"
#include "envs/env.h"

namespace tensorgym {

Runner& EnvContext::runner() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!runner_) {
    RunnerOptions options;
    options.num_workers = std::max(1, runner_workers);
    options.worker_binary = worker_binary;
    options.serialize_runs = serialize_runs;
    runner_ = std::make_shared<Runner>(options);
  }
  return *runner_;
}

bool EnvContext::find_baseline(const std::string& key, double* value) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = baselines_.find(key);
  if (it == baselines_.end()) return false;
  *value = it->second;
  return true;
}

void EnvContext::store_baseline(const std::string& key, double value) {
  std::lock_guard<std::mutex> lock(mu_);
  baselines_[key] = value;
}

EnvContext::~EnvContext() = default;

}  // namespace tensorgym
