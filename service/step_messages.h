// Step's request and response, and what the step drops, held until the call is done.
//
// A callback unary handler's Finish() only records the status: gRPC binds the reactor
// after the handler returns and writes the answer then. Whatever the handler destroys
// on its way out (the previous schedule, its lowered nest and derived state, the
// step's arguments) is destroyed before the answer leaves. gRPC releases a call's
// messages once the answer is written (MessageHolder::Release, when the call is done),
// so the handler parks those objects with its messages (keep_until_done) and they are
// destroyed there, off the round trip.
#pragma once

#include <memory>
#include <vector>

#include <grpcpp/support/message_allocator.h>

#include "proto/tensorgym.pb.h"

namespace tensorgym::service {

class StepMessages final : public grpc::MessageHolder<proto::StepRequest, proto::StepResponse> {
 public:
  StepMessages() {
    set_request(&request_);
    set_response(&response_);
  }

  // Keeps `objects` alive until gRPC releases this call's messages.
  void keep_until_done(std::vector<std::shared_ptr<const void>> objects);
  // The holder of a call's messages, from its context (the service always sets the
  // allocator for Step); null for a context without one.
  static StepMessages* of(grpc::RpcAllocatorState* state) { return dynamic_cast<StepMessages*>(state); }

  // Called by gRPC when the call is done: drops the parked objects, then the messages.
  void Release() override;

 private:
  proto::StepRequest request_;
  proto::StepResponse response_;
  std::vector<std::shared_ptr<const void>> parked_;
};

class StepMessageAllocator final : public grpc::MessageAllocator<proto::StepRequest, proto::StepResponse> {
 public:
  grpc::MessageHolder<proto::StepRequest, proto::StepResponse>* AllocateMessages() override {
    return new StepMessages;
  }
};

}  // namespace tensorgym::service
