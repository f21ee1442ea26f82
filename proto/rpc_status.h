// Statuses across the wire: tensorgym::Status <-> grpc::Status, and the details a
// failed call carries (grpc-status-details-bin holding a proto::RpcStatus, which is
// wire-compatible with google.rpc.Status). Includes grpc++: for .cc files of the
// client library and the server only.
#pragma once

#include <google/protobuf/message.h>
#include <grpcpp/support/status.h>

#include <cstddef>
#include <string>

#include "support/status.h"

namespace tensorgym::rpc {

// Longest message a status carries across the wire: the message travels in the
// response's trailing metadata, which a default client caps at 8 KB (past it the caller
// gets RESOURCE_EXHAUSTED, not the error). Longer messages are cut, saying so; errors
// quote what a caller sent in bounded excerpts (support/quote.h) and stay below it.
inline constexpr size_t kMaxStatusMessageBytes = 2048;

// The message as it may cross the wire: cut past kMaxStatusMessageBytes, saying so.
std::string wire_message(const std::string& message);

grpc::Status to_grpc(const Status& status);
// The same, with `detail` packed into the status details.
grpc::Status to_grpc(const Status& status, const google::protobuf::Message& detail);
Status from_grpc(const grpc::Status& status);

// Unpacks the first detail of `out`'s type from a failed call's status; false when
// there is none.
bool unpack_detail(const grpc::Status& status, google::protobuf::Message* out);

}  // namespace tensorgym::rpc
