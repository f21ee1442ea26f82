// Random legal schedules: proposes primitives with plausible arguments for the current
// state and keeps those that apply. Used by property tests, random agents and sweeps.
// Which primitives are proposed, and how often, is each primitive's registration.
#pragma once

#include <cstdint>

#include "codegen/schedule/schedule.h"
#include "support/random.h"

namespace tensorgym {

// A primitive with arguments drawn for `state` (it may still be rejected when
// applied). New loop and stage names are derived from `fresh_id`.
BoundPrimitive propose_random_primitive(const ScheduleState& state, Rng& rng, int fresh_id);

// Applies up to `steps` random primitives that succeed, trying at most
// `max_attempts` proposals. Returns how many applied.
int apply_random_primitives(Schedule& schedule, Rng& rng, int steps, int max_attempts = 64);

}  // namespace tensorgym
