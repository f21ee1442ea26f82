// Every RPC of the service (service/tensorgym_service.h), in-process: the real server
// (service/server.h) is started once per process and called through its in-process
// channel with requests parsed from the input.
//
// An input is a short sequence of calls, each one record:
//   byte 0      the method, modulo the number of methods (kMethods below)
//   byte 1-2    the request's length n, little-endian (cut to what is left)
//   n bytes     the serialized request message (a stream method sends it as its one
//               message, then closes its side)
// The harness is generic over the generated request types, so it keeps working as
// the messages change: a request is parsed with ParseFromArray, and a top-level
// scalar field (not repeated, not in a oneof) the request leaves unset takes the value
// of the field of the same name and type in an earlier response of the same input (so a Step can find the
// session a StartSession made, whatever the field holds).
//
// Per-input work is bounded: every call has a short deadline, nothing is measured
// (the server's worker binary does not exist, so a measurement fails at once), and
// every session is ended after each input. TENSORGYM_FUZZ_VERBOSE=1 prints each call
// and its status.
#include <fmt/format.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/reflection.h>
#include <google/protobuf/stubs/logging.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "proto/tensorgym.grpc.pb.h"
#include "service/server.h"
#include "service/session_table.h"
#include "service/tensorgym_service.h"

namespace tg = tensorgym;
namespace pb = google::protobuf;
using tg::proto::TensorGym;

namespace {

constexpr size_t kMaxCalls = 8;
constexpr auto kCallDeadline = std::chrono::milliseconds(1000);

tg::service::Server* server = nullptr;
std::unique_ptr<TensorGym::Stub> stub;
const bool verbose = std::getenv("TENSORGYM_FUZZ_VERBOSE") != nullptr;

void report(const pb::Message& request, const grpc::Status& status) {
  if (!verbose) return;
  fmt::print(stderr, "{} -> {} {}\n", request.GetDescriptor()->name(), int(status.error_code()),
             status.error_message().substr(0, 200));
}

// Top-level singular scalar fields of the responses seen in this input, by name.
class Carry {
 public:
  void remember(const pb::Message& response) {
    std::shared_ptr<pb::Message> copy(response.New());
    copy->CopyFrom(response);
    std::vector<const pb::FieldDescriptor*> set;
    copy->GetReflection()->ListFields(*copy, &set);
    for (const pb::FieldDescriptor* f : set)
      if (carried(f)) values_[f->name()] = {f, copy};
  }
  void fill(pb::Message* request) const {
    const pb::Descriptor* d = request->GetDescriptor();
    const pb::Reflection* r = request->GetReflection();
    for (int i = 0; i < d->field_count(); ++i) {
      const pb::FieldDescriptor* f = d->field(i);
      if (!carried(f) || r->HasField(*request, f)) continue;
      auto it = values_.find(f->name());
      if (it == values_.end() || it->second.field->cpp_type() != f->cpp_type()) continue;
      const pb::Message& from = *it->second.message;
      const pb::Reflection* fr = from.GetReflection();
      const pb::FieldDescriptor* ff = it->second.field;
      switch (f->cpp_type()) {
        case pb::FieldDescriptor::CPPTYPE_INT32: r->SetInt32(request, f, fr->GetInt32(from, ff)); break;
        case pb::FieldDescriptor::CPPTYPE_INT64: r->SetInt64(request, f, fr->GetInt64(from, ff)); break;
        case pb::FieldDescriptor::CPPTYPE_UINT32: r->SetUInt32(request, f, fr->GetUInt32(from, ff)); break;
        case pb::FieldDescriptor::CPPTYPE_UINT64: r->SetUInt64(request, f, fr->GetUInt64(from, ff)); break;
        case pb::FieldDescriptor::CPPTYPE_STRING: r->SetString(request, f, fr->GetString(from, ff)); break;
        default: break;  // bools, enums and floats are the input's to choose
      }
    }
  }

 private:
  // Singular scalars outside a oneof (setting one would clear the oneof's choice).
  static bool carried(const pb::FieldDescriptor* f) {
    return !f->is_repeated() && f->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE && !f->real_containing_oneof();
  }
  struct Value {
    const pb::FieldDescriptor* field;
    std::shared_ptr<pb::Message> message;
  };
  std::map<std::string, Value> values_;
};

std::unique_ptr<grpc::ClientContext> context_with_deadline() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + kCallDeadline);
  return ctx;
}

using Method = std::function<void(const uint8_t*, size_t, Carry&)>;

template <class Req, class Resp>
Method unary(grpc::Status (TensorGym::Stub::*method)(grpc::ClientContext*, const Req&, Resp*)) {
  return [method](const uint8_t* data, size_t size, Carry& carry) {
    Req request;
    if (!request.ParseFromArray(data, int(size))) return;
    carry.fill(&request);
    Resp response;
    std::unique_ptr<grpc::ClientContext> ctx = context_with_deadline();
    const grpc::Status status = (stub.get()->*method)(ctx.get(), request, &response);
    report(request, status);
    if (status.ok()) carry.remember(response);
  };
}

template <class Req, class Resp>
Method stream(std::unique_ptr<grpc::ClientReaderWriter<Req, Resp>> (TensorGym::Stub::*method)(grpc::ClientContext*)) {
  return [method](const uint8_t* data, size_t size, Carry& carry) {
    Req request;
    if (!request.ParseFromArray(data, int(size))) return;
    carry.fill(&request);
    std::unique_ptr<grpc::ClientContext> ctx = context_with_deadline();
    std::unique_ptr<grpc::ClientReaderWriter<Req, Resp>> rw = (stub.get()->*method)(ctx.get());
    rw->Write(request);
    rw->WritesDone();
    Resp response;
    while (rw->Read(&response)) {
    }
    report(request, rw->Finish());
  };
}

const std::vector<Method>& methods() {
  static const std::vector<Method> kMethods = {
      unary(&TensorGym::Stub::GetVersion),
      unary(&TensorGym::Stub::GetSpaces),
      unary(&TensorGym::Stub::ListDatasets),
      unary(&TensorGym::Stub::ListBenchmarks),
      unary(&TensorGym::Stub::AddBenchmark),
      unary(&TensorGym::Stub::StartSession),
      unary(&TensorGym::Stub::Step),
      unary(&TensorGym::Stub::ForkSession),
      unary(&TensorGym::Stub::EndSession),
      unary(&TensorGym::Stub::GetState),
      unary(&TensorGym::Stub::Validate),
      unary(&TensorGym::Stub::SendSessionParameter),
      stream(&TensorGym::Stub::Session),
      stream(&TensorGym::Stub::Evaluate),
  };
  return kMethods;
}

void stop_server() {
  stub.reset();
  delete server;
  server = nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Requests with strings that are not UTF-8 do not parse; protobuf would log each.
  pb::SetLogHandler(nullptr);
  tg::service::ServerOptions options;
  options.port = 0;  // it listens on loopback too; the harness never uses the port
  // Nothing is measured: a worker that cannot start is a measurement error at once.
  options.worker_binary = "/nonexistent/tensorgym-fuzz-measures-nothing";
  options.threads = 1;
  options.call_threads = 2;
  options.eval_concurrency = 2;
  options.shutdown_grace_s = 0;
  options.log_level = tg::service::LogLevel::kError;
  tg::Expected<std::unique_ptr<tg::service::Server>> started = tg::service::Server::start(options);
  if (!started.ok()) {
    fmt::print(stderr, "service_fuzz: the server did not start: {}\n", started.status().message());
    std::abort();
  }
  server = started->release();
  stub = TensorGym::NewStub(server->in_process_channel());
  std::atexit(stop_server);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Carry carry;
  size_t at = 0;
  for (size_t call = 0; call < kMaxCalls && at + 3 <= size; ++call) {
    const Method& method = methods()[data[at] % methods().size()];
    const size_t n = std::min<size_t>(size_t(data[at + 1]) | size_t(data[at + 2]) << 8, size - at - 3);
    method(data + at + 3, n, carry);
    at += 3 + n;
  }
  server->service().sessions().clear();
  return 0;
}
