// The agents that step through schedule-v0's `primitives` action space with an Env
// (in-process, or the client library's over gRPC): random, greedy and beam.
#pragma once

#include <memory>

#include "agents/search.h"

namespace tensorgym {

// Episodes of up to `episode_length` random legal actions; `batch_size` per round.
std::unique_ptr<SearchAgent> make_random_agent();
// One-step lookahead: `branching` random legal actions from the current state, move to
// the best child when it improves; restart from the unscheduled program otherwise or
// at `episode_length`.
std::unique_ptr<SearchAgent> make_greedy_agent();
// Beam search: `beam_width` states, `branching` actions tried from each, depth
// `episode_length`, then restart.
std::unique_ptr<SearchAgent> make_beam_agent();

}  // namespace tensorgym
