// The observation spaces of schedule-v0, registered by name with their metadata
// (deterministic, platform-dependent, default value) and how each is computed.
// Adding an observation is one entry in observations.cc. See docs/schedule_env.md.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "envs/schedule/schedule_episode.h"
#include "spaces/space.h"

namespace tensorgym {

struct ObservationDef {
  Space space;
  std::function<Expected<Event>(ScheduleEpisode&)> compute;
};

const std::vector<ObservationDef>& schedule_observations();
const ObservationDef* find_schedule_observation(const std::string& name);

}  // namespace tensorgym
