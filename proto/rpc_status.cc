#include "proto/rpc_status.h"

#include <fmt/format.h>

#include "proto/tensorgym.pb.h"

namespace tensorgym::rpc {

std::string wire_message(const std::string& message) {
  if (message.size() <= kMaxStatusMessageBytes) return message;
  return fmt::format("{}... (message cut; it was {} bytes)", message.substr(0, kMaxStatusMessageBytes), message.size());
}

grpc::Status to_grpc(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), wire_message(status.message()));
}

grpc::Status to_grpc(const Status& status, const google::protobuf::Message& detail) {
  if (status.ok()) return grpc::Status::OK;
  proto::RpcStatus s;
  s.set_code(int(status.code()));
  const std::string message = wire_message(status.message());
  s.set_message(message);
  s.add_details()->PackFrom(detail);
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), message, s.SerializeAsString());
}

Status from_grpc(const grpc::Status& status) {
  if (status.ok()) return Status();
  int code = int(status.error_code());
  if (code < 0 || code > int(StatusCode::kUnauthenticated)) code = int(StatusCode::kUnknown);
  return Status(static_cast<StatusCode>(code), status.error_message());
}

bool unpack_detail(const grpc::Status& status, google::protobuf::Message* out) {
  if (status.ok() || status.error_details().empty()) return false;
  proto::RpcStatus s;
  if (!s.ParseFromString(status.error_details())) return false;
  for (const google::protobuf::Any& any : s.details()) {
    if (any.type_url().ends_with("/" + out->GetDescriptor()->full_name()) && any.UnpackTo(out)) return true;
  }
  return false;
}

}  // namespace tensorgym::rpc
