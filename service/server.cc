#include "service/server.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/security/auth_metadata_processor.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "codegen/measure/runner.h"
#include "datasets/file_access.h"
#include "datasets/registry.h"
#include "envs/env_context.h"
#include "service/auth.h"
#include "service/log.h"
#include "service/tensorgym_service.h"
#include "support/credential_files.h"

namespace tensorgym::service {
namespace {

constexpr const char* kServiceName = "tensorgym.proto.TensorGym";

std::string host_port(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos && host.front() != '[';
  return v6 ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

// With TLS, gRPC checks a call's token as its metadata arrives, before it reads the
// request's body, so an unauthenticated flood costs no request memory. (gRPC offers no
// such hook without TLS: there the handlers check it, after the body.)
class BearerTokenProcessor final : public grpc::AuthMetadataProcessor {
 public:
  explicit BearerTokenProcessor(Authenticator auth) : auth_(std::move(auth)) {}
  bool IsBlocking() const override { return false; }  // a few compares: run it inline
  grpc::Status Process(const InputMetadata& metadata, grpc::AuthContext*, OutputMetadata*,
                       OutputMetadata*) override {
    auto it = metadata.find("authorization");
    const std::string_view value = it == metadata.end() ? std::string_view()
                                                        : std::string_view(it->second.data(), it->second.size());
    Expected<std::string> who = auth_.identify_header(value);
    if (!who.ok()) return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, who.status().message());
    return grpc::Status::OK;
  }

 private:
  const Authenticator auth_;
};

}  // namespace

struct Server::Impl {
  ServerOptions options;
  std::shared_ptr<EnvContext> context;
  std::unique_ptr<TensorGymService> service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;

  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  bool shut_down = false;
  std::thread reaper;

  void run_reaper() {
    const double period_s = options.idle_timeout_s > 0 ? std::clamp(options.idle_timeout_s / 4, 0.05, 1.0) : 1.0;
    std::unique_lock<std::mutex> lock(mu);
    while (!stopping) {
      cv.wait_for(lock, std::chrono::duration<double>(period_s));
      if (stopping) break;
      lock.unlock();
      service->reap_idle_sessions();
      service->expire_unused_benchmarks();
      lock.lock();
    }
  }
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { shutdown(std::chrono::seconds(0)); }

Expected<std::unique_ptr<Server>> Server::start(const ServerOptions& options) {
  set_log_level(options.log_level);
  TG_RETURN_IF_ERROR(check_bind_policy(options));
  TG_ASSIGN_OR_RETURN(Authenticator auth, Authenticator::from_options(options));
  const bool tokens = auth.enabled();
  const Authenticator early_auth = auth;  // for the TLS metadata check
  if (options.port < 0 || options.port > 65535) return invalid_argument("the port must be in 0..65535");
  if (options.max_message_bytes <= 0 || options.max_message_bytes > (int64_t(1) << 31) - 1)
    return invalid_argument("--max-message-bytes must be in 1..2147483647");
  if (options.max_memory_in_flight_bytes < options.max_message_bytes)
    return invalid_argument("--max-memory-in-flight must be at least --max-message-bytes (one request must fit)");
  if (options.max_streams_per_connection <= 0) return invalid_argument("--max-streams-per-connection must be positive");
  if (options.max_sessions <= 0) return invalid_argument("--max-sessions must be positive");
  if (options.max_sessions_per_client <= 0) return invalid_argument("--max-sessions-per-client must be positive");
  FileAccess files = FileAccess::none();
  if (!options.allow_files.empty()) {
    TG_ASSIGN_OR_RETURN(files, FileAccess::below(options.allow_files));
  }
  if (options.eval_concurrency < 0 || options.eval_max_queued_jobs <= 0)
    return invalid_argument("--concurrency must be >= 0 and --max-queued-jobs positive");

  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->context = std::make_shared<EnvContext>();
  // The server's own datasets: its clients' programs, and the files it may read for them.
  auto datasets = std::make_shared<DatasetRegistry>();
  datasets->set_file_access(std::move(files));
  impl->context->datasets = datasets.get();
  impl->context->datasets_owner = std::move(datasets);
  impl->context->runner_workers = std::max(1, options.workers);
  impl->context->worker_binary = options.worker_binary;
  impl->context->threads = options.threads;
  impl->context->serialize_runs = options.exclusive_measure;
  // Made here, on the thread that starts the server, not in a call on one of gRPC's
  // threads: its spawn thread, and every worker it starts, inherit their maker's
  // thread attributes (CPU affinity, signal mask).
  (void)impl->context->runner();
  impl->service = std::make_unique<TensorGymService>(options, impl->context, std::move(auth));

  std::shared_ptr<grpc::ServerCredentials> credentials;
  if (!options.tls_cert_file.empty()) {
    TG_ASSIGN_OR_RETURN(std::string cert, read_pem_file(options.tls_cert_file, "TLS certificate"));
    TG_ASSIGN_OR_RETURN(std::string key, read_pem_file(options.tls_key_file, "TLS key"));
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({key, cert});
    credentials = grpc::SslServerCredentials(ssl);
    if (tokens) credentials->SetAuthMetadataProcessor(std::make_shared<BearerTokenProcessor>(early_auth));
  } else {
    credentials = grpc::InsecureServerCredentials();
  }

  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  const std::string listen = host_port(options.host, options.port);
  builder.AddListeningPort(listen, credentials, &impl->port);
  builder.RegisterService(impl->service.get());
  builder.SetMaxReceiveMessageSize(int(options.max_message_bytes));
  builder.SetMaxSendMessageSize(-1);
  // Request bytes held at once, across connections: past it gRPC shrinks flow-control
  // windows and refuses new streams; and a connection opens a bounded number of calls.
  grpc::ResourceQuota quota("tensorgym-requests");
  quota.Resize(size_t(options.max_memory_in_flight_bytes));
  builder.SetResourceQuota(quota);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options.max_streams_per_connection);
  // A port already in use is an error, not a second server sharing it.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Batch clients ping every second to notice a dead server (or network) in about two;
  // accept their pings rather than answering them with GOAWAY.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 500);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  impl->server = builder.BuildAndStart();
  if (!impl->server || impl->port == 0)
    return Status(StatusCode::kUnavailable, "cannot listen on " + listen + " (address in use or not available)");
  if (grpc::HealthCheckServiceInterface* health = impl->server->GetHealthCheckService())
    health->SetServingStatus(kServiceName, true);
  Impl* raw = impl.get();
  impl->reaper = std::thread([raw] { raw->run_reaper(); });
  const bool tls = !options.tls_cert_file.empty();
  log(LogLevel::kInfo, "listening on " + host_port(options.host, impl->port) + (tokens ? " (token)" : "") +
                           (tls ? " (TLS)" : ""));
  if (tokens && !tls)
    log(LogLevel::kWarning,
        "WARNING: bearer tokens without TLS travel in plain text: anyone who can see this traffic can read a token "
        "and call as its client. Configure --tls-cert and --tls-key, or keep the server on loopback");
  std::string dirs;
  for (const std::string& d : impl->context->datasets->file_access().dirs()) dirs += (dirs.empty() ? "" : ", ") + d;
  log(LogLevel::kInfo, dirs.empty() ? std::string("file:// benchmarks: off (--allow-files DIR serves those below DIR)")
                                    : "file:// benchmarks: below " + dirs);
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

int Server::port() const { return impl_->port; }

std::string Server::address() const { return host_port(impl_->options.host, impl_->port); }

std::shared_ptr<grpc::Channel> Server::in_process_channel() {
  return impl_->server->InProcessChannel(grpc::ChannelArguments());
}

TensorGymService& Server::service() { return *impl_->service; }

const std::shared_ptr<EnvContext>& Server::context() const { return impl_->context; }

void Server::shutdown(std::chrono::steady_clock::duration grace) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->shut_down) return;
    impl_->shut_down = true;
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  if (impl_->reaper.joinable()) impl_->reaper.join();
  if (grpc::HealthCheckServiceInterface* health = impl_->server->GetHealthCheckService()) health->Shutdown();
  // The executor finishes (or, past the grace, cancels) the calls that measure while
  // gRPC waits for its handlers; both wait for the same calls.
  std::thread drain([this, grace] { impl_->service->shutdown(grace); });
  impl_->server->Shutdown(std::chrono::system_clock::now() +
                          std::chrono::duration_cast<std::chrono::system_clock::duration>(grace));
  drain.join();
  impl_->server->Wait();
  impl_->service->sessions().clear();
  if (impl_->context) impl_->context->runner().shutdown();
  log(LogLevel::kInfo, "stopped");
}

Status write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return invalid_argument("cannot write " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return invalid_argument("cannot write " + tmp + ": " + std::strerror(e));
    }
    done += size_t(n);
  }
  ::fsync(fd);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return invalid_argument("cannot rename " + tmp + " to " + path + ": " + std::strerror(e));
  }
  return Status();
}

namespace {

int g_signal_pipe[2] = {-1, -1};
std::atomic<int> g_signal{0};

void on_signal(int sig) {
  g_signal.store(sig);
  const char c = 1;
  ssize_t n = ::write(g_signal_pipe[1], &c, 1);
  (void)n;
}

}  // namespace

int run_server(const ServerOptions& options) {
  set_log_level(options.log_level);
  // Signals arrive through a pipe; handlers (not a blocked mask) so that the
  // measurement workers this process starts inherit nothing.
  if (::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    log(LogLevel::kError, std::string("pipe: ") + std::strerror(errno));
    return 1;
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  Expected<std::unique_ptr<Server>> server = Server::start(options);
  if (!server.ok()) {
    log(LogLevel::kError, server.status().to_string());
    return 1;
  }
  if (!options.port_file.empty()) {
    Status st = write_file_atomically(options.port_file, fmt::format("{}\n", (*server)->port()));
    if (!st.ok()) {
      log(LogLevel::kError, st.to_string());
      return 1;
    }
  }
  // Warm the measurement workers in the background: serving does not wait for them.
  std::shared_ptr<EnvContext> context = (*server)->context();
  std::thread warm([context] {
    Status st = context->runner().start_workers();
    if (!st.ok()) log(LogLevel::kWarning, "measurement workers did not start: " + st.to_string());
    else log(LogLevel::kInfo, "measurement workers run under: " + context->runner().worker_sandbox());
  });

  for (;;) {
    pollfd p{g_signal_pipe[0], POLLIN, 0};
    int r = ::poll(&p, 1, 200);
    if (r > 0) break;
    if (options.parent_pid > 0 && ::getppid() != options.parent_pid) {
      log(LogLevel::kWarning, fmt::format("the parent process {} is gone; exiting", options.parent_pid));
      break;
    }
  }
  if (int sig = g_signal.load()) log(LogLevel::kInfo, std::string("received ") + strsignal(sig) + "; shutting down");
  (*server)->shutdown(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(options.shutdown_grace_s)));
  warm.join();
  server->reset();
  if (!options.port_file.empty()) ::unlink(options.port_file.c_str());
  return 0;
}

}  // namespace tensorgym::service
