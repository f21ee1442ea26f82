#include "client/dns_endpoint.h"

#include <netdb.h>
#include <sys/socket.h>

#include <set>

namespace tensorgym::client {

bool is_dns_endpoint(const std::string& endpoint) { return endpoint.rfind("dns:", 0) == 0; }

Expected<std::vector<ResolvedAddress>> resolve_dns_endpoint(const std::string& endpoint, std::string* host_out) {
  if (!is_dns_endpoint(endpoint)) return invalid_argument("endpoint '" + endpoint + "' is not dns:///name:port");
  std::string rest = endpoint.substr(4);
  if (rest.rfind("//", 0) == 0) {  // an authority (the DNS server) we leave to the system resolver
    size_t slash = rest.find('/', 2);
    rest = slash == std::string::npos ? std::string() : rest.substr(slash + 1);
  }
  size_t colon = rest.rfind(':');
  if (rest.empty() || colon == std::string::npos || colon == 0 || colon + 1 == rest.size())
    return invalid_argument("endpoint '" + endpoint + "' is not dns:///name:port");
  std::string host = rest.substr(0, colon), port = rest.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &list);
  if (rc != 0) return Status(StatusCode::kUnavailable, "cannot resolve " + host + ": " + gai_strerror(rc));
  std::vector<ResolvedAddress> out;
  std::set<std::string> seen;
  for (addrinfo* a = list; a; a = a->ai_next) {
    char buf[NI_MAXHOST];
    if (::getnameinfo(a->ai_addr, a->ai_addrlen, buf, sizeof buf, nullptr, 0, NI_NUMERICHOST) != 0) continue;
    const bool v6 = a->ai_family == AF_INET6;
    std::string name = v6 ? "[" + std::string(buf) + "]:" + port : std::string(buf) + ":" + port;
    std::string target = (v6 ? "ipv6:" : "ipv4:") + name;
    if (seen.insert(target).second) out.push_back({std::move(name), std::move(target)});
  }
  ::freeaddrinfo(list);
  if (out.empty()) return Status(StatusCode::kUnavailable, "no address for " + host);
  if (host_out) *host_out = host;
  return out;
}

}  // namespace tensorgym::client
