// A unary Step whose caller polls for the answer instead of sleeping on it (internal
// to the client library and its benchmarks; includes grpc++).
//
// A thread blocked on a call sleeps, and on a VM whose guest does not poll before it
// halts an idle vCPU (haltpoll's guest_halt_poll_ns = 0, as on the development VM)
// every sleep ends in a VM exit and a wake-up that costs tens of microseconds on each
// side of a round trip. Polling the call's completion queue without blocking keeps the
// caller's vCPU running: there, a step that applies an action took 84 µs over loopback
// instead of 146 µs (docs/performance.md). It spends the caller's core while it waits,
// so it is for steps that answer in microseconds, bounded by a budget, after which the
// call blocks as usual.
#pragma once

#include <grpcpp/grpcpp.h>

#include "proto/tensorgym.grpc.pb.h"

namespace tensorgym::client {

class PolledCalls {
 public:
  PolledCalls() = default;
  PolledCalls(const PolledCalls&) = delete;
  PolledCalls& operator=(const PolledCalls&) = delete;
  ~PolledCalls();  // shuts the queue down and drains it

  // Sends `request`, polls for the answer for up to `poll_us` microseconds, then
  // blocks until it comes or `ctx`'s deadline passes. One call at a time.
  grpc::Status step(proto::TensorGym::Stub& stub, grpc::ClientContext* ctx, const proto::StepRequest& request,
                    proto::StepResponse* response, double poll_us);

 private:
  grpc::CompletionQueue cq_;
};

}  // namespace tensorgym::client
