// Statuses across the wire: tensorgym::Status <-> grpc::Status, and the details a
// failed call carries (grpc-status-details-bin holding a proto::RpcStatus, which is
// wire-compatible with google.rpc.Status). Includes grpc++: for .cc files of the
// client library and the server only.
#pragma once

#include <google/protobuf/message.h>
#include <grpcpp/support/status.h>

#include "support/status.h"

namespace tensorgym::rpc {

grpc::Status to_grpc(const Status& status);
// The same, with `detail` packed into the status details.
grpc::Status to_grpc(const Status& status, const google::protobuf::Message& detail);
Status from_grpc(const grpc::Status& status);

// Unpacks the first detail of `out`'s type from a failed call's status; false when
// there is none.
bool unpack_detail(const grpc::Status& status, google::protobuf::Message* out);

}  // namespace tensorgym::rpc
