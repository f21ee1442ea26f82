#include "cli/listen_check.h"

#include <fmt/format.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tensorgym::cli {

Status check_can_listen(const std::string& host, int port) {
  if (port == 0) return Status();
  const std::string where = host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port)
                                                                 : fmt::format("{}:{}", host, port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found); rc != 0)
    return Status(StatusCode::kUnavailable, fmt::format("cannot listen on {} ({})", where, ::gai_strerror(rc)));
  std::string why;
  for (addrinfo* a = found; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    // As gRPC binds: an address in TIME_WAIT is free, one another socket listens on is not.
    const int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    const bool bound = ::bind(fd, a->ai_addr, a->ai_addrlen) == 0;
    if (!bound && why.empty()) why = std::strerror(errno);
    ::close(fd);
    if (bound) {
      ::freeaddrinfo(found);
      return Status();
    }
  }
  ::freeaddrinfo(found);
  return Status(StatusCode::kUnavailable,
                fmt::format("cannot listen on {} ({})", where, why.empty() ? "no usable address" : why));
}

}  // namespace tensorgym::cli
