// Who may call: the bearer token check (metadata "authorization: Bearer <token>",
// checked on every call) and the rule that only loopback may be served without TLS
// or a token.
#pragma once

#include <string>
#include <string_view>

#include "service/server_options.h"
#include "support/status.h"

namespace grpc {
class ServerContextBase;
}

namespace tensorgym::service {

class Authenticator {
 public:
  Authenticator() = default;  // no token: every call passes
  explicit Authenticator(std::string token) : token_(std::move(token)) {}

  // The token of `options` (auth_token, else the first line of auth_token_file);
  // INVALID_ARGUMENT for an unreadable or empty file.
  static Expected<Authenticator> from_options(const ServerOptions& options);

  bool enabled() const { return !token_.empty(); }
  // OK, or UNAUTHENTICATED saying what was missing.
  Status check(const grpc::ServerContextBase& context) const;
  Status check_header(std::string_view authorization) const;

 private:
  std::string token_;
};

// 127.0.0.0/8, ::1 and "localhost".
bool is_loopback_host(const std::string& host);

// OK when `options` may be served: loopback, or TLS (cert and key) or a token.
// Otherwise FAILED_PRECONDITION explaining why the server refuses to start.
Status check_bind_policy(const ServerOptions& options);

}  // namespace tensorgym::service
