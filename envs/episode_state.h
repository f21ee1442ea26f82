// EpisodeState: everything needed to rebuild an episode (env, benchmark, actions) and
// to check it (the cumulative reward, deterministic reward values). Part of the Gym
// contract both sides stand on (envs/env.h); stored as JSON Lines by
// proto/episode_state_io.h, field names as in proto/tensorgym.proto.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace tensorgym {

struct EpisodeState {
  std::string env;
  std::string benchmark;
  std::string action_space;
  std::vector<std::string> actions;  // canonical text
  std::string reward_space;
  double reward = 0;    // cumulative
  double walltime = 0;  // seconds since reset
  std::map<std::string, double> deterministic_rewards;  // name -> cumulative
  std::string provenance_json;  // the measurement provenance, when a runtime was measured
  std::string target = "cpu";   // where its rewards were measured; replayed only there

  bool operator==(const EpisodeState&) const = default;
};

}  // namespace tensorgym
