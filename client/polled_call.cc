#include "client/polled_call.h"

#include <chrono>
#include <memory>

namespace tensorgym::client {

namespace {

// Waits for the next event of `cq`: polls for up to `poll_us`, then sleeps. False when the
// queue is shut down.
bool next_event(grpc::CompletionQueue& cq, double poll_us, void** tag, bool* ok) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(poll_us);
  // A zero deadline makes AsyncNext look once and return: the thread never sleeps.
  const gpr_timespec now = gpr_time_0(GPR_CLOCK_MONOTONIC);
  for (;;) {
    const grpc::CompletionQueue::NextStatus s = cq.AsyncNext(tag, ok, now);
    if (s == grpc::CompletionQueue::GOT_EVENT) return true;
    if (s == grpc::CompletionQueue::SHUTDOWN) return false;
    if (std::chrono::steady_clock::now() >= until) break;
  }
  // Past the budget: sleep until the event (or the deadline's error) arrives.
  return cq.Next(tag, ok);
}

void drain(grpc::CompletionQueue& cq) {
  cq.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (cq.Next(&tag, &ok)) {
  }
}

}  // namespace

PolledCalls::~PolledCalls() { drain(cq_); }

grpc::Status PolledCalls::step(proto::TensorGym::Stub& stub, grpc::ClientContext* ctx,
                               const proto::StepRequest& request, proto::StepResponse* response, double poll_us) {
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<proto::StepResponse>> call = stub.AsyncStep(ctx, request, &cq_);
  int done = 0;
  call->Finish(response, &status, &done);
  void* tag = nullptr;
  bool ok = false;
  if (!next_event(cq_, poll_us, &tag, &ok))
    return grpc::Status(grpc::StatusCode::CANCELLED, "the call's queue was shut down");
  return status;
}

PolledStream::PolledStream(proto::TensorGym::Stub& stub, grpc::ClientContext* ctx, double poll_us)
    : ctx_(ctx), poll_us_(poll_us) {
  int started = 0;
  stream_ = stub.AsyncSession(ctx_, &cq_, &started);
  open_ = wait();
}

PolledStream::~PolledStream() {
  (void)finish();
  drain(cq_);
}

bool PolledStream::wait() {
  void* tag = nullptr;
  bool ok = false;
  return next_event(cq_, poll_us_, &tag, &ok) && ok;
}

bool PolledStream::step(const proto::StepRequest& request, proto::StepResponse* response) {
  if (!open_) return false;
  int written = 0, read = 0;
  stream_->Write(request, &written);
  open_ = wait();
  if (!open_) return false;
  stream_->Read(response, &read);
  open_ = wait();
  return open_;
}

grpc::Status PolledStream::finish() {
  if (finished_) return status_;
  finished_ = true;
  if (open_) ctx_->TryCancel();
  open_ = false;
  int finished = 0;
  stream_->Finish(&status_, &finished);
  void* tag = nullptr;
  bool ok = false;
  if (!cq_.Next(&tag, &ok)) status_ = grpc::Status(grpc::StatusCode::CANCELLED, "the stream's queue was shut down");
  return status_;
}

}  // namespace tensorgym::client
