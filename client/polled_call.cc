#include "client/polled_call.h"

#include <chrono>
#include <memory>

namespace tensorgym::client {

PolledCalls::~PolledCalls() {
  cq_.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (cq_.Next(&tag, &ok)) {
  }
}

grpc::Status PolledCalls::step(proto::TensorGym::Stub& stub, grpc::ClientContext* ctx,
                               const proto::StepRequest& request, proto::StepResponse* response, double poll_us) {
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<proto::StepResponse>> call = stub.AsyncStep(ctx, request, &cq_);
  int done = 0;
  call->Finish(response, &status, &done);
  void* tag = nullptr;
  bool ok = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(poll_us);
  // A zero deadline makes AsyncNext look once and return: the thread never sleeps.
  const gpr_timespec now = gpr_time_0(GPR_CLOCK_MONOTONIC);
  for (;;) {
    const grpc::CompletionQueue::NextStatus s = cq_.AsyncNext(&tag, &ok, now);
    if (s == grpc::CompletionQueue::GOT_EVENT) return status;
    if (s == grpc::CompletionQueue::SHUTDOWN)
      return grpc::Status(grpc::StatusCode::CANCELLED, "the call's queue was shut down");
    if (std::chrono::steady_clock::now() >= until) break;
  }
  // Past the budget: sleep until the answer (or the deadline's error) arrives.
  if (!cq_.Next(&tag, &ok)) return grpc::Status(grpc::StatusCode::CANCELLED, "the call's queue was shut down");
  return status;
}

}  // namespace tensorgym::client
