// EpisodeState: everything needed to rebuild an episode (env, benchmark, actions) and
// to check it (the cumulative reward, deterministic reward values). Stored as JSON
// Lines through the protobuf JSON mapping, field names as in proto/tensorgym.proto.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "support/status.h"

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

// One JSON object on one line (no trailing newline).
std::string episode_state_to_json(const EpisodeState& s);
Expected<EpisodeState> episode_state_from_json(const std::string& line);

// Reads a JSON Lines file; errors name the file and line. A last line without its
// newline (a write cut short) is reported as DATA_LOSS.
Expected<std::vector<EpisodeState>> read_episode_states(const std::string& path);
// Appends one state line and flushes it to disk.
Status append_episode_state(const std::string& path, const EpisodeState& s);

}  // namespace tensorgym
