#pragma once
// Session parameters (Env::set_parameter) arrive as text; every environment parses
// them the same way and rejects them with the same message.
#include <cstdint>
#include <string>

#include "support/status.h"

namespace tensorgym {

// `value` as a whole decimal integer in [lo, hi], else kInvalidArgument naming `key`.
Expected<int64_t> parse_int_parameter(const std::string& key, const std::string& value, int64_t lo, int64_t hi);

}  // namespace tensorgym
