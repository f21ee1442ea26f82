// serve --dispatch-cpu: the gRPC threads that run the service's handlers stay on one CPU.
//
// gRPC serves callbacks from a few threads that take calls in turn. Left to the
// kernel they may sit on different cores, and then every other step runs where its
// code is not in the core's cache. With one agent per service, keeping them together
// makes the step's latency steady (docs/deployment.md). Measurement workers and the
// threads that run slow calls are not pinned.
#pragma once

#include "support/status.h"

namespace tensorgym::service {

// OK if this process may run on `cpu` (-1: no pinning); otherwise why not.
Status check_dispatch_cpu(int cpu);

// Pins the calling thread to `cpu` the first time it runs here (cheap after that);
// -1 does nothing. The thread stays there for the life of the process.
void pin_dispatch_thread(int cpu);

}  // namespace tensorgym::service
