// The reward spaces of schedule-v0. A reward is the change of a metric between the
// previous state it was computed at and the current one, scaled by the initial
// state's value (or by the gap between the initial state and the expert schedule for
// the `_norm_expert` variants), so the episode's cumulative reward is the fraction of
// the way travelled. Rewards on states whose metric cannot be computed are the
// reward's `reward_on_error`. See docs/schedule_env.md.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "envs/schedule/schedule_episode.h"
#include "spaces/space.h"

namespace tensorgym {

struct RewardDef {
  Space space;
  std::string metric;       // "est_cycles", "est_gpu_time", "runtime" or "gflops"
  bool higher_is_better = false;
  bool normalize_by_expert = false;
  double reward_on_error = -1.0;
  // The reward is ln(previous / current) instead: for metrics that span orders of
  // magnitude in one episode (a GPU schedule from one thread to thousands).
  bool log_speedup = false;
};

const std::vector<RewardDef>& schedule_rewards();
const RewardDef* find_schedule_reward(const std::string& name);

// The metric's value at the episode's current state.
Expected<double> schedule_metric(const std::string& metric, ScheduleEpisode& episode);
// The metric's value at the unscheduled program (a measured metric on a GPU target: at
// the default GPU schedule, which a GPU can run) and at the expert schedule (cached in
// the context per benchmark, metric, runner settings and machine).
Expected<double> initial_metric(const std::string& metric, const ScheduleEpisode& episode);
Expected<double> expert_metric(const std::string& metric, const ScheduleEpisode& episode);

}  // namespace tensorgym
