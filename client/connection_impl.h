// Internal to the client library (included by client/*.cc only): the servers a
// Connection talks to, their channels, and recovery. Includes grpc++.
#pragma once

#include <atomic>
#include <grpcpp/grpcpp.h>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client/connection.h"
#include "client/managed_server.h"
#include "proto/tensorgym.grpc.pb.h"

namespace tensorgym::client {

// One server address and the channel to it. Replaced, never changed, when the server
// behind it restarts (managed mode) or is found to be another instance.
struct Backend {
  std::string target;  // the gRPC target
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<proto::TensorGym::Stub> stub;
  // Bumped whenever sessions there may be gone: a session made in an older epoch is
  // replayed before use.
  uint64_t epoch = 0;
  std::string instance_id;  // GetVersionResponse.instance_id, when known
};

class ConnectionImpl {
 public:
  explicit ConnectionImpl(ConnectionOptions options);
  ~ConnectionImpl();

  // Starts the managed service or resolves the endpoint, then checks the service answers.
  Status open();

  const ConnectionOptions options;

  size_t num_backends() const;
  std::shared_ptr<Backend> backend(size_t index) const;
  // The backend for a new session (round-robin over the addresses).
  size_t next_backend();
  pid_t server_pid() const;
  std::string address() const;

  // The deadline (timeout_s, else options.call_timeout_s; 0: none) and the token.
  void prepare(grpc::ClientContext* ctx, double timeout_s) const;

  // After a call to backend *index (seen in epoch seen_epoch) failed with UNAVAILABLE:
  // brings a server back. Managed: restarts the service if it died or does not answer.
  // Remote: waits until one of the addresses answers, starting with *index, which it
  // updates. Bounded by options.reconnect_timeout_s; UNAVAILABLE when that passes.
  Status recover(size_t* index, uint64_t seen_epoch);

  // Adds the remembered user benchmarks that backend `index` has not had in its epoch.
  Status push_benchmarks(size_t index, double timeout_s);
  void remember_benchmark(const std::string& name, const std::string& program);

  // A call that holds no session, retried after recovery while it fails with
  // UNAVAILABLE. f(backend, ctx) makes the call and returns its status.
  template <class F>
  grpc::Status call(F f, double timeout_s = 0) {
    size_t index = next_backend();
    for (int attempt = 0;; ++attempt) {
      std::shared_ptr<Backend> b = backend(index);
      grpc::ClientContext ctx;
      prepare(&ctx, timeout_s);
      grpc::Status st = f(*b, &ctx);
      if (st.error_code() != grpc::StatusCode::UNAVAILABLE || attempt >= kMaxAttempts) return st;
      Status r = recover(&index, b->epoch);
      if (!r.ok()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, r.message());
    }
  }

  Expected<EnvSpaces> spaces(const std::string& env);

  std::atomic<int64_t> restarts{0};
  std::atomic<int64_t> reconnects{0};
  std::atomic<int64_t> replays{0};

  static constexpr int kMaxAttempts = 4;

 private:
  std::shared_ptr<Backend> make_backend(const std::string& target, uint64_t epoch) const;
  // GetVersion with a short deadline, waiting for the channel to connect.
  grpc::Status probe(Backend& backend, double timeout_s, std::string* instance_id) const;
  Status resolve_endpoint(std::vector<std::string>* targets);
  Status recover_managed(size_t index, uint64_t seen_epoch);
  Status recover_remote(size_t* index, uint64_t seen_epoch);

  std::string token_;
  std::string tls_roots_;
  std::string tls_host_;  // the name TLS checks, when targets are addresses

  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Backend>> backends_;
  std::unique_ptr<ManagedServer> managed_;
  std::vector<std::pair<std::string, std::string>> benchmarks_;  // added by the user, in order
  std::map<size_t, std::pair<uint64_t, size_t>> pushed_;          // backend -> (epoch, benchmarks pushed)
  std::map<std::string, EnvSpaces> spaces_;
  std::atomic<size_t> round_robin_{0};

  std::mutex recover_mu_;  // one recovery at a time
};

}  // namespace tensorgym::client
