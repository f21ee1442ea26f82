#include "envs/parameters.h"

#include <fmt/format.h>

#include <charconv>

#include "support/quote.h"

namespace tensorgym {

Expected<int64_t> parse_int_parameter(const std::string& key, const std::string& value, int64_t lo, int64_t hi) {
  int64_t v = 0;
  const char* end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, v);
  if (value.empty() || ec != std::errc() || ptr != end || v < lo || v > hi) {
    return invalid_argument(
        fmt::format("parameter {} must be an integer in {}..{}, got {}", key, lo, hi, quote_text(value)));
  }
  return v;
}

}  // namespace tensorgym
