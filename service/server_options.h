// What `tensorgym serve` is configured with. Every size a request controls has a cap
// here; the defaults suit one machine serving a few agents.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "envs/env_context.h"
#include "service/log.h"

namespace tensorgym::service {

struct ServerOptions {
  std::string host = "127.0.0.1";  // loopback unless TLS or a token is configured
  int port = 0;                    // 0: a free port, reported by Server::port() and the port file
  std::string port_file;           // written atomically (write, then rename) once serving

  // Measurement: sandboxed worker processes of the shared EnvContext.
  int workers = 1;
  std::string worker_binary;  // empty: this executable (`tensorgym worker`)
  int threads = 0;            // threads for compiled runs (0: every core)

  // Security: binding a non-loopback address needs TLS or a bearer token.
  std::string tls_cert_file;  // PEM; with tls_key_file
  std::string tls_key_file;
  std::string auth_token_file;  // its first line is the token ("authorization: Bearer <token>")
  std::string auth_token;       // for tests and embedding: the token itself

  // Caps.
  int max_sessions = 1024;
  int max_sessions_per_client = 256;  // by token, or by connection without tokens (auth.h)
  int64_t max_message_bytes = int64_t(64) << 20;  // a request larger is RESOURCE_EXHAUSTED
  int64_t max_memory_in_flight_bytes = int64_t(512) << 20;  // gRPC's memory for requests, all connections
  int max_streams_per_connection = 100;                     // calls open at once on one connection
  int64_t max_program_bytes = int64_t(1) << 20;   // AddBenchmark text larger is INVALID_ARGUMENT
  int max_actions_per_step = 4096;
  int max_spaces_per_call = 256;  // observation or reward names in one call
  double idle_timeout_s = 1800;   // sessions unused this long are ended (0: never)
  double user_benchmark_ttl_s = 3600;  // AddBenchmark programs unused this long are removed (0: never)

  // Threads that run calls which may measure (the gRPC threads run the cheap ones).
  int call_threads = 0;  // 0: 2 * workers + 2

  // Evaluate (batch jobs): jobs run at once (0: the cores, at least 2), of which
  // `workers` measure at once; jobs one stream may have waiting.
  int eval_concurrency = 0;
  int eval_max_queued_jobs = 10000;
  // Timed runs one at a time across the worker pool (compilations still overlap), so
  // that a measurement has quiet cores; false lets the workers time in parallel (more
  // throughput, noisier numbers).
  bool exclusive_measure = true;

  // SIGTERM: calls in flight get this long to finish.
  double shutdown_grace_s = 10;
  // Exit when this process stops being our parent (managed mode). 0: no check.
  int parent_pid = 0;
  // Directories file:// benchmarks may be read from (--allow-files, repeatable); none:
  // clients read no file of the server's (datasets/file_access.h).
  std::vector<std::string> allow_files;

  LogLevel log_level = LogLevel::kInfo;
};

}  // namespace tensorgym::service
