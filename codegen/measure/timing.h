// The timing protocol every measured number in TensorGym goes through, reusable
// in-process (benchmarks/ times OpenBLAS and oneDNN with exactly this function):
//
//   1. `warmup_runs` untimed runs (caches, page faults, lazy JIT work);
//   2. calibration: `number` (runs per repeat) grows until one repeat, `number`
//      back-to-back runs, lasts at least `min_repeat_ms`;
//   3. `repeat` timed samples of `number` runs each, the caches optionally flushed
//      (outside the timed region) before each one; fewer when
//      - `max_total_s` is set and the samples so far have lasted that long together
//        (at least one is taken): a kernel whose single run is long is timed a few
//        times, not `repeat` times;
//      - `min_repeat` and `target_cv` are set and the last `min_repeat` samples agree:
//        their coefficient of variation is at most `target_cv`. A steady kernel is
//        timed `min_repeat` times, a noisy one up to `repeat` times.
//
// A sample is a repeat's elapsed time divided by `number` (seconds per run). The
// statistics are over the samples. The clock is steady; a zero, negative or non-finite
// elapsed time is an error, never a result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "support/status.h"

namespace tensorgym {

struct TimingOptions {
  int warmup_runs = 1;
  int number = 1;              // initial runs per repeat (grows during calibration)
  int repeat = 5;              // timed samples
  double min_repeat_ms = 100;  // the shortest a repeat may take; <= 0: no growth
  bool flush_cache = false;    // evict the caches before every timed repeat
  // When > 0, the caller already knows roughly how long one run takes (e.g. it just
  // ran the function once to check its outputs); calibration starts from it.
  double expected_run_s = 0;
  int max_number = 1 << 30;  // cap on the grown `number`
  double max_total_s = 0;    // the samples' total time past which no more are taken; 0: none
  int min_repeat = 0;        // with target_cv: the fewest samples (capped at repeat); 0: always `repeat`
  double target_cv = 0;      // with min_repeat: stop once the samples' cv is at most this; 0: never
  // Seconds from an arbitrary origin; empty means std::chrono::steady_clock. Tests
  // inject a broken clock to check that bad timings are errors.
  std::function<double()> clock;
};

// Statistics of the per-run samples (seconds). cv is the sample standard deviation
// (n - 1 in the denominator) divided by the mean; 0 for a single sample.
struct TimingStats {
  double median_s = 0;
  double min_s = 0;
  double max_s = 0;
  double mean_s = 0;
  double cv = 0;
  std::vector<double> samples_s;
  int number = 0;  // runs per sample, as grown
  int repeat = 0;
};

// Runs `fn` by the protocol above. Errors: INVALID_ARGUMENT for bad options,
// INTERNAL when the clock reports a zero, negative or non-finite elapsed time.
// Exceptions thrown by `fn` propagate.
Expected<TimingStats> time_runs(const std::function<void()>& fn, const TimingOptions& options = {});

// The statistics of given per-run samples; INVALID_ARGUMENT when empty or when a
// sample is not a finite positive number.
Expected<TimingStats> summarize_samples(std::vector<double> samples_s, int number);

// Size in bytes of the largest cache of cpu0 listed in sysfs
// (/sys/devices/system/cpu/cpu0/cache/index*/size), or 0 when unavailable.
int64_t last_level_cache_bytes();

// Evicts the caches by writing a buffer larger than the last-level cache (1.25 times
// its size, at least 8 MiB, at most 1 GiB; 64 MiB when sysfs says nothing).
class CacheFlusher {
 public:
  explicit CacheFlusher(int64_t bytes = 0);  // 0: sized from sysfs as above
  ~CacheFlusher();
  CacheFlusher(const CacheFlusher&) = delete;
  CacheFlusher& operator=(const CacheFlusher&) = delete;

  void flush();
  int64_t bytes() const { return bytes_; }

 private:
  int64_t bytes_ = 0;
  unsigned char* buffer_ = nullptr;
  unsigned char pattern_ = 0;
};

}  // namespace tensorgym
