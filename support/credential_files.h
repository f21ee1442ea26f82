#pragma once
// Files that hold credentials, read the same way by the server and both clients.
#include <string>

#include "support/status.h"

namespace tensorgym {

// A bearer token: the file's first line without surrounding blanks. INVALID_ARGUMENT
// when the file cannot be read or the token is empty.
Expected<std::string> read_token_file(const std::string& path);

// A PEM file (certificate, key, CA roots), whole; `what` names it in the error.
Expected<std::string> read_pem_file(const std::string& path, const char* what);

}  // namespace tensorgym
