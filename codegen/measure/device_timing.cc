#include "codegen/measure/device_timing.h"

#include <algorithm>
#include <cmath>

namespace tensorgym {

Expected<TimingStats> time_on_device(const Executable& executable, void* const* args, const TimingOptions& options) {
  if (options.repeat < 1) return invalid_argument("time_on_device: repeat must be >= 1");
  if (options.max_number < 1) return invalid_argument("time_on_device: max_number must be >= 1");
  const int warmup_runs = std::max(1, options.warmup_runs);
  int number = std::clamp(options.number, 1, options.max_number);
  if (options.min_repeat_ms > 0) {
    TG_ASSIGN_OR_RETURN(std::vector<double> first, executable.time_on_device(args, warmup_runs, 1, 1));
    if (first.empty() || !std::isfinite(first[0]) || first[0] <= 0)
      return internal_error("time_on_device: the device clock gave no positive time for one run");
    const double wanted = std::ceil(options.min_repeat_ms / 1e3 / first[0]);
    number = int(std::clamp(wanted, double(number), double(options.max_number)));
  }
  TG_ASSIGN_OR_RETURN(std::vector<double> samples,
                      executable.time_on_device(args, warmup_runs, number, options.repeat));
  return summarize_samples(std::move(samples), number);
}

}  // namespace tensorgym
