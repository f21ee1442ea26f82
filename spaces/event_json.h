// Events as JSON values, for callers that build JSON documents around them.
#pragma once

#include <nlohmann/json.hpp>

#include "spaces/event.h"

namespace tensorgym {

// The JSON value: numbers (NaN and infinities as null), strings, booleans, arrays
// (tensors nest by shape), objects in the event's order. event_to_json is its compact text.
nlohmann::ordered_json event_json(const Event& e);

}  // namespace tensorgym
