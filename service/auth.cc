#include "service/auth.h"

#include <arpa/inet.h>

#include <grpcpp/server_context.h>

namespace tensorgym::service {
namespace {

// Compares without an early exit, so the time taken does not reveal the prefix matched.
bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

}  // namespace

Expected<Authenticator> Authenticator::with_tokens(std::vector<NamedToken> tokens) {
  for (const NamedToken& t : tokens) TG_RETURN_IF_ERROR(check_token(t.token, "of client '" + t.name + "'"));
  Authenticator a;
  a.tokens_ = std::move(tokens);
  return a;
}

Expected<Authenticator> Authenticator::from_options(const ServerOptions& options) {
  if (!options.auth_token.empty()) return with_tokens({{"token", options.auth_token}});
  if (options.auth_token_file.empty()) return Authenticator();
  TG_ASSIGN_OR_RETURN(std::vector<NamedToken> tokens, read_token_list_file(options.auth_token_file));
  return with_tokens(std::move(tokens));
}

Expected<std::string> Authenticator::identify_header(std::string_view value) const {
  if (tokens_.empty()) return std::string();
  constexpr std::string_view kBearer = "Bearer ";
  if (value.empty())
    return Status(StatusCode::kUnauthenticated,
                  "this server requires a bearer token: send metadata 'authorization: Bearer <token>'");
  if (value.substr(0, kBearer.size()) == kBearer) {
    const std::string_view sent = value.substr(kBearer.size());
    // Every token is compared, so the time taken does not say which one matched.
    const NamedToken* match = nullptr;
    for (const NamedToken& t : tokens_)
      if (constant_time_equal(sent, t.token)) match = &t;
    if (match) return "token:" + match->name;
  }
  return Status(StatusCode::kUnauthenticated, "wrong bearer token in the 'authorization' metadata");
}

Expected<std::string> Authenticator::identify(const grpc::ServerContextBase& context) const {
  if (tokens_.empty()) return std::string();
  const auto& md = context.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return identify_header({});
  return identify_header(std::string_view(it->second.data(), it->second.size()));
}

std::string quota_key(const std::string& identity, const grpc::ServerContextBase& context) {
  return identity.empty() ? "peer:" + context.peer() : identity;
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  std::string h = host;
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

Status check_bind_policy(const ServerOptions& options) {
  const bool tls = !options.tls_cert_file.empty() || !options.tls_key_file.empty();
  if (tls && (options.tls_cert_file.empty() || options.tls_key_file.empty()))
    return invalid_argument("TLS needs both --tls-cert and --tls-key");
  if (is_loopback_host(options.host)) return Status();
  const bool token = !options.auth_token.empty() || !options.auth_token_file.empty();
  if (tls || token) return Status();
  return failed_precondition("refusing to serve on " + options.host +
                             ", which is not a loopback address, without --tls-cert/--tls-key or "
                             "--auth-token-file: anyone who reaches the port could run programs on this "
                             "machine. Bind 127.0.0.1 (the default), or configure TLS or a token");
}

}  // namespace tensorgym::service
