// Who may call, and who is calling: the bearer token check (metadata "authorization:
// Bearer <token>", checked on every call, one token per client), the caller's identity
// that sessions and quotas are kept by, and the rule that only loopback may be served
// without TLS or a token.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "service/server_options.h"
#include "support/credential_files.h"
#include "support/status.h"

namespace grpc {
class ServerContextBase;
}

namespace tensorgym::service {

class Authenticator {
 public:
  Authenticator() = default;  // no token: every call passes
  // INVALID_ARGUMENT for a token check_token() refuses.
  static Expected<Authenticator> with_tokens(std::vector<NamedToken> tokens);

  // The tokens of `options`: auth_token (one client, "token"), else every token of
  // auth_token_file (read_token_list_file); none when neither is set.
  static Expected<Authenticator> from_options(const ServerOptions& options);

  bool enabled() const { return !tokens_.empty(); }

  // Who the caller is: with tokens, "token:NAME" of the token it sent (sessions are
  // bound to it); without, "" (a session is then anyone's who holds its handle).
  // UNAUTHENTICATED saying what was missing or wrong.
  Expected<std::string> identify(const grpc::ServerContextBase& context) const;
  Expected<std::string> identify_header(std::string_view authorization) const;

 private:
  std::vector<NamedToken> tokens_;
};

// What per-client quotas count by: the identity when there is one, else the caller's
// connection ("peer:ipv4:127.0.0.1:PORT"). Without tokens a process that opens more
// connections gets more quota: give each client a token to bound it.
std::string quota_key(const std::string& identity, const grpc::ServerContextBase& context);

// 127.0.0.0/8, ::1 and "localhost".
bool is_loopback_host(const std::string& host);

// OK when `options` may be served: loopback, or TLS (cert and key) or a token.
// Otherwise FAILED_PRECONDITION explaining why the server refuses to start.
Status check_bind_policy(const ServerOptions& options);

}  // namespace tensorgym::service
