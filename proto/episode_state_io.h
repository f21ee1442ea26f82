// Episode states as files: JSON Lines through the protobuf JSON mapping (field names
// as in proto/tensorgym.proto), the format of `tensorgym run --state-out`, `replay`
// and `validate`.
#pragma once

#include <string>
#include <vector>

#include "envs/episode_state.h"
#include "support/status.h"

namespace tensorgym {

// One JSON object on one line (no trailing newline).
std::string episode_state_to_json(const EpisodeState& s);
Expected<EpisodeState> episode_state_from_json(const std::string& line);

// Reads a JSON Lines file; errors name the file and line. A last line without its
// newline (a write cut short) is reported as DATA_LOSS.
Expected<std::vector<EpisodeState>> read_episode_states(const std::string& path);
// Appends one state line and flushes it to disk.
Status append_episode_state(const std::string& path, const EpisodeState& s);

}  // namespace tensorgym
