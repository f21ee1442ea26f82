// tensorgym serve [--host 127.0.0.1] [--port N | --port 0] [--port-file F] [--workers N]
//                 [--tls-cert F --tls-key F] [--auth-token-file F] [--log-level L] ...
// Serves the environments over gRPC (docs/protocol.md) until SIGTERM or SIGINT.
#include <CLI/CLI.hpp>

#include "cli/cli_common.h"
#include "cli/listen_check.h"
#include "service/server.h"

namespace tensorgym::cli {

void add_serve_command(CLI::App& app) {
  auto o = std::make_shared<service::ServerOptions>();
  auto level = std::make_shared<std::string>("info");
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Serve the environments over gRPC (sessions, steps, fork, state, validate; grpc.health.v1). Binds loopback "
      "unless TLS or a bearer token is configured; SIGTERM stops it gracefully");
  cmd->add_option("--host", o->host, "Address to bind (127.0.0.1; other addresses need TLS or a token)")
      ->default_val("127.0.0.1");
  cmd->add_option("--port", o->port, "Port to listen on; 0 picks a free one")->default_val(0)->check(CLI::Range(0, 65535));
  cmd->add_option("--port-file", o->port_file, "Write the port here once serving (atomically: write, then rename)");
  cmd->add_option("--workers", o->workers, "Sandboxed measurement worker processes")
      ->default_val(1)
      ->check(CLI::Range(1, 256));
  cmd->add_option("--threads", o->threads, "Threads for compiled runs (default: every core)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--tls-cert", o->tls_cert_file, "TLS certificate chain (PEM); with --tls-key");
  cmd->add_option("--tls-key", o->tls_key_file, "TLS private key (PEM)");
  cmd->add_option("--auth-token-file", o->auth_token_file,
                  "File of bearer tokens, one client each ('TOKEN' or 'NAME TOKEN' a line, at least 16 bytes, the file "
                  "not readable by others); every call must send one ('authorization: Bearer <token>')");
  cmd->add_option("--allow-files", o->allow_files,
                  "Directory file:// benchmarks may be read from (repeatable); without it clients read no file");
  cmd->add_option("--max-sessions", o->max_sessions, "Most sessions held at once (RESOURCE_EXHAUSTED past it)")
      ->default_val(1024)
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-sessions-per-client", o->max_sessions_per_client,
                  "Most sessions one client holds (by token; without tokens, by connection)")
      ->default_val(256)
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--user-benchmark-ttl", o->user_benchmark_ttl_s,
                  "Remove AddBenchmark programs unused for this many seconds (0: never)")
      ->default_val(3600)
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-message-bytes", o->max_message_bytes, "Largest request accepted (RESOURCE_EXHAUSTED past it)")
      ->default_val(int64_t(64) << 20)
      ->check(CLI::Range(int64_t(1024), (int64_t(1) << 31) - 1));
  cmd->add_option("--max-memory-in-flight", o->max_memory_in_flight_bytes,
                  "Bytes gRPC may hold for requests across all connections (its resource quota)")
      ->default_val(int64_t(512) << 20)
      ->check(CLI::Range(int64_t(1) << 20, int64_t(1) << 40));
  cmd->add_option("--max-streams-per-connection", o->max_streams_per_connection,
                  "Calls one connection may have open at once")
      ->default_val(100)
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-program-bytes", o->max_program_bytes, "Largest AddBenchmark program text (INVALID_ARGUMENT past it)")
      ->default_val(int64_t(1) << 20)
      ->check(CLI::PositiveNumber);
  cmd->add_option("--idle-timeout", o->idle_timeout_s, "End sessions unused for this many seconds (0: never)")
      ->default_val(1800)
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--call-threads", o->call_threads, "Threads for calls that measure (default: 2 * workers + 2)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--concurrency", o->eval_concurrency,
                  "Evaluate: jobs run at once (default: the cores, at least 2); --workers of them measure at once")
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--max-queued-jobs", o->eval_max_queued_jobs, "Evaluate: jobs one stream may have waiting")
      ->default_val(10000)
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--exclusive-measure", o->exclusive_measure,
                  "Timed runs one at a time across the workers, compilations in parallel (false: timed runs in parallel too)")
      ->default_val(true);
  cmd->add_option("--shutdown-grace", o->shutdown_grace_s, "Seconds calls in flight get to finish after SIGTERM")
      ->default_val(10)
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--parent-pid", o->parent_pid, "Exit when this process is no longer the parent (managed mode)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--log-level", *level, "debug, info, warning, error or off (logs go to stderr)")->default_val("info");
  cmd->callback([o, level] {
    Expected<service::LogLevel> l = service::parse_log_level(*level);
    if (!l.ok()) throw CLI::RuntimeError(report_error(l.status()));
    o->log_level = *l;
    const Status listen = check_can_listen(o->host, o->port);
    if (!listen.ok()) throw CLI::RuntimeError(report_error(listen));
    const int status = service::run_server(*o);
    if (status != 0) throw CLI::RuntimeError(status);
  });
}

}  // namespace tensorgym::cli
