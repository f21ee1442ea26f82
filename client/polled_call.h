// Steps whose caller polls for the answer instead of sleeping on it, unary or on a
// Session stream (internal to the client library and its benchmarks; includes grpc++).
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

// A Session stream whose caller polls for each answer the same way: each wait polls
// the stream's completion queue for up to `poll_us`, then sleeps on it.
class PolledStream {
 public:
  // Opens the stream on `stub`; `ctx` must outlive it.
  PolledStream(proto::TensorGym::Stub& stub, grpc::ClientContext* ctx, double poll_us);
  PolledStream(const PolledStream&) = delete;
  PolledStream& operator=(const PolledStream&) = delete;
  ~PolledStream();  // finish(), then shuts the queue down and drains it

  // Writes `request` and reads its answer; false once the stream is broken (finish()
  // then says why).
  bool step(const proto::StepRequest& request, proto::StepResponse* response);
  // Cancels the stream if it is still open and returns how it ended.
  grpc::Status finish();

 private:
  bool wait();  // for the one operation in flight; its `ok`

  grpc::CompletionQueue cq_;
  grpc::ClientContext* ctx_;
  double poll_us_;
  std::unique_ptr<grpc::ClientAsyncReaderWriter<proto::StepRequest, proto::StepResponse>> stream_;
  bool open_ = false, finished_ = false;
  grpc::Status status_;
};

}  // namespace tensorgym::client
