#pragma once
// "dns:///name:port" (or "dns://authority/name:port") endpoints resolved by the client
// itself, so that it can pin a session to one address (Connection) or treat every
// address as its own endpoint (BatchEvaluator) instead of gRPC's opaque balancing.
#include <string>
#include <vector>

#include "support/status.h"

namespace tensorgym::client {

struct ResolvedAddress {
  std::string name;    // "10.0.0.7:50051", "[::1]:50051"
  std::string target;  // the gRPC target: "ipv4:10.0.0.7:50051", "ipv6:[::1]:50051"
};

bool is_dns_endpoint(const std::string& endpoint);

// Every distinct address of a dns: endpoint, in resolver order; *host (optional) gets
// the name looked up (for TLS). INVALID_ARGUMENT for a malformed endpoint, UNAVAILABLE
// when the name does not resolve.
Expected<std::vector<ResolvedAddress>> resolve_dns_endpoint(const std::string& endpoint, std::string* host = nullptr);

}  // namespace tensorgym::client
