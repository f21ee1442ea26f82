// A picture of a memory plan: time across, offset up, one rectangle per buffer, the
// live-bytes profile as a step line, and the lower bound and the arena as lines, so
// a person can see where the arena is wasted.
#pragma once

#include <string>
#include <vector>

#include "memplan/instance.h"

namespace tensorgym {

// `kinds` (optional, one per buffer) colours the rectangles: 0 input, 1 output,
// 2 intermediate, 3 scratch.
std::string plan_svg(const Instance& instance, const Offsets& offsets, int64_t lower_bound, const std::string& title,
                     const std::vector<int>& kinds = {});

}  // namespace tensorgym
