// memory-v0: plan the memory of a model graph (or place an offset-only instance).
// The agent takes one kind of decision (the action space chosen at reset: `order`,
// `inplace` or `placement`); the others follow default heuristics set by session
// parameters. Rewarded by the reduction of the final arena size, normalized by the
// lower bound. See docs/memory_planning.md.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/measure/measurement.h"
#include "envs/env_context.h"
#include "envs/memory/memory_episode.h"

namespace tensorgym {

class MemoryEnv : public Env {
 public:
  explicit MemoryEnv(std::shared_ptr<EnvContext> context);

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
  // memory_limit (bytes, 0 for none), default_order, default_inplace (on|off),
  // default_placement, alignment. They apply from the next reset.
  Status set_parameter(const std::string& key, const std::string& value) override;
  void close() override;

  const MemoryEpisode* episode() const { return episode_ ? &*episode_ : nullptr; }

 private:
  std::vector<Event> observe(const std::vector<std::string>& names, Status* error) const;
  Status apply_action(const Event& action);
  // Seconds of one run of the whole graph in its planned arena, measured in a sandboxed
  // worker (memplan/exec/graph_job.h); FAILED_PRECONDITION when the measurement failed.
  Expected<double> graph_seconds(std::string execution_bytes);
  std::string execution_bytes(const Graph& graph, const GraphDecisions& decisions, const Offsets& offsets) const;
  // The runtime reward's baseline: the original graph with every decision the
  // episode's default and no memory limit (what an episode without rewrites that takes
  // every default plans, so that one earns exactly 0).
  Expected<double> unlimited_seconds();

  std::shared_ptr<EnvContext> context_;
  MemorySettings settings_;         // session parameters, for the next reset
  MemorySettings settings_active_;  // those of the current episode
  std::optional<MemoryEpisode> episode_;
  ResetOptions options_;
  int64_t steps_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::map<std::string, double> last_arena_;  // per reward: the arena (or work) it last saw
  std::map<std::string, double> cumulative_;
  std::string last_reward_space_;
  RunnerSettings runner_settings_;                 // runner.* parameters, at once
  // Measured seconds by the bytes of an execution (graph and plan), for these runner
  // settings: a plan seen again gets the same number. At most kCachedRuntimes.
  std::map<std::string, double> graph_seconds_;
  // The baseline's seconds by the original graph's bytes and the default settings, so
  // an episode's end does not plan the original again (a searched order takes seconds).
  std::map<std::string, double> baseline_seconds_;
  std::shared_ptr<const Graph> work_graph_;       // the graph the work reward last saw
};

}  // namespace tensorgym
