// Validate: replays an EpisodeState in a fresh environment and checks it, as
// `tensorgym validate` does: every action applies, the compiled program is correct,
// deterministic rewards match exactly, a measured reward lies within the tolerance.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "envs/env.h"
#include "envs/episode_state.h"

namespace tensorgym::service {

struct ValidationOutcome {
  bool ok = false;
  std::string error;  // what failed
  std::map<std::string, double> replayed;  // reward name -> cumulative, as replayed
};

// Errors (not outcomes): INVALID_ARGUMENT for a state without env or benchmark,
// NOT_FOUND for an unknown environment or benchmark, CANCELLED when the call's
// measurement was cancelled.
Expected<ValidationOutcome> validate_state(const EpisodeState& state, double tolerance,
                                           std::shared_ptr<EnvContext> context);

}  // namespace tensorgym::service
