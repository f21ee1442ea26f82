// The plan verifier: the one check every planner's output goes through. A plan is
// valid when every buffer has an offset, offsets are aligned, and no two buffers
// whose lifetimes overlap overlap in [offset, offset + size). For model graphs,
// verify_graph_plan (memplan/lifetimes.h) also checks the order and the in-place
// choices before it comes here.
#pragma once

#include <string>

#include "memplan/instance.h"
#include "support/status.h"

namespace tensorgym {

// The arena size of a valid plan, or FAILED_PRECONDITION naming the first violation
// found (a sweep over time): the two buffers, their lifetimes and their byte ranges.
// INVALID_ARGUMENT when the plan does not fit the instance (wrong count, a negative
// or unaligned offset). O(n log n).
Expected<int64_t> verify_offsets(const Instance& instance, const Offsets& offsets);

// Plan files: CSV with header `id,offset`, one line per buffer, ids as in the
// instance. Reading maps ids back to buffer indices; every buffer must appear once.
std::string offsets_to_csv(const Instance& instance, const Offsets& offsets);
Expected<Offsets> offsets_from_csv(const Instance& instance, const std::string& text, const std::string& source);

}  // namespace tensorgym
