#include "benchmarks/baselines/side_by_side.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "codegen/analysis/op_count.h"
#include "codegen/backend/registry.h"
#include "codegen/lower/lower.h"
#include "codegen/measure/timing.h"
#include "codegen/schedule/schedule.h"

namespace tensorgym {

const HostBuffer* CompiledSchedule::output(const std::string& name) const {
  for (size_t i = 0; i < output_names.size(); ++i)
    if (output_names[i] == name) return &outputs[i];
  return nullptr;
}

Expected<CompiledSchedule> compile_schedule(const ProgramPtr& program, const std::string& trace, uint64_t input_seed) {
  CompiledSchedule c;
  c.program = program;
  Expected<Schedule> s = Schedule::from_text(program, trace);
  if (!s.ok()) return Status(s.status().code(), "schedule: " + s.status().message());
  const Backend& backend = host_backend();
  Expected<LoopNest> nest = lower(*s, backend.lowering());
  if (!nest.ok()) return Status(nest.status().code(), "lowering: " + nest.status().message());
  Expected<std::shared_ptr<const Executable>> kernel = backend.compile(*nest);
  if (!kernel.ok()) return Status(kernel.status().code(), "compiling: " + kernel.status().message());
  c.kernel = *kernel;
  c.compile_ms = c.kernel->compile_ms();
  c.inputs = make_random_inputs(*program, input_seed);
  c.outputs = make_output_buffers(*nest);
  for (const BufferArg& a : nest->outputs) c.output_names.push_back(a.name);
  for (HostBuffer& b : c.inputs) c.args.push_back(b.data());
  for (HostBuffer& b : c.outputs) c.args.push_back(b.data());
  Expected<std::shared_ptr<const PreparedConstants>> prepared = c.kernel->prepare(c.args.data(), 1);
  if (!prepared.ok()) return Status(prepared.status().code(), "constant work: " + prepared.status().message());
  c.prepared = std::move(*prepared);
  c.flops = count_ops(*program).flops;
  return c;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double geometric_mean(const std::vector<double>& v) {
  double log_sum = 0;
  int n = 0;
  for (double x : v) {
    if (!(x > 0) || !std::isfinite(x)) continue;
    log_sum += std::log(x);
    ++n;
  }
  return n ? std::exp(log_sum / n) : 0;
}

Expected<SideBySide> time_side_by_side(const std::vector<Contender>& contenders, const SideBySideOptions& options) {
  if (contenders.empty()) return invalid_argument("time_side_by_side: no contenders");
  if (options.rounds < 1) return invalid_argument("time_side_by_side: rounds must be at least 1");
  TimingOptions timing;
  timing.repeat = std::max(1, options.repeat);
  timing.min_repeat_ms = options.min_repeat_ms;
  const size_t n = contenders.size();
  std::vector<std::vector<double>> times(n), ratios(n);
  for (int r = 0; r < options.rounds; ++r) {
    std::vector<double> round(n);
    for (size_t i = 0; i < n; ++i) {
      Expected<TimingStats> t = time_runs(contenders[i].run, timing);
      if (!t.ok()) return Status(t.status().code(), contenders[i].name + ": " + t.status().message());
      round[i] = t->median_s;
      times[i].push_back(t->median_s);
    }
    for (size_t i = 0; i < n; ++i) ratios[i].push_back(round[i] / round[0]);
  }
  SideBySide out;
  for (size_t i = 0; i < n; ++i) {
    out.median_s.push_back(median_of(times[i]));
    out.speedup_of_first.push_back(median_of(ratios[i]));
  }
  return out;
}

double max_relative_error(const HostBuffer& a, const HostBuffer& b) {
  if (a.num_elements() != b.num_elements()) return std::numeric_limits<double>::infinity();
  const float* x = a.typed<float>();
  const float* y = b.typed<float>();
  double m = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    const double d = std::fabs(double(x[i]) - double(y[i])) / std::max(1.0, std::fabs(double(y[i])));
    if (std::isnan(d)) return std::numeric_limits<double>::quiet_NaN();
    m = std::max(m, d);
  }
  return m;
}

}  // namespace tensorgym
