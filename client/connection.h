// The C++ client library: a Connection to a TensorGym service and the environments
// on it (client/remote_env.h), with the in-process Env's API.
//
//   auto conn = tensorgym::client::Connection::open();            // managed: starts `tensorgym serve`
//   auto conn = tensorgym::client::Connection::open({.endpoint = "10.0.0.5:50051", .auth_token = "..."});
//   auto env = (*conn)->make_env("schedule-v0");
//   (*env)->reset("benchmark://ops-v0/gmm-1", {}, {"loop_nest"});
//   tensorgym::StepResult r = (*env)->step({tensorgym::Event("split(C.i, 32, io, ii)")}, {"loop_nest"}, {"est_cycles"});
//
// Two modes:
//  - managed (no endpoint): starts `tensorgym serve --port 0 --port-file ...` as a child
//    process tied to this one (it exits when the client dies), and restarts it if it dies;
//  - remote ("host:port" or "dns:///name:port"): a dns:/// name resolving to several
//    addresses spreads new sessions over them round-robin (a session stays on its
//    server), with TLS and a bearer token as options.
// When the service dies or becomes unreachable, calls that fail with UNAVAILABLE are
// retried after reconnecting (bounded backoff) and every live RemoteEnv is restored by
// replaying its episode (benchmark, actions) in a new session. Other codes are not
// retried. Thread-safe; each RemoteEnv is used by one thread at a time. grpc++ stays out of
// this header.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "envs/episode_state.h"
#include "spaces/space.h"
#include "support/status.h"

namespace tensorgym::client {

struct ConnectionOptions {
  // "host:port" or "dns:///name:port": remote mode. Empty: managed mode.
  std::string endpoint;

  // Managed mode: the `tensorgym` executable (empty: $TENSORGYM_BINARY, else beside
  // this executable, else on PATH) and extra `tensorgym serve` flags.
  std::string server_binary;
  std::vector<std::string> server_args;  // e.g. {"--workers", "2", "--log-level", "info"}
  // Managed: how long the service may take to start; remote: to answer the first time.
  double startup_timeout_s = 30;

  // Remote mode: TLS (roots from tls_ca_file, else the system's) and a bearer token
  // (auth_token, else the first line of auth_token_file), sent on every call.
  bool tls = false;
  std::string tls_ca_file;
  std::string auth_token;
  std::string auth_token_file;

  // Each call's deadline (RemoteEnv::set_timeout overrides it for one environment).
  double call_timeout_s = 300;
  // Recovery: how long to keep reconnecting (or restarting) before a call gives up,
  // and the backoff between attempts (doubling from initial to max).
  double reconnect_timeout_s = 30;
  double backoff_initial_s = 0.02;
  double backoff_max_s = 1.0;
  // Largest message accepted from the service (an llvm_ir observation can be large).
  int64_t max_message_bytes = int64_t(1) << 30;
  // A step that does not measure (unary, or on the Session stream) polls for its answer
  // for up to this many microseconds before it sleeps on it (0: it sleeps at once).
  // Faster where a sleeping thread's wake-up is slow (a VM that halts idle vCPUs at
  // once: 146 -> 84 µs a step over loopback), at the price of the calling thread's core
  // while it waits (client/polled_call.h). RemoteEnv::set_busy_poll changes it for one
  // environment.
  double busy_poll_us = 0;
};

struct DatasetInfo {
  std::string name;  // "benchmark://ops-v0"
  std::string description;
  int64_t size = 0;  // -1: unbounded
};

struct BenchmarkEntry {
  std::string uri;
  std::string shape;
};

struct BenchmarkPage {
  std::vector<BenchmarkEntry> benchmarks;
  std::string next_page_token;  // empty on the last page
};

struct EnvSpaces {
  std::vector<Space> action;
  std::vector<Space> observation;
  std::vector<Space> reward;
};

struct ValidationResult {
  bool ok = false;
  std::string error;
  std::map<std::string, double> replayed_rewards;
};

class RemoteEnv;
class ConnectionImpl;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // Starts or reaches the service and checks it answers (GetVersion).
  static Expected<std::shared_ptr<Connection>> open(ConnectionOptions options = {});
  ~Connection();  // managed mode: stops the service
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const ConnectionOptions& options() const;
  // Where calls go now ("127.0.0.1:PORT" in managed mode; changes after a restart).
  std::string address() const;
  bool managed() const;
  // Managed mode: the service's pid (0 in remote mode).
  pid_t server_pid() const;

  Expected<std::string> version();
  Expected<std::vector<std::string>> env_names();
  Expected<EnvSpaces> spaces(const std::string& env);  // fetched once per environment
  Expected<std::vector<DatasetInfo>> datasets();
  // One page of a dataset's URIs; page_size 0: the service's default (100). Without a
  // page token, the page starts `offset` benchmarks in.
  Expected<BenchmarkPage> benchmarks(const std::string& dataset, int page_size = 0,
                                     const std::string& page_token = "", int64_t offset = 0);
  // Adds a program to benchmark://user-v0 and returns its URI. The connection
  // remembers it and adds it again to a restarted or another server before use.
  Expected<std::string> add_benchmark(const std::string& name, const std::string& program);
  // Replays a state on the service and checks it (see `tensorgym validate`).
  Expected<ValidationResult> validate(const EpisodeState& state, double tolerance = 0.25);
  // The standard health check (grpc.health.v1.Health/Check): true when SERVING.
  Expected<bool> serving();

  // An environment on the service; its first reset() starts a session.
  Expected<std::unique_ptr<RemoteEnv>> make_env(const std::string& name = "schedule-v0");

  struct Stats {
    int64_t restarts = 0;    // managed service restarted
    int64_t reconnects = 0;  // recoveries after UNAVAILABLE
    int64_t replays = 0;     // episodes restored by replaying them
  };
  Stats stats() const;

  ConnectionImpl& impl() { return *impl_; }

 private:
  explicit Connection(std::shared_ptr<ConnectionImpl> impl);
  std::shared_ptr<ConnectionImpl> impl_;
};

}  // namespace tensorgym::client
