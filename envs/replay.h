// Rebuilding and checking episodes from their EpisodeState: what `tensorgym replay`,
// `tensorgym validate` and the service's Validate call share. The environment comes
// from a maker, so the same code checks states in-process or against a service.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "envs/env.h"
#include "envs/episode_state.h"

namespace tensorgym {

using EnvMaker = std::function<Expected<std::unique_ptr<Env>>(const std::string& env_name)>;

struct Replayed {
  std::unique_ptr<Env> env;                  // at the state's last action
  std::map<std::string, double> cumulative;  // reward name -> sum, as replayed
};

// Reset on the state's benchmark and action space, then every action in order,
// summing each deterministic reward the state recorded step by step, and its reward
// space when that is measured once at the end (a measured reward's sum is the change
// of its metric from the start to the end, however often it is asked for). Errors
// name the failing action ("action 3 (split(C.i, 4, io, ii)): ...").
Expected<Replayed> replay_episode(const EpisodeState& state, const EnvMaker& make);

struct ValidationOutcome {
  bool ok = false;
  std::string error;                       // what failed
  std::map<std::string, double> replayed;  // reward name -> cumulative, as replayed
};

// Replays and checks: every action applies, a compiled program is correct (for
// environments that compile), deterministic rewards match to the bit, a measured
// reward lies within `tolerance`. A failed check is an outcome; errors are
// INVALID_ARGUMENT for a state without env or benchmark, NOT_FOUND for an unknown
// environment or benchmark, INVALID_ARGUMENT for a target the environment does not
// have (a state replays on its own target: ResetOptions::target), CANCELLED when a
// measurement was cancelled.
Expected<ValidationOutcome> validate_episode(const EpisodeState& state, double tolerance, const EnvMaker& make);

}  // namespace tensorgym
