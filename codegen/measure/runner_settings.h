// RunnerSettings: the defaults, the caps, and the translation to TimingOptions.
//
// A zero field means "the default" (as on the wire, where proto3 cannot tell an unset
// number from zero):
//   number 1, repeat 5, min_repeat 3, target_cv 0.01, min_repeat_ms 100, threads = the
//   cores this process may run on, compile_timeout_s 60, run_timeout_s 60,
//   check_points 1024, rtol 1e-4, atol 1e-4; flush_cache off; seed 0 is a seed like any
//   other.
// With these a well-scheduled GEMM 1024^3 (20-40 ms a run on the reference machine)
// measures in well under a second: 1 warm-up/check run, 3-5 runs per repeat, 3 to 5
// repeats: sampling stops after 3 when they agree within 1% (coefficient of
// variation), so a steady kernel costs 3 samples and a noisy one 5 (min_repeat =
// repeat asks for a fixed count). Samples also stop once they have taken a quarter of
// the run deadline (at least one), so a kernel whose single run takes seconds is timed
// a few times, not five, and does not run into its deadline. See docs/measurement.md.
#pragma once

#include "codegen/measure/measurement.h"
#include "codegen/measure/timing.h"
#include "support/status.h"

namespace tensorgym {

inline constexpr int kDefaultRepeat = 5;
inline constexpr int kDefaultMinRepeat = 3;
inline constexpr double kDefaultTargetCv = 0.01;
inline constexpr double kDefaultMinRepeatMs = 100;
inline constexpr double kDefaultCompileTimeoutS = 60;
inline constexpr double kDefaultRunTimeoutS = 60;
inline constexpr int64_t kDefaultCheckPoints = 1024;
inline constexpr double kDefaultRtol = 1e-4;
inline constexpr double kDefaultAtol = 1e-4;

// Caps: past them a request is rejected (INVALID_ARGUMENT).
inline constexpr int kMaxRepeat = 10000;
inline constexpr int kMaxNumber = 1 << 30;
inline constexpr double kMaxMinRepeatMs = 60000;
inline constexpr int kMaxThreads = 1024;
inline constexpr double kMaxTimeoutS = 3600;
inline constexpr int64_t kMaxCheckPoints = int64_t(1) << 24;

// Cores this process may run on (its CPU affinity), at least 1.
int available_cores();

// The settings with every zero field replaced by its default and threads resolved to
// a count. INVALID_ARGUMENT for negative, non-finite or capped-out values.
Expected<RunnerSettings> resolve_runner_settings(const RunnerSettings& settings);

// The timing protocol options of resolved settings.
TimingOptions timing_options(const RunnerSettings& resolved);

// A canonical text of settings, for cache keys.
std::string runner_settings_key(const RunnerSettings& settings);

}  // namespace tensorgym
