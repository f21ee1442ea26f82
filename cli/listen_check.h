// Whether `tensorgym serve` can listen where it was asked to, checked before gRPC
// tries: gRPC reports a failed bind as a multi-line dump on stderr, ahead of the one
// line a user needs.
#pragma once

#include <string>

#include "support/status.h"

namespace tensorgym::cli {

// UNAVAILABLE "cannot listen on HOST:PORT (...: why)" when a socket cannot be bound
// there; OK for port 0 (any free port). The socket is closed again at once.
Status check_can_listen(const std::string& host, int port);

}  // namespace tensorgym::cli
