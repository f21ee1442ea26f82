// Quoting text a caller sent (an action, a program line, a name, a token) in a
// message: an error says what was wrong and where without echoing the whole request
// back. A 6 KB action quoted whole overflowed the 8 KB of metadata a gRPC client
// accepts, and the caller got RESOURCE_EXHAUSTED instead of the error.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tensorgym {

// Bytes of the text a quote shows at most.
inline constexpr size_t kMaxQuotedBytes = 160;

// The text in single quotes, each byte that is not printable ASCII (and each \ and ')
// escaped as \xNN. Longer than max_bytes, its first max_bytes are shown, then "..."
// and its whole length: 'split(C.i, 4, io, ii) split(C.j...' (6144 bytes).
std::string quote_text(std::string_view text, size_t max_bytes = kMaxQuotedBytes);

// The same without the quotes, for text a message shows bare (a primitive before a
// colon): split(C.i, 4, io, ii) split(C.j... (6144 bytes).
std::string excerpt_text(std::string_view text, size_t max_bytes = kMaxQuotedBytes);

}  // namespace tensorgym
