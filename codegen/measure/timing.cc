#include "codegen/measure/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "support/host_caches.h"

namespace tensorgym {
namespace {

double steady_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// Sample standard deviation over the mean; 0 for fewer than two samples.
double coefficient_of_variation(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  double mean = 0;
  for (double x : v) mean += x;
  mean /= double(v.size());
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / double(v.size() - 1)) / mean;
}


}  // namespace

Expected<TimingStats> summarize_samples(std::vector<double> samples_s, int number) {
  if (samples_s.empty()) return invalid_argument("no timing samples");
  for (double s : samples_s) {
    if (!std::isfinite(s) || s <= 0)
      return invalid_argument(fmt::format("timing sample {:g} s is not a positive finite time", s));
  }
  TimingStats st;
  st.number = number;
  st.repeat = int(samples_s.size());
  std::vector<double> sorted = samples_s;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  st.min_s = sorted.front();
  st.max_s = sorted.back();
  st.median_s = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  double sum = 0;
  for (double s : sorted) sum += s;
  st.mean_s = sum / double(n);
  st.cv = coefficient_of_variation(sorted);
  st.samples_s = std::move(samples_s);
  return st;
}

Expected<TimingStats> time_runs(const std::function<void()>& fn, const TimingOptions& options) {
  if (!fn) return invalid_argument("time_runs: no function to time");
  if (options.warmup_runs < 0) return invalid_argument("time_runs: warmup_runs must be >= 0");
  if (options.repeat < 1) return invalid_argument("time_runs: repeat must be >= 1");
  if (options.number < 0 || options.max_number < 1) return invalid_argument("time_runs: number must be >= 0");
  if (!std::isfinite(options.min_repeat_ms)) return invalid_argument("time_runs: min_repeat_ms must be finite");
  if (!std::isfinite(options.max_total_s) || options.max_total_s < 0)
    return invalid_argument("time_runs: max_total_s must be finite and >= 0");
  if (options.min_repeat < 0) return invalid_argument("time_runs: min_repeat must be >= 0");
  if (!std::isfinite(options.target_cv) || options.target_cv < 0)
    return invalid_argument("time_runs: target_cv must be finite and >= 0");
  const std::function<double()>& clock = options.clock ? options.clock : std::function<double()>(steady_seconds);

  std::unique_ptr<CacheFlusher> flusher;
  if (options.flush_cache) flusher = std::make_unique<CacheFlusher>();

  // One timed repeat of `n` back-to-back runs; the flush stays outside the clock.
  auto time_repeat = [&](int n) -> Expected<double> {
    if (flusher) flusher->flush();
    const double t0 = clock();
    for (int i = 0; i < n; ++i) fn();
    const double t1 = clock();
    const double elapsed = t1 - t0;
    if (!std::isfinite(elapsed) || elapsed <= 0) {
      return internal_error(fmt::format(
          "the clock reported an elapsed time of {:g} s for {} run(s); a timing must be a positive finite number", elapsed,
          n));
    }
    return elapsed;
  };

  double estimate_s = options.expected_run_s > 0 && std::isfinite(options.expected_run_s) ? options.expected_run_s : 0;
  for (int i = 0; i < options.warmup_runs; ++i) {
    const double t0 = clock();
    fn();
    const double t = clock() - t0;
    if (std::isfinite(t) && t > 0) estimate_s = t;  // the last (warmest) run is the best guess
  }

  const int max_number = options.max_number;
  int number = std::clamp(options.number, 1, max_number);
  const double min_repeat_s = options.min_repeat_ms / 1e3;
  std::vector<double> samples;
  samples.reserve(size_t(options.repeat));
  if (min_repeat_s > 0) {
    if (estimate_s > 0) {
      const double wanted = std::ceil(min_repeat_s / estimate_s);
      number = int(std::clamp(wanted, double(number), double(max_number)));
    }
    // Grow until a repeat is long enough; that repeat is the first sample.
    for (;;) {
      TG_ASSIGN_OR_RETURN(double elapsed, time_repeat(number));
      if (elapsed >= min_repeat_s || number >= max_number) {
        samples.push_back(elapsed / number);
        break;
      }
      // Aim a little past the target; grow by at least 1 and at most 1000x per step
      // so that one noisy short repeat cannot blow the count up.
      const double factor = std::clamp(1.25 * min_repeat_s / elapsed, 1.0, 1000.0);
      const double grown = std::max(double(number) + 1, std::ceil(double(number) * factor));
      number = int(std::min(grown, double(max_number)));
    }
  }
  double total_s = 0;
  for (double sample : samples) total_s += sample * number;
  const bool adaptive = options.min_repeat > 0 && options.target_cv > 0;
  const size_t fewest = size_t(std::min(options.min_repeat, options.repeat));
  while (int(samples.size()) < options.repeat) {
    if (options.max_total_s > 0 && !samples.empty() && total_s >= options.max_total_s) break;
    // The last `fewest` samples: a disturbed first one does not keep a kernel that has
    // settled sampling to the end.
    if (adaptive && samples.size() >= fewest &&
        coefficient_of_variation(std::vector<double>(samples.end() - long(fewest), samples.end())) <= options.target_cv)
      break;
    TG_ASSIGN_OR_RETURN(double elapsed, time_repeat(number));
    samples.push_back(elapsed / number);
    total_s += elapsed;
  }
  return summarize_samples(std::move(samples), number);
}

int64_t last_level_cache_bytes() {
  int64_t best = 0;
  for (const HostCache& c : host_data_caches()) best = std::max(best, c.bytes);
  return best;
}

CacheFlusher::CacheFlusher(int64_t bytes) {
  if (bytes <= 0) {
    const int64_t llc = last_level_cache_bytes();
    bytes = llc > 0 ? llc + llc / 4 : int64_t(64) << 20;
    bytes = std::clamp(bytes, int64_t(8) << 20, int64_t(1) << 30);
  }
  bytes_ = (bytes + 63) / 64 * 64;
  buffer_ = static_cast<unsigned char*>(std::aligned_alloc(64, size_t(bytes_)));
  if (!buffer_) bytes_ = 0;
}

CacheFlusher::~CacheFlusher() { std::free(buffer_); }

void CacheFlusher::flush() {
  if (!buffer_) return;
  // A different byte each time so no write is redundant; the buffer escapes through
  // the member, so the stores cannot be elided.
  std::memset(buffer_, ++pattern_, size_t(bytes_));
  __asm__ __volatile__("" : : "r"(buffer_) : "memory");
}

}  // namespace tensorgym
