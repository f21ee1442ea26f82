// Server timing for Step, like HTTP's Server-Timing header: a client that sends the
// request metadata `tensorgym-server-timing` (any value) gets, in the answer's trailing
// metadata `tensorgym-server-time-us`, the microseconds the server spent on the step,
// from the handler's entry to the answer being complete (decimal, one digit after the
// point). It separates the service's own time from the transport's: what a round trip
// adds beyond it is gRPC and the network stack.
#pragma once

#include <chrono>
#include <optional>

namespace grpc {
class ServerContextBase;
}

namespace tensorgym::service {

inline constexpr char kServerTimingRequestKey[] = "tensorgym-server-timing";
inline constexpr char kServerTimeKey[] = "tensorgym-server-time-us";

// Started at a handler's entry; inactive unless the client asked for timing.
class ServerTiming {
 public:
  explicit ServerTiming(const grpc::ServerContextBase& context);
  // Adds the trailing metadata (when active); call before Finish.
  void report(grpc::ServerContextBase& context) const;

 private:
  std::optional<std::chrono::steady_clock::time_point> start_;
};

}  // namespace tensorgym::service
