#include "envs/schedule/rewards.h"

#include <fmt/format.h>

#include "codegen/backend/registry.h"
#include "codegen/measure/runner_settings.h"
#include "envs/env_context.h"
#include "envs/schedule/metrics.h"
#include "support/fnv.h"

namespace tensorgym {
namespace {

std::vector<RewardDef> make_rewards() {
  std::vector<RewardDef> r;
  auto reward = [](const std::string& name, bool deterministic, const std::string& description) {
    return Space::double_range(name)
        .set_deterministic(deterministic)
        .set_platform_dependent(!deterministic)
        .set_default(Event(-1.0))
        .set_description(description);
  };
  r.push_back({reward("est_cycles", true, "reduction of the estimated cycles, relative to the unscheduled program"),
               "est_cycles", false, false, -1.0});
  r.push_back({reward("est_cycles_norm_expert", true,
                      "reduction of the estimated cycles, relative to the gap to the expert schedule"),
               "est_cycles", false, true, -1.0});
  r.push_back({reward("est_gpu_time", true,
                      "ln of the speedup of the cuda target's modelled GPU time (an H100 SXM, docs/gpu.md) since the "
                      "previous step; the episode's sum is the log speedup over the unscheduled program run as one "
                      "GPU thread"),
               "est_gpu_time", false, false, -1.0, /*log_speedup=*/true});
  r.push_back({reward("runtime", false, "reduction of the measured runtime, relative to the unscheduled program"),
               "runtime", false, false, -1.0});
  r.push_back({reward("runtime_norm_expert", false,
                      "reduction of the measured runtime, relative to the gap to the expert schedule"),
               "runtime", false, true, -1.0});
  r.push_back({reward("gflops", false, "increase of GFLOP/s, relative to the unscheduled program"), "gflops", true,
               false, -1.0});
  r.push_back({reward("gflops_norm_expert", false, "increase of GFLOP/s, relative to the gap to the expert schedule"),
               "gflops", true, true, -1.0});
  return r;
}

std::string baseline_key(const std::string& which, const std::string& metric, const ScheduleEpisode& e,
                         const std::string& trace) {
  // The program's and the schedule's text too: baselines may outlive this process
  // (EnvContext::baseline_cache_path) and a file:// benchmark may change under its URI.
  std::string key = which + "|" + metric + "|" + e.benchmark.uri + "|" +
                    hex64(fnv1a64(trace, fnv1a64(e.benchmark.program_text)));
  if (metric != "est_cycles" && metric != "est_gpu_time") {
    // Measured metrics depend on the target, the machine and how they were measured.
    Expected<const Backend*> backend = find_backend(e.target);
    key += "|" + e.target + ":" + (backend.ok() ? (*backend)->target().fingerprint : std::string()) + "|" +
           runner_settings_key(e.runner_settings);
    key += fmt::format("|{}", e.context->threads);
  }
  return key;
}

Expected<double> metric_of_schedule(const std::string& metric, const ScheduleEpisode& e, const std::string& trace) {
  ScheduleEpisode tmp;
  tmp.context = e.context;
  tmp.benchmark = e.benchmark;
  tmp.target = e.target;
  tmp.target_kind = e.target_kind;
  TG_ASSIGN_OR_RETURN(Schedule s, Schedule::from_text(e.benchmark.program, trace));
  tmp.schedule = std::make_shared<const Schedule>(std::move(s));
  tmp.program_text = e.program_text;
  tmp.runner_settings = e.runner_settings;
  tmp.invalidate();
  return schedule_metric(metric, tmp);
}

Expected<double> cached_metric(const std::string& which, const std::string& metric, const ScheduleEpisode& e,
                               const std::string& trace) {
  std::string key = baseline_key(which, metric, e, trace);
  double v = 0;
  if (e.context->find_baseline(key, &v)) return v;
  TG_ASSIGN_OR_RETURN(v, metric_of_schedule(metric, e, trace));
  e.context->store_baseline(key, v);
  return v;
}

}  // namespace

const std::vector<RewardDef>& schedule_rewards() {
  // Never destroyed: threads of a server still running at exit may read it.
  static const auto* r = new std::vector<RewardDef>(make_rewards());
  return *r;
}

const RewardDef* find_schedule_reward(const std::string& name) {
  for (const RewardDef& r : schedule_rewards())
    if (r.space.name() == name) return &r;
  return nullptr;
}

Expected<double> schedule_metric(const std::string& metric, ScheduleEpisode& e) {
  if (metric == "est_cycles") {
    if (e.target != kDefaultTarget)
      return failed_precondition("est_cycles models the cpu; this episode's target is " + e.target +
                                 (e.target == "cuda" ? ": its model is est_gpu_time" : ""));
    TG_ASSIGN_OR_RETURN(std::shared_ptr<const LoopNest> nest, e.derived->nest());
    return estimated_cycles(*nest);
  }
  if (metric == "est_gpu_time") {
    TG_ASSIGN_OR_RETURN(const Backend* backend, find_backend(e.target));
    TG_ASSIGN_OR_RETURN(std::shared_ptr<const LoopNest> nest, e.derived->nest());
    TG_ASSIGN_OR_RETURN(RuntimeEstimate estimate, backend->estimate_runtime(*nest));
    return estimate.seconds;
  }
  TG_ASSIGN_OR_RETURN(const Backend* backend, find_backend(e.target));
  if (!backend->target().can_run)
    return failed_precondition("the " + e.target + " target cannot be measured here (" +
                               backend->target().run_unavailable + ")" +
                               (e.target == "cuda" ? std::string(": its modelled reward is est_gpu_time") : ""));
  TG_ASSIGN_OR_RETURN(MeasureResult r, e.derived->measurement());
  if (metric == "runtime") return r.runtime.median_s;
  if (metric == "gflops") return r.gflops;
  return invalid_argument("unknown metric " + metric);
}

Expected<double> initial_metric(const std::string& metric, const ScheduleEpisode& e) {
  // A GPU or an accelerator cannot run the unscheduled program: a measured reward there
  // starts from the target's default schedule (Backend::default_schedule: a GPU's
  // default binding, the accelerator's smallest tiling). The models value the
  // unscheduled program (est_gpu_time: one GPU thread).
  if (metric != "est_cycles" && metric != "est_gpu_time") {
    TG_ASSIGN_OR_RETURN(const Backend* backend, find_backend(e.target));
    TG_ASSIGN_OR_RETURN(std::string baseline, backend->default_schedule(e.benchmark.program));
    return cached_metric("initial", metric, e, baseline);
  }
  return cached_metric("initial", metric, e, "");
}

Expected<double> expert_metric(const std::string& metric, const ScheduleEpisode& e) {
  if (e.benchmark.expert_schedule.empty())
    return failed_precondition("benchmark " + e.benchmark.uri + " has no expert schedule to normalize against");
  return cached_metric("expert", metric, e, e.benchmark.expert_schedule);
}

}  // namespace tensorgym
