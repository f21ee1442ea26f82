// Figures as text output shows them: rounded to the digits that mean something
// (measurements vary in their third or fourth digit). --json output keeps full
// precision instead (cli/json_text.h).
#pragma once

#include <string>

#include "spaces/event.h"

namespace tensorgym::cli {

// Four significant digits, never in exponent form between 1e-3 and 1e15; whole
// numbers stay whole: 132718.64 -> "132719", 13.885502 -> "13.89", 0.0123456 ->
// "0.01235", 2.5e-05 -> "2.5e-05".
std::string figure(double v);

// A duration with its unit: "13.89 s", "1.235 ms", "45.6 us", "2m05s".
std::string seconds_text(double s);

// An observation or reward for a person: numbers as figure(), strings as they are,
// tensors as "float64[2, 3]: [...]" with rounded elements.
std::string event_text(const Event& e);

}  // namespace tensorgym::cli
