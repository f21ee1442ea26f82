#include "support/quote.h"

#include <fmt/format.h>

#include <iterator>

namespace tensorgym {
namespace {

// The first max_bytes of `text` escaped, between `open` and `close`, then the length
// of the whole when it was cut.
std::string bounded(std::string_view text, size_t max_bytes, std::string_view open, std::string_view close) {
  const std::string_view shown = text.substr(0, max_bytes);
  const bool cut = shown.size() < text.size();
  std::string out;
  out.reserve(shown.size() + 32);
  out += open;
  for (char c : shown) {
    if (c >= ' ' && c < 127 && c != '\\' && (open.empty() || c != '\'')) {
      out += c;
    } else {
      fmt::format_to(std::back_inserter(out), "\\x{:02x}", static_cast<unsigned char>(c));
    }
  }
  if (cut) out += "...";
  out += close;
  if (cut) fmt::format_to(std::back_inserter(out), " ({} bytes)", text.size());
  return out;
}

}  // namespace

std::string quote_text(std::string_view text, size_t max_bytes) { return bounded(text, max_bytes, "'", "'"); }

std::string excerpt_text(std::string_view text, size_t max_bytes) { return bounded(text, max_bytes, "", ""); }

}  // namespace tensorgym
