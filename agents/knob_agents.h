// The agents of a target whose schedules are a choice of a few integer knobs
// (Backend::schedule_knobs: the fpga target's tilings, as AutoTVM tunes VTA's
// templates): random, greedy and evolutionary over the knobs instead of primitives.
// A candidate is the knob choice's schedule (Backend::knob_schedule); choices the
// target refuses (a buffer that overflows) are redrawn, never proposed.
#pragma once

#include <memory>
#include <string>

#include "agents/search.h"

namespace tensorgym {

// Whether `target` schedules `program` by knobs (the search then uses these agents).
bool has_schedule_knobs(const std::string& target, const ProgramPtr& program);

// random: `batch_size` uniform legal choices a round. greedy: from a random legal
// choice, every neighbour (one knob one value up or down) not yet evaluated; move to
// the best if it improves, else restart at a random choice. evolutionary: the first
// round random, then children of the best (a tournament among the 16 best) by mutation
// (one or two knobs to a neighbouring or random value) or uniform crossover, a
// fraction `eps_greedy` random. NOT_FOUND for beam and other names.
Expected<std::unique_ptr<SearchAgent>> make_knob_agent(const std::string& name);

}  // namespace tensorgym
