// schedule-v0: optimize one tensor program by applying schedule primitives.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "envs/env_context.h"
#include "envs/schedule/schedule_episode.h"

namespace tensorgym {

class ScheduleEnv : public Env {
 public:
  explicit ScheduleEnv(std::shared_ptr<EnvContext> context);

  const std::string& name() const override;
  const std::vector<Space>& action_spaces() const override;
  const std::vector<Space>& observation_spaces() const override;
  const std::vector<Space>& reward_spaces() const override;

  Expected<std::vector<Event>> reset(const std::string& benchmark, const ResetOptions& options,
                                     const std::vector<std::string>& observations) override;
  StepResult step(const std::vector<Event>& actions, const std::vector<std::string>& observations,
                  const std::vector<std::string>& rewards) override;
  Expected<std::unique_ptr<Env>> fork() const override;
  EpisodeState state() const override;
  Status set_parameter(const std::string& key, const std::string& value) override;
  void close() override;

  // The current schedule (for tools and tests).
  const Schedule& schedule() const { return *episode_.schedule; }

 private:
  // Applies one action; sets *changed when the state changed. On error nothing changed.
  Status apply_action(const Event& action, bool* changed);
  std::vector<Event> observe(const std::vector<std::string>& names, Status* error);
  Expected<std::vector<double>> rewards(const std::vector<std::string>& names);
  // Whether the episode's target runs only scheduled programs (a non-empty
  // Backend::default_schedule: cuda, fpga).
  static bool runs_only_whole_schedules(const ScheduleEpisode& e);
  bool started() const { return episode_.schedule != nullptr; }

  std::shared_ptr<EnvContext> context_;
  ScheduleEpisode episode_;
  ResetOptions options_;
  int64_t steps_ = 0;
  std::chrono::steady_clock::time_point start_;
  // Per reward: the metric value when that reward was last computed, and the sum.
  std::map<std::string, double> last_metric_;
  std::map<std::string, double> cumulative_;
  std::string last_reward_space_;
};

}  // namespace tensorgym
