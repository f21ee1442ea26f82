#include "client/connection.h"

#include <fmt/format.h>
#include <grpcpp/impl/codegen/client_unary_call.h>
#include <grpcpp/support/byte_buffer.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "client/channel.h"
#include "client/connection_impl.h"
#include "client/dns_endpoint.h"
#include "client/remote_env.h"
#include "proto/rpc_status.h"
#include "proto/wire.h"
#include "support/credential_files.h"

namespace tensorgym::client {
namespace {

using Clock = std::chrono::steady_clock;

template <class TimePoint>
double seconds_left(TimePoint deadline) {
  return std::chrono::duration<double>(deadline - Clock::now()).count();
}

// grpc.health.v1.HealthCheckResponse.status (field 1, varint) from its encoding.
int health_status(const std::string& bytes) {
  for (size_t i = 0; i + 1 < bytes.size(); ++i)
    if (bytes[i] == 0x08) return static_cast<unsigned char>(bytes[i + 1]);
  return 0;  // UNKNOWN (proto3 leaves a zero field out)
}

}  // namespace

ConnectionImpl::ConnectionImpl(ConnectionOptions o) : options(std::move(o)) {}

ConnectionImpl::~ConnectionImpl() {
  std::unique_ptr<ManagedServer> managed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    backends_.clear();
    managed = std::move(managed_);
  }
  managed.reset();  // stops the service
}

std::shared_ptr<Backend> ConnectionImpl::make_backend(const std::string& target, uint64_t epoch) const {
  ChannelOptions channel;
  channel.tls = options.tls;
  channel.tls_roots = tls_roots_;
  channel.tls_name = tls_host_;
  channel.max_receive_bytes = options.max_message_bytes;
  auto b = std::make_shared<Backend>();
  b->target = target;
  b->channel = make_channel(target, channel);
  b->stub = proto::TensorGym::NewStub(b->channel);
  b->epoch = epoch;
  return b;
}

void ConnectionImpl::prepare(grpc::ClientContext* ctx, double timeout_s) const {
  const double t = timeout_s > 0 ? timeout_s : options.call_timeout_s;
  if (t > 0) ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::microseconds(int64_t(t * 1e6)));
  if (!token_.empty()) ctx->AddMetadata("authorization", "Bearer " + token_);
}

grpc::Status ConnectionImpl::probe(Backend& backend, double timeout_s, std::string* instance_id) const {
  grpc::ClientContext ctx;
  prepare(&ctx, std::max(0.001, timeout_s));
  ctx.set_wait_for_ready(true);  // wait for the channel to (re)connect, up to the deadline
  proto::GetVersionRequest request;
  proto::GetVersionResponse response;
  grpc::Status st = backend.stub->GetVersion(&ctx, request, &response);
  if (st.ok() && instance_id) *instance_id = response.instance_id();
  return st;
}

Status ConnectionImpl::resolve_endpoint(std::vector<std::string>* targets) {
  const std::string& e = options.endpoint;
  if (!is_dns_endpoint(e)) {
    targets->push_back(e);
    return Status();
  }
  // Resolved here, so that each session can stay on one address while new sessions
  // spread over all of them.
  TG_ASSIGN_OR_RETURN(std::vector<ResolvedAddress> addresses, resolve_dns_endpoint(e, &tls_host_));
  for (ResolvedAddress& a : addresses) targets->push_back(std::move(a.target));
  return Status();
}

Status ConnectionImpl::open() {
  if (!options.auth_token.empty()) {
    token_ = options.auth_token;
  } else if (!options.auth_token_file.empty()) {
    TG_ASSIGN_OR_RETURN(token_, read_token_file(options.auth_token_file));
  }
  if (!options.tls_ca_file.empty()) {
    TG_ASSIGN_OR_RETURN(tls_roots_, read_pem_file(options.tls_ca_file, "TLS CA file"));
  }
  const auto deadline = Clock::now() + std::chrono::duration<double>(std::max(1.0, options.startup_timeout_s));
  if (options.endpoint.empty()) {
    std::vector<std::string> args = options.server_args;
    if (std::find(args.begin(), args.end(), "--log-level") == args.end()) {
      args.push_back("--log-level");
      args.push_back("warning");
    }
    TG_ASSIGN_OR_RETURN(managed_, ManagedServer::start(options.server_binary, args, options.startup_timeout_s));
    backends_.push_back(make_backend(managed_->address(), 1));
  } else {
    std::vector<std::string> targets;
    TG_RETURN_IF_ERROR(resolve_endpoint(&targets));
    for (const std::string& t : targets) backends_.push_back(make_backend(t, 1));
  }
  // At least one server must answer (the others are tried again when used).
  grpc::Status last;
  for (;;) {
    for (std::shared_ptr<Backend>& b : backends_) {
      last = probe(*b, std::min(1.0, std::max(0.05, seconds_left(deadline))), &b->instance_id);
      if (last.ok()) return Status();
      if (last.error_code() != grpc::StatusCode::UNAVAILABLE &&
          last.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED)
        return rpc::from_grpc(last).with_context("service at " + b->target);
    }
    if (seconds_left(deadline) <= 0)
      return Status(StatusCode::kUnavailable,
                    "cannot reach the service at " + (options.endpoint.empty() ? backends_[0]->target : options.endpoint) +
                        ": " + last.error_message());
  }
}

size_t ConnectionImpl::num_backends() const {
  std::lock_guard<std::mutex> lock(mu_);
  return backends_.size();
}

std::shared_ptr<Backend> ConnectionImpl::backend(size_t index) const {
  std::lock_guard<std::mutex> lock(mu_);
  return backends_[index % backends_.size()];
}

size_t ConnectionImpl::next_backend() {
  const size_t n = num_backends();
  return n <= 1 ? 0 : round_robin_.fetch_add(1) % n;
}

pid_t ConnectionImpl::server_pid() const {
  std::lock_guard<std::mutex> lock(mu_);
  return managed_ ? managed_->pid() : 0;
}

std::string ConnectionImpl::address() const {
  std::lock_guard<std::mutex> lock(mu_);
  return managed_ ? managed_->address() : options.endpoint;
}

Status ConnectionImpl::recover(size_t* index, uint64_t seen_epoch) {
  std::lock_guard<std::mutex> recovering(recover_mu_);
  if (backend(*index)->epoch != seen_epoch) return Status();  // another call recovered it
  ++reconnects;
  bool managed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    managed = managed_ != nullptr;
  }
  return managed ? recover_managed(*index, seen_epoch) : recover_remote(index, seen_epoch);
}

Status ConnectionImpl::recover_managed(size_t index, uint64_t seen_epoch) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(options.reconnect_timeout_s);
  double backoff = options.backoff_initial_s;
  std::shared_ptr<Backend> old = backend(index);
  Status last;
  for (;;) {
    std::unique_ptr<ManagedServer> dead;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (managed_ && managed_->alive()) {
        lock.unlock();
        std::string instance;
        if (probe(*old, std::min(1.0, std::max(0.05, seconds_left(deadline))), &instance).ok() &&
            instance == old->instance_id)
          return Status();  // a passing failure; the service and its sessions are there
        lock.lock();
        if (managed_) managed_->kill_now();  // alive but not answering
      }
      dead = std::move(managed_);
    }
    dead.reset();
    std::vector<std::string> args = options.server_args;
    if (std::find(args.begin(), args.end(), "--log-level") == args.end()) {
      args.push_back("--log-level");
      args.push_back("warning");
    }
    Expected<std::unique_ptr<ManagedServer>> started =
        ManagedServer::start(options.server_binary, args, std::max(1.0, std::min(options.startup_timeout_s,
                                                                                  seconds_left(deadline))));
    if (started.ok()) {
      std::shared_ptr<Backend> b = make_backend((*started)->address(), seen_epoch + 1);
      grpc::Status st = probe(*b, std::max(1.0, seconds_left(deadline)), &b->instance_id);
      std::lock_guard<std::mutex> lock(mu_);
      managed_ = std::move(*started);
      backends_[index] = b;
      ++restarts;
      if (st.ok()) return Status();
      last = rpc::from_grpc(st);
    } else {
      last = started.status();
    }
    if (seconds_left(deadline) <= 0)
      return Status(StatusCode::kUnavailable,
                    fmt::format("the managed service stopped and could not be restarted within {:f} s: {}",
                                options.reconnect_timeout_s, last.message()));
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
    backoff = std::min(options.backoff_max_s, backoff * 2);
  }
}

Status ConnectionImpl::recover_remote(size_t* index, uint64_t seen_epoch) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(options.reconnect_timeout_s);
  double backoff = options.backoff_initial_s;
  const size_t n = num_backends();
  grpc::Status last;
  for (;;) {
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (*index + k) % n;
      std::shared_ptr<Backend> b = backend(i);
      std::string instance;
      last = probe(*b, std::min(1.0, std::max(0.05, seconds_left(deadline))), &instance);
      if (!last.ok()) continue;
      if (instance != b->instance_id) {
        // Another server process answers there now: its sessions are not ours.
        std::shared_ptr<Backend> fresh = std::make_shared<Backend>();
        fresh->target = b->target;
        fresh->channel = b->channel;
        fresh->stub = proto::TensorGym::NewStub(b->channel);
        fresh->epoch = b->epoch + 1;
        fresh->instance_id = instance;
        std::lock_guard<std::mutex> lock(mu_);
        backends_[i] = fresh;
      }
      *index = i;
      return Status();
    }
    if (seconds_left(deadline) <= 0)
      return Status(StatusCode::kUnavailable,
                    fmt::format("cannot reach the service at {} within {:f} s: {}", options.endpoint,
                                options.reconnect_timeout_s, last.error_message()));
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
    backoff = std::min(options.backoff_max_s, backoff * 2);
  }
  (void)seen_epoch;
}

void ConnectionImpl::remember_benchmark(const std::string& name, const std::string& program) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [n, p] : benchmarks_)
    if (n == name && p == program) return;
  benchmarks_.emplace_back(name, program);
}

Status ConnectionImpl::push_benchmarks(size_t index, double timeout_s) {
  std::shared_ptr<Backend> b;
  std::vector<std::pair<std::string, std::string>> todo;
  size_t total = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    b = backends_[index % backends_.size()];
    auto& [epoch, done] = pushed_[index % backends_.size()];
    if (epoch != b->epoch) {
      epoch = b->epoch;
      done = 0;
    }
    total = benchmarks_.size();
    if (done >= total) return Status();
    todo.assign(benchmarks_.begin() + long(done), benchmarks_.end());
  }
  for (const auto& [name, program] : todo) {
    grpc::ClientContext ctx;
    prepare(&ctx, timeout_s);
    proto::AddBenchmarkRequest request;
    request.set_name(name);
    request.set_program(program);
    proto::AddBenchmarkResponse response;
    grpc::Status st = b->stub->AddBenchmark(&ctx, request, &response);
    if (!st.ok()) return rpc::from_grpc(st).with_context("adding benchmark://user-v0/" + name + " again");
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto& [epoch, done] = pushed_[index % backends_.size()];
  if (epoch == b->epoch) done = std::max(done, total);
  return Status();
}

Expected<EnvSpaces> ConnectionImpl::spaces(const std::string& env) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = spaces_.find(env);
    if (it != spaces_.end()) return it->second;
  }
  proto::GetSpacesRequest request;
  request.set_env(env);
  proto::GetSpacesResponse response;
  grpc::Status st = call([&](Backend& b, grpc::ClientContext* ctx) {
    return b.stub->GetSpaces(ctx, request, &response);
  });
  if (!st.ok()) return rpc::from_grpc(st);
  EnvSpaces spaces;
  for (const proto::Space& p : response.action_space()) {
    TG_ASSIGN_OR_RETURN(Space s, Space::from_proto(p));
    spaces.action.push_back(std::move(s));
  }
  for (const proto::Space& p : response.observation_space()) {
    TG_ASSIGN_OR_RETURN(Space s, Space::from_proto(p));
    spaces.observation.push_back(std::move(s));
  }
  for (const proto::Space& p : response.reward_space()) {
    TG_ASSIGN_OR_RETURN(Space s, Space::from_proto(p));
    spaces.reward.push_back(std::move(s));
  }
  std::lock_guard<std::mutex> lock(mu_);
  return spaces_.emplace(env, std::move(spaces)).first->second;
}

// --- Connection ------------------------------------------------------------------

Connection::Connection(std::shared_ptr<ConnectionImpl> impl) : impl_(std::move(impl)) {}

Connection::~Connection() = default;

Expected<std::shared_ptr<Connection>> Connection::open(ConnectionOptions options) {
  auto impl = std::make_shared<ConnectionImpl>(std::move(options));
  TG_RETURN_IF_ERROR(impl->open());
  return std::shared_ptr<Connection>(new Connection(std::move(impl)));
}

const ConnectionOptions& Connection::options() const { return impl_->options; }
std::string Connection::address() const { return impl_->address(); }
bool Connection::managed() const { return impl_->options.endpoint.empty(); }
pid_t Connection::server_pid() const { return impl_->server_pid(); }

Expected<std::string> Connection::version() {
  proto::GetVersionResponse response;
  grpc::Status st = impl_->call([&](Backend& b, grpc::ClientContext* ctx) {
    return b.stub->GetVersion(ctx, proto::GetVersionRequest(), &response);
  });
  if (!st.ok()) return rpc::from_grpc(st);
  return response.service_version();
}

Expected<std::vector<std::string>> Connection::env_names() {
  proto::GetVersionResponse response;
  grpc::Status st = impl_->call([&](Backend& b, grpc::ClientContext* ctx) {
    return b.stub->GetVersion(ctx, proto::GetVersionRequest(), &response);
  });
  if (!st.ok()) return rpc::from_grpc(st);
  return std::vector<std::string>(response.env().begin(), response.env().end());
}

Expected<EnvSpaces> Connection::spaces(const std::string& env) { return impl_->spaces(env); }

Expected<std::vector<DatasetInfo>> Connection::datasets() {
  proto::ListDatasetsResponse response;
  grpc::Status st = impl_->call([&](Backend& b, grpc::ClientContext* ctx) {
    response.Clear();
    return b.stub->ListDatasets(ctx, proto::ListDatasetsRequest(), &response);
  });
  if (!st.ok()) return rpc::from_grpc(st);
  std::vector<DatasetInfo> out;
  for (const proto::DatasetInfo& d : response.dataset()) out.push_back({d.name(), d.description(), d.size()});
  return out;
}

Expected<BenchmarkPage> Connection::benchmarks(const std::string& dataset, int page_size,
                                               const std::string& page_token, int64_t offset) {
  proto::ListBenchmarksRequest request;
  request.set_offset(offset);
  request.set_dataset(dataset);
  request.set_page_size(page_size);
  request.set_page_token(page_token);
  proto::ListBenchmarksResponse response;
  grpc::Status st = impl_->call([&](Backend& b, grpc::ClientContext* ctx) {
    response.Clear();
    return b.stub->ListBenchmarks(ctx, request, &response);
  });
  if (!st.ok()) return rpc::from_grpc(st);
  BenchmarkPage page;
  for (const proto::BenchmarkInfo& b : response.benchmark()) page.benchmarks.push_back({b.uri(), b.shape()});
  page.next_page_token = response.next_page_token();
  return page;
}

Expected<std::string> Connection::add_benchmark(const std::string& name, const std::string& program) {
  proto::AddBenchmarkRequest request;
  request.set_name(name);
  request.set_program(program);
  proto::AddBenchmarkResponse response;
  // On every server (a dns:/// endpoint may have several): sessions may land on any.
  const size_t n = impl_->num_backends();
  for (size_t i = 0; i < n; ++i) {
    size_t index = i;
    for (int attempt = 0;; ++attempt) {
      std::shared_ptr<Backend> b = impl_->backend(index);
      grpc::ClientContext ctx;
      impl_->prepare(&ctx, 0);
      grpc::Status st = b->stub->AddBenchmark(&ctx, request, &response);
      if (st.ok()) break;
      if (st.error_code() != grpc::StatusCode::UNAVAILABLE || attempt >= ConnectionImpl::kMaxAttempts) {
        if (n > 1 && st.error_code() == grpc::StatusCode::UNAVAILABLE) break;  // pushed when that server is used
        return rpc::from_grpc(st);
      }
      size_t recovered = index;
      TG_RETURN_IF_ERROR(impl_->recover(&recovered, b->epoch));
      if (recovered != index) break;  // that server is away; pushed when it is used again
    }
  }
  impl_->remember_benchmark(name, program);
  return response.uri();
}

Expected<ValidationResult> Connection::validate(const EpisodeState& state, double tolerance) {
  proto::ValidateRequest request;
  wire::episode_state_to_proto(state, request.mutable_state());
  request.set_tolerance(tolerance);
  proto::ValidateResponse response;
  grpc::Status st = impl_->call([&](Backend& b, grpc::ClientContext* ctx) {
    response.Clear();
    return b.stub->Validate(ctx, request, &response);
  });
  if (!st.ok()) return rpc::from_grpc(st);
  ValidationResult out;
  out.ok = response.ok();
  out.error = response.error();
  for (const auto& [k, v] : response.replayed_reward()) out.replayed_rewards[k] = v;
  return out;
}

Expected<bool> Connection::serving() {
  grpc::ByteBuffer response;
  grpc::Status st = impl_->call([&](Backend& b, grpc::ClientContext* ctx) {
    grpc::internal::RpcMethod method("/grpc.health.v1.Health/Check", grpc::internal::RpcMethod::NORMAL_RPC);
    grpc::Slice empty;  // HealthCheckRequest{service: ""} (the whole server) encodes to no bytes
    grpc::ByteBuffer request(&empty, 1);
    return grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(b.channel.get(), method, ctx,
                                                                                  request, &response);
  });
  if (!st.ok()) return rpc::from_grpc(st);
  std::string bytes;
  std::vector<grpc::Slice> slices;
  if (response.Dump(&slices).ok())
    for (const grpc::Slice& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return health_status(bytes) == 1;
}

Expected<std::unique_ptr<RemoteEnv>> Connection::make_env(const std::string& name) {
  TG_ASSIGN_OR_RETURN(EnvSpaces spaces, impl_->spaces(name));
  return RemoteEnv::create(shared_from_this(), name, std::move(spaces));
}

Connection::Stats Connection::stats() const {
  Stats s;
  s.restarts = impl_->restarts.load();
  s.reconnects = impl_->reconnects.load();
  s.replays = impl_->replays.load();
  return s;
}

}  // namespace tensorgym::client
