// The Gym contract both sides stand on (Gymnasium / CompilerGym semantics): the Env
// interface, reset options, the step result and EpisodeState. An episode's state is
// exactly (benchmark, actions); observations and rewards are derived from it.
// schedule-v0 and memory-v0 implement it in process (envs/env_context.h makes them);
// the client library's RemoteEnv implements it over gRPC. Free of server internals.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "envs/episode_state.h"
#include "spaces/event.h"
#include "spaces/space.h"
#include "support/status.h"

namespace tensorgym {

struct ResetOptions {
  std::string action_space;  // empty: the environment's default
  int64_t max_episode_steps = 0;  // 0: no limit; past it steps report truncated
  // The backend the episode compiles for and measures on ("cpu", "cuda"; empty: the
  // environment's own, EpisodeState::target).
  std::string target;
};

struct StepResult {
  std::vector<Event> observations;  // one per requested space (its default on error)
  std::vector<double> rewards;      // one per requested reward space
  bool terminated = false;
  bool truncated = false;
  bool action_had_no_effect = false;
  Status error;  // what went wrong, if anything; the state is unchanged by a bad action
};

class Env {
 public:
  virtual ~Env() = default;

  virtual const std::string& name() const = 0;
  virtual const std::vector<Space>& action_spaces() const = 0;
  virtual const std::vector<Space>& observation_spaces() const = 0;
  virtual const std::vector<Space>& reward_spaces() const = 0;

  // Starts an episode on a benchmark URI and returns the requested observations.
  virtual Expected<std::vector<Event>> reset(const std::string& benchmark, const ResetOptions& options,
                                             const std::vector<std::string>& observations) = 0;
  // Applies actions in order (an action is an index into the action space or the
  // action's text form), then computes the requested observations and rewards. An
  // action that fails stops the sequence; earlier ones stay applied.
  virtual StepResult step(const std::vector<Event>& actions, const std::vector<std::string>& observations,
                          const std::vector<std::string>& rewards) = 0;
  // An independent copy of the episode (cheap: derived values are shared).
  virtual Expected<std::unique_ptr<Env>> fork() const = 0;
  virtual EpisodeState state() const = 0;
  // Session parameters, e.g. "runner.repeat" = "3" (INVALID_ARGUMENT when unknown).
  virtual Status set_parameter(const std::string& key, const std::string& value) = 0;
  virtual void close() = 0;
};

}  // namespace tensorgym
