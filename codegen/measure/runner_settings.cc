#include "codegen/measure/runner_settings.h"

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "support/cpu_affinity.h"

namespace tensorgym {
namespace {

Status check_range(const char* name, double v, double max) {
  if (!std::isfinite(v) || v < 0 || v > max) {
    return invalid_argument(fmt::format("runner setting {} = {:g} is out of range [0, {:g}]", name, v, max));
  }
  return Status();
}

}  // namespace

int available_cores() {
  if (Expected<std::vector<int>> cpus = allowed_cpus(); cpus.ok() && !cpus->empty()) return int(cpus->size());
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? int(hw) : 1;
}

Expected<RunnerSettings> resolve_runner_settings(const RunnerSettings& settings) {
  TG_RETURN_IF_ERROR(check_range("number", settings.number, kMaxNumber));
  TG_RETURN_IF_ERROR(check_range("repeat", settings.repeat, kMaxRepeat));
  TG_RETURN_IF_ERROR(check_range("min_repeat", settings.min_repeat, kMaxRepeat));
  TG_RETURN_IF_ERROR(check_range("target_cv", settings.target_cv, 1));
  TG_RETURN_IF_ERROR(check_range("min_repeat_ms", settings.min_repeat_ms, kMaxMinRepeatMs));
  TG_RETURN_IF_ERROR(check_range("threads", settings.threads, kMaxThreads));
  TG_RETURN_IF_ERROR(check_range("compile_timeout_s", settings.compile_timeout_s, kMaxTimeoutS));
  TG_RETURN_IF_ERROR(check_range("run_timeout_s", settings.run_timeout_s, kMaxTimeoutS));
  TG_RETURN_IF_ERROR(check_range("check_points", double(settings.check_points), double(kMaxCheckPoints)));
  TG_RETURN_IF_ERROR(check_range("rtol", settings.rtol, 1));
  TG_RETURN_IF_ERROR(check_range("atol", settings.atol, 1e30));
  if (!settings.simulator.empty() && settings.simulator != "fsim" && settings.simulator != "rtl")
    return invalid_argument("runner setting simulator = '" + settings.simulator +
                            "' is not a simulator (fsim, rtl: the fpga target's)");

  RunnerSettings r = settings;
  if (r.number == 0) r.number = 1;
  if (r.repeat == 0) r.repeat = kDefaultRepeat;
  if (r.min_repeat == 0) r.min_repeat = kDefaultMinRepeat;
  if (r.target_cv == 0) r.target_cv = kDefaultTargetCv;
  if (r.min_repeat_ms == 0) r.min_repeat_ms = kDefaultMinRepeatMs;
  if (r.threads == 0) r.threads = available_cores();
  if (r.compile_timeout_s == 0) r.compile_timeout_s = kDefaultCompileTimeoutS;
  if (r.run_timeout_s == 0) r.run_timeout_s = kDefaultRunTimeoutS;
  if (r.check_points == 0) r.check_points = kDefaultCheckPoints;
  if (r.rtol == 0) r.rtol = kDefaultRtol;
  if (r.atol == 0) r.atol = kDefaultAtol;
  return r;
}

TimingOptions timing_options(const RunnerSettings& resolved) {
  TimingOptions t;
  t.warmup_runs = 1;
  t.number = resolved.number;
  t.repeat = resolved.repeat;
  t.min_repeat = resolved.min_repeat;
  t.target_cv = resolved.target_cv;
  t.min_repeat_ms = resolved.min_repeat_ms;
  t.flush_cache = resolved.flush_cache;
  t.max_number = kMaxNumber;
  // The check run and the samples share the run deadline: samples stop once they have
  // taken a quarter of it, so a long kernel is timed a few times instead of timing out.
  t.max_total_s = resolved.run_timeout_s / 4;
  return t;
}

std::string runner_settings_key(const RunnerSettings& s) {
  // Every field, exactly ({} prints the shortest text that reads back the same double).
  return fmt::format("number={} repeat={} min_repeat={} target_cv={} min_repeat_ms={} flush_cache={} threads={} "
                     "seed={} compile_timeout_s={} run_timeout_s={} check_points={} rtol={} atol={} simulator={}",
                     s.number, s.repeat, s.min_repeat, s.target_cv, s.min_repeat_ms, s.flush_cache, s.threads, s.seed,
                     s.compile_timeout_s, s.run_timeout_s, s.check_points, s.rtol, s.atol, s.simulator);
}

}  // namespace tensorgym
