// The gRPC server: listens (loopback by default; TLS and bearer tokens), serves the
// TensorGym service and grpc.health.v1.Health, reaps idle sessions, and shuts down
// gracefully. run_server() is `tensorgym serve`.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "envs/env_context.h"
#include "service/server_options.h"
#include "support/status.h"

namespace grpc {
class Channel;
}

namespace tensorgym::service {

class TensorGymService;

class Server {
 public:
  // Listens and serves on gRPC's threads; returns once serving. FAILED_PRECONDITION
  // when the bind policy refuses (auth.h), UNAVAILABLE when the port cannot be bound,
  // INVALID_ARGUMENT for unreadable TLS or token files.
  static Expected<std::unique_ptr<Server>> start(const ServerOptions& options);
  ~Server();  // shutdown(0)
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const;
  std::string address() const;  // "127.0.0.1:PORT" (IPv6 in brackets)
  // A channel to this server without a socket, for callers in this process (the
  // fuzzer calls every method through one). Calls on it pass the same checks.
  std::shared_ptr<grpc::Channel> in_process_channel();

  // Stops accepting calls, marks the health service NOT_SERVING, gives calls in flight
  // `grace` to finish, cancels what remains, and stops the measurement workers.
  // Idempotent.
  void shutdown(std::chrono::steady_clock::duration grace);

  TensorGymService& service();
  const std::shared_ptr<EnvContext>& context() const;

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Writes `text` to `path` atomically: a temporary file in the same folder, then rename.
Status write_file_atomically(const std::string& path, const std::string& text);

// `tensorgym serve`: serves until SIGTERM or SIGINT (or until the parent process named
// by options.parent_pid is gone), then shuts down gracefully. Returns the exit status
// (0 after a signal; 1 when the server could not start, with the reason logged).
int run_server(const ServerOptions& options);

}  // namespace tensorgym::service
