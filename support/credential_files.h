#pragma once
// Files that hold credentials, read the same way by the server and both clients.
#include <string>
#include <vector>

#include "support/status.h"

namespace tensorgym {

// A bearer token has at least this many bytes: a short one can be guessed.
inline constexpr size_t kMinTokenBytes = 16;

// INVALID_ARGUMENT when `token` is shorter than kMinTokenBytes or holds blanks or
// control characters (it travels in a header); `where` says where it came from.
Status check_token(const std::string& token, const std::string& where);

// A bearer token: the file's first line without surrounding blanks. INVALID_ARGUMENT
// when the file cannot be read, is readable by others or writable by anyone but its
// owner (chmod 600, or 640 for a group of readers), or its token fails check_token.
Expected<std::string> read_token_file(const std::string& path);

// A server's tokens, one client each: every line that is not blank or a '#' comment
// is `TOKEN` or `NAME TOKEN`; a token without a name is called "token-LINE". The
// file's permissions and each token are checked as read_token_file does; names and
// tokens are unique.
struct NamedToken {
  std::string name;
  std::string token;
};
Expected<std::vector<NamedToken>> read_token_list_file(const std::string& path);

// A PEM file (certificate, key, CA roots), whole; `what` names it in the error.
Expected<std::string> read_pem_file(const std::string& path, const char* what);

}  // namespace tensorgym
