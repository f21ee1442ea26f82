// Conversions between library values and wire messages that both sides of the
// service need (the server in service/, the client library here): episode states.
// Spaces and events convert through spaces/ (Space::to_proto, event_to_proto).
#pragma once

#include "envs/episode_state.h"
#include "proto/tensorgym.pb.h"

namespace tensorgym::wire {

void episode_state_to_proto(const EpisodeState& s, proto::EpisodeState* out);
EpisodeState episode_state_from_proto(const proto::EpisodeState& p);

}  // namespace tensorgym::wire
