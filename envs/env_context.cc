#include "envs/env_context.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "codegen/lower/lower.h"
#include "codegen/measure/runner.h"

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

std::shared_ptr<const LoweredNest> EnvContext::initial_lowering(const ProgramPtr& program) {
  {
    std::lock_guard<std::mutex> lock(lowerings_mu_);
    auto it = initial_lowerings_.find(program.get());
    if (it != initial_lowerings_.end()) return it->second;
  }
  // Lowered outside the lock; two sessions starting together may both lower it.
  auto schedule = std::make_shared<const Schedule>(program);
  std::shared_ptr<const ScheduleState> state(schedule, &schedule->state());
  Expected<std::shared_ptr<const LoweredNest>> lowered = lower_reusing(std::move(state), nullptr);
  std::shared_ptr<const LoweredNest> result = lowered.ok() ? *lowered : nullptr;
  std::lock_guard<std::mutex> lock(lowerings_mu_);
  auto [it, added] = initial_lowerings_.emplace(program.get(), std::move(result));
  if (!added) return it->second;  // lowered meanwhile by another episode's start
  lowered_order_.push_back(program.get());
  if (lowered_order_.size() > kMaxInitialLowerings) {
    initial_lowerings_.erase(lowered_order_.front());
    lowered_order_.pop_front();
  }
  return it->second;
}

namespace {

// File lines: "<value>\t<key in hex>\n" (keys hold serialized settings: any bytes).
std::string to_hex(const std::string& bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

bool from_hex(std::string_view hex, std::string* out) {
  if (hex.size() % 2) return false;
  out->clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    int v = 0;
    for (char c : {hex[i], hex[i + 1]}) {
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) return false;
      v = v * 16 + d;
    }
    out->push_back(char(v));
  }
  return true;
}

}  // namespace

void EnvContext::read_baseline_file_locked() const {
  if (baseline_cache_path.empty()) return;
  std::ifstream in(baseline_cache_path, std::ios::binary);
  if (!in) return;
  in.seekg(0, std::ios::end);
  const int64_t size = int64_t(in.tellg());
  if (size <= baseline_file_bytes_) return;
  in.seekg(baseline_file_bytes_);
  std::string line, key;
  int64_t consumed = baseline_file_bytes_;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // a line still being written: read it next time
    consumed += int64_t(line.size()) + 1;
    const size_t tab = line.find('\t');
    if (tab == std::string::npos || !from_hex(std::string_view(line).substr(tab + 1), &key)) continue;
    char* end = nullptr;
    const double v = std::strtod(line.c_str(), &end);
    if (end != line.c_str() + tab || !std::isfinite(v)) continue;
    baselines_[key] = v;
  }
  baseline_file_bytes_ = consumed;
}

bool EnvContext::find_baseline(const std::string& key, double* value) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = baselines_.find(key);
  if (it == baselines_.end()) {
    read_baseline_file_locked();  // another process may have measured it
    it = baselines_.find(key);
    if (it == baselines_.end()) return false;
  }
  *value = it->second;
  return true;
}

void EnvContext::store_baseline(const std::string& key, double value) {
  std::lock_guard<std::mutex> lock(mu_);
  baselines_[key] = value;
  if (baseline_cache_path.empty() || !std::isfinite(value)) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(baseline_cache_path).parent_path(), ec);
  // One write of a whole line with O_APPEND: processes sharing the file do not
  // interleave their lines.
  const std::string line = fmt::format("{:.17g}\t{}\n", value, to_hex(key));
  int fd = ::open(baseline_cache_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  (void)!::write(fd, line.data(), line.size());
  ::close(fd);
}

std::string default_baseline_cache_path() {
  if (const char* dir = std::getenv("TENSORGYM_CACHE_DIR")) return *dir ? std::string(dir) + "/baselines" : "";
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/tensorgym/baselines";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/tensorgym/baselines";
  return "";
}

EnvContext::~EnvContext() = default;

}  // namespace tensorgym
