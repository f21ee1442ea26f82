#include "client/batch_evaluator.h"

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "client/channel.h"
#include "client/dns_endpoint.h"
#include "client/managed_server.h"
#include "proto/tensorgym.grpc.pb.h"
#include "support/credential_files.h"

namespace tensorgym::client {
namespace {

using Clock = std::chrono::steady_clock;
using Stream = grpc::ClientReaderWriter<proto::EvaluateRequest, proto::EvaluateResponse>;

constexpr double kMaxQuarantineS = 60;
constexpr auto kTick = std::chrono::milliseconds(50);
constexpr auto kConnectTimeout = std::chrono::seconds(1);
constexpr double kPipelineMs = 20;  // work kept in flight per slot (adapt_window_locked)
constexpr int kMaxWindow = 256;
constexpr double kDrainProbeS = 5;
constexpr int kMaxStartFailures = 3;  // a draining endpoint still connected after this is probed
constexpr const char* kPreflightPrefix = "__preflight__/";

// kRefused: the endpoint turned the stream down for good (a token it does not accept,
// no Evaluate call), or a local service keeps exiting at start; retrying cannot help.
// kDraining: the endpoint answered a job UNAVAILABLE (it is shutting down, or the cache
// of programs sent in jobs is held full by running jobs): no new jobs
// until its stream ends, or a probe after kDrainProbeS finds it well after all.
enum class State { kConnecting, kPreflight, kReady, kQuarantined, kDown, kRefused, kDraining };

const char* state_name(State s) {
  switch (s) {
    case State::kConnecting: return "connecting";
    case State::kPreflight: return "preflight";
    case State::kReady: return "ready";
    case State::kQuarantined: return "quarantined";
    case State::kDown: return "down";
    case State::kRefused: return "refused";
    case State::kDraining: return "draining";
  }
  return "?";
}

std::string class_name(proto::JobError error) { return job_error_class(error); }

// Failures that say nothing about the job itself: it is sent again. (Not
// RESOURCE_EXHAUSTED: a job past a memory cap passes it wherever it runs.)
bool worker_level(proto::JobError error) {
  return error == proto::JOB_WORKER_LOST || error == proto::JOB_UNAVAILABLE;
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

struct Address {
  std::string name;      // "10.0.0.7:50051"
  std::string target;    // the gRPC target
  std::string tls_name;  // the name a dns: endpoint was resolved from (its certificate's)
};

// The addresses of a dns: endpoint; any other endpoint is its own target.
Status resolve(const std::string& endpoint, std::vector<Address>* out) {
  if (!is_dns_endpoint(endpoint)) {
    if (endpoint.rfind(':') == std::string::npos || endpoint.back() == ':')
      return invalid_argument("endpoint '" + endpoint + "' is not host:port or dns:///name:port");
    out->push_back({endpoint, endpoint, ""});
    return Status();
  }
  std::string host;
  TG_ASSIGN_OR_RETURN(std::vector<ResolvedAddress> addresses, resolve_dns_endpoint(endpoint, &host));
  for (ResolvedAddress& a : addresses) out->push_back({std::move(a.name), std::move(a.target), host});
  return Status();
}

// One Evaluate call on an endpoint.
struct Call {
  grpc::ClientContext ctx;
  std::unique_ptr<Stream> rw;
  std::mutex write_mu;    // held by a Write, and by Finish
  bool finished = false;  // guarded by write_mu
};

struct Endpoint {
  size_t index = 0;
  bool local = false;
  std::thread reader;  // connects, reads results, reconnects
  std::thread writer;  // writes the outbox

  // Guarded by the evaluator's mutex.
  std::string name;    // the address
  std::string target;  // the gRPC target
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<proto::TensorGym::Stub> stub;
  std::unique_ptr<ManagedServer> managed;
  pid_t pid = 0;
  State state = State::kConnecting;
  Clock::time_point state_since = Clock::now();
  std::shared_ptr<Call> call;
  std::deque<proto::EvaluateRequest> outbox;
  std::condition_variable outbox_cv;  // with the evaluator's mutex: outbox or call changed, or stopping
  int window = 1;
  int concurrency = 1;  // from the greeting
  int max_window = 1;   // what the endpoint takes without refusing: its stream's queue
  double job_ms = -1;   // moving average of the endpoint's execution time per job (-1: none yet)
  int start_failures = 0;  // local: consecutive starts that exited before the service was ready
  std::unordered_set<size_t> in_flight;  // job indices of the current run
  int worker_failures = 0;               // consecutive
  double backoff_s = 0;
  double quarantine_s = 0;
  Clock::time_point quarantine_until;
  std::string preflight_key;  // the probe in flight
  bool greeted = false;       // the current call said hello
  EndpointReport report;
};

}  // namespace

class BatchEvaluator::Impl {
 public:
  explicit Impl(BatchOptions o) : options(std::move(o)) {}
  ~Impl() { stop(); }

  Status init();
  void stop();
  BatchSummary run(const std::vector<BatchJob>& jobs, const ResultSink& on_result, const ProgressSink& on_progress,
                   double period_s);
  std::vector<EndpointReport> reports() const;
  std::vector<pid_t> local_pids() const;
  bool wait_ready(int n, double timeout_s);

  const BatchOptions options;

 private:
  struct JobState {
    proto::EvaluateJob wire;
    int attempts = 0;
    int endpoint = -1;       // where it is in flight
    int last_endpoint = -1;  // where it went last
    bool final = false;
  };

  std::shared_ptr<grpc::Channel> endpoint_channel(const std::string& target, const std::string& tls_name) const;
  void start_endpoint_locked(std::unique_ptr<Endpoint> e);
  void add_remote_locked(const Address& address);
  void run_resolver();
  void run_reader(Endpoint& e);
  void run_writer(Endpoint& e);
  Status ensure_local(Endpoint& e);
  void handle_response(Endpoint& e, const proto::EvaluateResponse& response);
  void adapt_window_locked(Endpoint& e, double job_ms);
  void lost_locked(Endpoint& e, const std::string& why, std::vector<BatchResult>* finals);
  void set_state_locked(Endpoint& e, State s);
  void send_preflight_locked(Endpoint& e);
  void quarantine_locked(Endpoint& e, const std::string& why);
  void tick_locked(Clock::time_point now);
  void dispatch_locked();
  Endpoint* choose_locked(const JobState& job);
  BatchResult final_result_locked(size_t j, const proto::JobResult* r, Endpoint* e, const std::string& error,
                                  const std::string& message);
  void deliver(std::vector<BatchResult> finals);
  int ready_count_locked() const;
  bool all_refused_locked() const;
  BatchProgress progress_locked(Clock::time_point start) const;
  void sleep_locked(std::unique_lock<std::mutex>& lock, double s);

  std::string token_;
  std::string tls_roots_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;  // grows (under mu_) when a dns: name gets addresses
  std::set<std::string> remote_names_;                 // under mu_
  std::vector<std::string> dns_names_;                 // fixed after init()
  std::thread resolver_;

  mutable std::mutex mu_;
  std::condition_variable cv_;         // results, endpoint states
  std::condition_variable stop_cv_;    // backoff sleeps
  bool stopping_ = false;
  uint64_t preflight_counter_ = 0;
  size_t round_robin_ = 0;

  // The current run, guarded by mu_.
  bool running_ = false;
  std::vector<JobState> jobs_;
  std::unordered_map<std::string, size_t> by_key_;
  std::deque<size_t> pending_;
  int64_t final_ = 0, ok_ = 0, failed_ = 0, retried_ = 0, duplicates_ = 0;
  int64_t delivering_ = 0;  // final results on their way to the sink
  std::map<std::string, int64_t> by_error_;
  const ResultSink* sink_ = nullptr;

  std::mutex sink_mu_;  // one sink call at a time
  std::mutex run_mu_;   // one run at a time
};

// --- set-up and shut-down ----------------------------------------------------------

std::shared_ptr<grpc::Channel> BatchEvaluator::Impl::endpoint_channel(const std::string& target,
                                                                       const std::string& tls_name) const {
  ChannelOptions channel;
  channel.tls = options.tls;
  channel.tls_roots = tls_roots_;
  channel.tls_name = tls_name;
  channel.keepalive_s = options.keepalive_s;
  channel.keepalive_timeout_s = options.keepalive_timeout_s;
  return make_channel(target, channel);
}

Status BatchEvaluator::Impl::init() {
  if (options.max_attempts < 1) return invalid_argument("max_attempts must be at least 1");
  if (options.max_in_flight < 0) return invalid_argument("max_in_flight must be >= 0");
  if (options.max_jobs_per_message < 1) return invalid_argument("max_jobs_per_message must be at least 1");
  if (!options.auth_token.empty()) {
    token_ = options.auth_token;
  } else if (!options.auth_token_file.empty()) {
    TG_ASSIGN_OR_RETURN(token_, read_token_file(options.auth_token_file));
  }
  if (!options.tls_ca_file.empty()) {
    TG_ASSIGN_OR_RETURN(tls_roots_, read_pem_file(options.tls_ca_file, "TLS CA file"));
  }
  if (options.resolve_period_s < 0) return invalid_argument("resolve_period_s must be >= 0");
  if (!options.endpoints.empty()) {
    std::vector<Address> addresses;
    for (const std::string& spec : options.endpoints) {
      TG_RETURN_IF_ERROR(resolve(spec, &addresses));
      if (spec.rfind("dns:", 0) == 0) dns_names_.push_back(spec);
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (const Address& a : addresses) add_remote_locked(a);
    if (!dns_names_.empty() && options.resolve_period_s > 0) resolver_ = std::thread([this] { run_resolver(); });
    return Status();
  }
  if (options.local_instances < 1) return invalid_argument("give endpoints, or at least one local instance");
  const std::string binary = options.server_binary.empty() ? ManagedServer::default_binary() : options.server_binary;
  if (binary.empty())
    return not_found("cannot find the tensorgym executable to start local services; set server_binary or "
                     "$TENSORGYM_BINARY");
  std::lock_guard<std::mutex> lock(mu_);
  for (int i = 0; i < options.local_instances; ++i) {
    auto e = std::make_unique<Endpoint>();
    e->local = true;
    e->name = fmt::format("local-{}", i);
    start_endpoint_locked(std::move(e));
  }
  return Status();
}

void BatchEvaluator::Impl::start_endpoint_locked(std::unique_ptr<Endpoint> owned) {
  Endpoint& e = *owned;
  e.index = endpoints_.size();
  e.backoff_s = options.reconnect_initial_s;
  e.quarantine_s = options.quarantine_s;
  e.report.name = e.name;
  endpoints_.push_back(std::move(owned));  // the threads wait for mu_, held by the caller
  e.reader = std::thread([this, &e] { run_reader(e); });
  e.writer = std::thread([this, &e] { run_writer(e); });
}

void BatchEvaluator::Impl::add_remote_locked(const Address& address) {
  if (!remote_names_.insert(address.name).second) return;  // one endpoint per address
  auto e = std::make_unique<Endpoint>();
  e->name = address.name;
  e->target = address.target;
  e->channel = endpoint_channel(address.target, address.tls_name);
  e->stub = proto::TensorGym::NewStub(e->channel);
  start_endpoint_locked(std::move(e));
}

// dns: names are resolved again now and then: addresses that appear (a Deployment
// scaled up, a pod replaced) become endpoints; those that go away are down already.
void BatchEvaluator::Impl::run_resolver() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    sleep_locked(lock, options.resolve_period_s);
    if (stopping_) return;
    lock.unlock();
    std::vector<Address> found;
    for (const std::string& name : dns_names_) (void)resolve(name, &found);  // a failed lookup keeps what we have
    lock.lock();
    if (stopping_) return;
    for (const Address& a : found) add_remote_locked(a);
  }
}

void BatchEvaluator::Impl::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && endpoints_.empty()) return;
    stopping_ = true;
    for (auto& e : endpoints_)
      if (e->call) e->call->ctx.TryCancel();
  }
  cv_.notify_all();
  stop_cv_.notify_all();
  if (resolver_.joinable()) resolver_.join();  // endpoints_ changes no more
  for (auto& e : endpoints_) e->outbox_cv.notify_all();
  for (auto& e : endpoints_) {
    if (e->reader.joinable()) e->reader.join();
    if (e->writer.joinable()) e->writer.join();
  }
  std::vector<std::unique_ptr<ManagedServer>> servers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& e : endpoints_)
      if (e->managed) servers.push_back(std::move(e->managed));
    endpoints_.clear();
  }
  servers.clear();  // SIGTERM each, then reap
}

void BatchEvaluator::Impl::sleep_locked(std::unique_lock<std::mutex>& lock, double s) {
  stop_cv_.wait_for(lock, std::chrono::duration<double>(s), [&] { return stopping_; });
}

// --- an endpoint's threads ---------------------------------------------------------

Status BatchEvaluator::Impl::ensure_local(Endpoint& e) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (e.managed && e.managed->alive()) return Status();
  }
  std::unique_ptr<ManagedServer> dead;
  bool restart = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    dead = std::move(e.managed);
    restart = dead != nullptr;
    e.pid = 0;
  }
  dead.reset();  // reaps it
  std::vector<std::string> args = options.server_args;
  if (std::find(args.begin(), args.end(), "--log-level") == args.end()) {
    args.push_back("--log-level");
    args.push_back("warning");
  }
  Expected<std::unique_ptr<ManagedServer>> started =
      ManagedServer::start(options.server_binary, args, options.startup_timeout_s);
  if (!started.ok()) return started.status();
  std::shared_ptr<grpc::Channel> channel = endpoint_channel((*started)->address(), "");
  std::lock_guard<std::mutex> lock(mu_);
  e.name = (*started)->address();
  e.target = e.name;
  e.pid = (*started)->pid();
  e.managed = std::move(*started);
  e.channel = std::move(channel);
  e.stub = proto::TensorGym::NewStub(e.channel);
  e.report.name = e.name;
  if (restart) ++e.report.restarts;
  return Status();
}

void BatchEvaluator::Impl::run_reader(Endpoint& e) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (e.local) {
      lock.unlock();
      Status st = ensure_local(e);
      lock.lock();
      if (!st.ok()) {
        e.report.last_error = st.message();
        // A service that exits before it is ready, again and again, is misconfigured
        // (its flags, its binary): starting it a fourth time will not help.
        if (st.message().find("before it was ready") != std::string::npos && ++e.start_failures >= kMaxStartFailures) {
          fmt::format_to(std::back_inserter(e.report.last_error), " [{} times in a row: check server_args]",
                         e.start_failures);
          set_state_locked(e, State::kRefused);
          break;
        }
        set_state_locked(e, State::kDown);
        sleep_locked(lock, e.backoff_s);
        e.backoff_s = std::min(options.reconnect_max_s, e.backoff_s * 2);
        continue;
      }
      e.start_failures = 0;
      if (stopping_) break;
    }
    auto call = std::make_shared<Call>();
    if (!token_.empty()) call->ctx.AddMetadata("authorization", "Bearer " + token_);
    proto::TensorGym::Stub* stub = e.stub.get();
    std::shared_ptr<grpc::Channel> channel = e.channel;
    set_state_locked(e, State::kConnecting);
    e.greeted = false;
    lock.unlock();
    // Opening the stream blocks until the connection is up, and a peer that accepts
    // TCP but never speaks (frozen, or a black hole) would hold this thread, and
    // stop(), forever: connect first, with a bound.
    if (!channel->WaitForConnected(std::chrono::system_clock::now() + kConnectTimeout)) {
      lock.lock();
      e.report.last_error = e.name + ": cannot connect";
      set_state_locked(e, State::kDown);
      sleep_locked(lock, e.backoff_s);
      e.backoff_s = std::min(options.reconnect_max_s, e.backoff_s * 2);
      continue;
    }
    call->rw = stub->Evaluate(&call->ctx);
    lock.lock();
    e.call = call;
    if (stopping_) call->ctx.TryCancel();
    lock.unlock();

    proto::EvaluateResponse response;
    if (call->rw->Read(&response) && response.result_size() == 0 && !response.instance_id().empty()) {
      lock.lock();
      e.greeted = true;
      e.concurrency = std::max(1, response.concurrency());
      // Not counting the running jobs: a slot answers its job before it takes the next,
      // so a job sent on that answer can find the queue still full.
      e.max_window = std::max(1, response.max_queued_jobs());
      e.window = std::min(e.max_window, options.max_in_flight > 0 ? options.max_in_flight : 2 * e.concurrency);
      e.report.instance_id = response.instance_id();
      send_preflight_locked(e);
      lock.unlock();
      response.Clear();
      while (call->rw->Read(&response)) {
        handle_response(e, response);
        response.Clear();
      }
    }
    // The stream ended: its unfinished jobs go back to the queue before anything else.
    std::vector<BatchResult> finals;
    lock.lock();
    const bool was_greeted = e.greeted;
    lost_locked(e, "the stream to " + e.name + " ended", &finals);
    lock.unlock();
    deliver(std::move(finals));
    grpc::Status status;
    {
      std::lock_guard<std::mutex> w(call->write_mu);
      call->finished = true;
      status = call->rw->Finish();
    }
    lock.lock();
    if (!status.ok()) e.report.last_error = e.name + ": " + status.error_message();
    if (was_greeted) ++e.report.streams_lost;
    if (stopping_) break;
    if (status.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
        status.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
        status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      e.report.last_error += std::string(" [") + (status.error_code() == grpc::StatusCode::UNIMPLEMENTED
                                                      ? "UNIMPLEMENTED: the service has no Evaluate call"
                                                      : "UNAUTHENTICATED: check the token") + "]";
      set_state_locked(e, State::kRefused);
      break;
    }
    sleep_locked(lock, e.backoff_s);
    e.backoff_s = std::min(options.reconnect_max_s, e.backoff_s * 2);
  }
}

void BatchEvaluator::Impl::run_writer(Endpoint& e) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    e.outbox_cv.wait(lock, [&] { return stopping_ || (e.call && !e.outbox.empty()); });
    if (stopping_) return;
    std::shared_ptr<Call> call = e.call;
    proto::EvaluateRequest request = std::move(e.outbox.front());
    e.outbox.pop_front();
    // Whatever else is waiting goes in the same message.
    while (!e.outbox.empty() && request.job_size() < options.max_jobs_per_message) {
      proto::EvaluateRequest& next = e.outbox.front();
      if (request.job_size() + next.job_size() > options.max_jobs_per_message) break;
      for (proto::EvaluateJob& j : *next.mutable_job()) *request.add_job() = std::move(j);
      e.outbox.pop_front();
    }
    lock.unlock();
    bool ok = false;
    {
      std::lock_guard<std::mutex> w(call->write_mu);
      ok = !call->finished && call->rw->Write(request);
    }
    if (!ok) call->ctx.TryCancel();  // the reader sees the stream end and puts the jobs back
    lock.lock();
  }
}

void BatchEvaluator::Impl::set_state_locked(Endpoint& e, State s) {
  if (e.state != s) {
    e.state = s;
    e.state_since = Clock::now();
  }
  cv_.notify_all();
}

void BatchEvaluator::Impl::send_preflight_locked(Endpoint& e) {
  proto::EvaluateRequest request;
  proto::EvaluateJob* job = request.add_job();
  e.preflight_key = fmt::format("{}{}", kPreflightPrefix, ++preflight_counter_);
  job->set_key(e.preflight_key);
  job->set_env("schedule-v0");
  job->set_benchmark("benchmark://ops-v0/gmm-1");
  job->add_observations("flops");
  if (options.preflight_measure) {
    job->add_observations("runtime");  // compiles, runs and checks a small kernel
    (*job->mutable_parameters())["runner.repeat"] = "1";
    (*job->mutable_parameters())["runner.min_repeat_ms"] = "1";
  }
  e.outbox.push_front(std::move(request));
  set_state_locked(e, State::kPreflight);
  e.outbox_cv.notify_one();
}

void BatchEvaluator::Impl::quarantine_locked(Endpoint& e, const std::string& why) {
  e.quarantine_until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(e.quarantine_s));
  e.quarantine_s = std::min(kMaxQuarantineS, e.quarantine_s * 2);
  e.preflight_key.clear();
  e.report.last_error = why;
  ++e.report.quarantines;
  set_state_locked(e, State::kQuarantined);
}

void BatchEvaluator::Impl::lost_locked(Endpoint& e, const std::string& why, std::vector<BatchResult>* finals) {
  e.call.reset();
  e.outbox.clear();
  e.preflight_key.clear();
  set_state_locked(e, State::kDown);
  if (!running_) e.in_flight.clear();
  for (size_t j : e.in_flight) {
    JobState& js = jobs_[j];
    if (js.final) continue;
    js.endpoint = -1;
    if (js.attempts >= options.max_attempts) {
      finals->push_back(
          final_result_locked(j, nullptr, &e, "UNAVAILABLE",
                              fmt::format("sent {} times; no answer came back (last: {})", js.attempts, why)));
    } else {
      pending_.push_front(j);
    }
  }
  e.in_flight.clear();
  cv_.notify_all();
}

BatchResult BatchEvaluator::Impl::final_result_locked(size_t j, const proto::JobResult* r, Endpoint* e,
                                                      const std::string& error, const std::string& message) {
  JobState& js = jobs_[j];
  BatchResult out;
  if (r) out = result_from_proto(js.wire, *r);
  out.key = js.wire.key();
  out.error = error;
  out.message = message;
  out.benchmark = js.wire.benchmark();
  out.attempts = js.attempts;
  if (e) out.endpoint = e->name;
  js.final = true;
  ++final_;
  ++delivering_;
  (out.ok() ? ok_ : failed_) += 1;
  ++by_error_[out.error];
  if (e) (out.ok() ? e->report.done : e->report.failed) += 1;
  return out;
}

void BatchEvaluator::Impl::deliver(std::vector<BatchResult> finals) {
  if (finals.empty()) return;
  const ResultSink* sink = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sink = sink_;  // stays valid: run() waits for delivering_ to reach 0
  }
  {
    std::lock_guard<std::mutex> lock(sink_mu_);
    for (const BatchResult& r : finals)
      if (sink && *sink) (*sink)(r);
  }
  std::lock_guard<std::mutex> lock(mu_);
  delivering_ -= int64_t(finals.size());
  if (delivering_ == 0) cv_.notify_all();
}

// The window keeps about kPipelineMs of work in flight beyond the slots, so that cheap
// jobs travel many to a message (each message costs more than a cheap job) while
// costly ones are not piled up on one endpoint at the end of a batch.
void BatchEvaluator::Impl::adapt_window_locked(Endpoint& e, double job_ms) {
  if (options.max_in_flight > 0 || !(job_ms >= 0)) return;
  e.job_ms = e.job_ms < 0 ? job_ms : 0.9 * e.job_ms + 0.1 * job_ms;
  const double per_slot = kPipelineMs / std::max(e.job_ms, 0.001);
  e.window = std::clamp(int(double(e.concurrency) * per_slot), 2 * e.concurrency, std::max(kMaxWindow, 2 * e.concurrency));
  e.window = std::min(e.window, e.max_window);
}

void BatchEvaluator::Impl::handle_response(Endpoint& e, const proto::EvaluateResponse& response) {
  std::vector<BatchResult> finals;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const proto::JobResult& r : response.result()) {
      if (r.key().rfind(kPreflightPrefix, 0) == 0) {
        if (r.key() != e.preflight_key) continue;  // an older probe
        e.preflight_key.clear();
        if (r.error() == proto::JOB_OK) {
          e.backoff_s = options.reconnect_initial_s;
          e.worker_failures = 0;
          set_state_locked(e, State::kReady);
        } else {
          quarantine_locked(e, "the preflight job failed on " + e.name + ": " + class_name(r.error()) + ": " +
                                   r.error_message());
        }
        continue;
      }
      auto it = by_key_.find(r.key());
      if (!running_ || it == by_key_.end()) continue;  // a job of an earlier run
      const size_t j = it->second;
      JobState& js = jobs_[j];
      e.in_flight.erase(j);
      if (js.endpoint == int(e.index)) js.endpoint = -1;
      if (js.final) {
        ++duplicates_;
        continue;
      }
      adapt_window_locked(e, r.run_ms() + r.compile_ms());
      if (r.error() == proto::JOB_UNAVAILABLE) {
        // The service is going away (or refused more than it queues): not a sick one.
        if (e.state == State::kReady) set_state_locked(e, State::kDraining);
        e.report.last_error = e.name + ": " + r.error_message();
      } else if (r.error() == proto::JOB_WORKER_LOST) {
        if (++e.worker_failures >= options.quarantine_after && e.state == State::kReady)
          quarantine_locked(e, fmt::format("{} jobs in a row failed on {} (last: {}: {})", e.worker_failures, e.name,
                                           class_name(r.error()), r.error_message()));
      }
      if (worker_level(r.error())) {
        if (js.attempts < options.max_attempts) {
          pending_.push_front(j);  // again, elsewhere when it can
          continue;
        }
      } else {
        e.worker_failures = 0;
        if (r.error() == proto::JOB_OK) e.quarantine_s = options.quarantine_s;
      }
      finals.push_back(final_result_locked(j, &r, &e, class_name(r.error()), r.error_message()));
    }
    // Refill the window from here: a result frees a slot, and waking the run loop for
    // it would cost a thread switch per job.
    if (running_) dispatch_locked();
    if (final_ == int64_t(jobs_.size())) cv_.notify_all();
  }
  deliver(std::move(finals));
}

// --- dispatching -------------------------------------------------------------------

bool BatchEvaluator::Impl::all_refused_locked() const {
  return std::all_of(endpoints_.begin(), endpoints_.end(), [](const auto& e) { return e->state == State::kRefused; });
}

int BatchEvaluator::Impl::ready_count_locked() const {
  int n = 0;
  for (const auto& e : endpoints_) n += e->state == State::kReady;
  return n;
}

void BatchEvaluator::Impl::tick_locked(Clock::time_point now) {
  const auto preflight_timeout = std::chrono::duration<double>(options.preflight_timeout_s);
  for (auto& ep : endpoints_) {
    Endpoint& e = *ep;
    if ((e.state == State::kConnecting || e.state == State::kPreflight) && e.call &&
        now - e.state_since > preflight_timeout) {
      e.report.last_error =
          fmt::format("{}: no answer to the preflight job within {:f} s", e.name, options.preflight_timeout_s);
      e.call->ctx.TryCancel();  // the reader reconnects
    }
    if (e.state == State::kQuarantined && e.call && now >= e.quarantine_until) send_preflight_locked(e);
    if (e.state == State::kDraining && e.call && now - e.state_since > std::chrono::duration<double>(kDrainProbeS))
      send_preflight_locked(e);
  }
}

Endpoint* BatchEvaluator::Impl::choose_locked(const JobState& job) {
  Endpoint* best = nullptr;
  int best_free = 0;
  const size_t n = endpoints_.size();
  for (size_t k = 0; k < n; ++k) {
    Endpoint& e = *endpoints_[(round_robin_ + k) % n];
    if (e.state != State::kReady) continue;
    const int free = e.window - int(e.in_flight.size());
    if (free <= 0) continue;
    // A job sent again avoids the endpoint that failed it, when another has room.
    if (job.attempts > 0 && int(e.index) == job.last_endpoint) continue;
    if (free > best_free) {
      best = &e;
      best_free = free;
    }
  }
  if (!best && job.attempts > 0) {  // only the endpoint that failed it has room
    for (auto& e : endpoints_)
      if (e->state == State::kReady && e->window > int(e->in_flight.size())) return e.get();
  }
  if (best) round_robin_ = (best->index + 1) % n;
  return best;
}

void BatchEvaluator::Impl::dispatch_locked() {
  std::map<size_t, proto::EvaluateRequest> batches;
  while (!pending_.empty()) {
    const size_t j = pending_.front();
    JobState& js = jobs_[j];
    if (js.final) {
      pending_.pop_front();
      continue;
    }
    Endpoint* e = choose_locked(js);
    if (!e) break;
    pending_.pop_front();
    if (js.attempts > 0) ++retried_;
    ++js.attempts;
    js.endpoint = int(e->index);
    js.last_endpoint = int(e->index);
    e->in_flight.insert(j);
    proto::EvaluateRequest& batch = batches[e->index];
    *batch.add_job() = js.wire;
    if (batch.job_size() >= options.max_jobs_per_message) {
      e->outbox.push_back(std::move(batch));
      batches.erase(e->index);
    }
  }
  for (auto& [index, batch] : batches) endpoints_[index]->outbox.push_back(std::move(batch));
  for (auto& e : endpoints_)
    if (!e->outbox.empty()) e->outbox_cv.notify_one();
}

BatchProgress BatchEvaluator::Impl::progress_locked(Clock::time_point start) const {
  BatchProgress p;
  p.total = int64_t(jobs_.size());
  p.done = final_;
  p.failed = failed_;
  p.retried = retried_;
  for (const auto& e : endpoints_) p.in_flight += int64_t(e->in_flight.size());
  p.ready_endpoints = ready_count_locked();
  p.elapsed_s = seconds(Clock::now() - start);
  p.rate = p.elapsed_s > 0 ? double(p.done) / p.elapsed_s : 0;
  p.eta_s = p.rate > 0 ? double(p.total - p.done) / p.rate : -1;
  return p;
}

BatchSummary BatchEvaluator::Impl::run(const std::vector<BatchJob>& jobs, const ResultSink& on_result,
                                       const ProgressSink& on_progress, double period_s) {
  std::lock_guard<std::mutex> one_run(run_mu_);
  const Clock::time_point start = Clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  jobs_.clear();
  by_key_.clear();
  pending_.clear();
  final_ = ok_ = failed_ = retried_ = duplicates_ = 0;
  by_error_.clear();
  for (const BatchJob& job : jobs) {
    JobState js;
    proto::EvaluateJob& w = js.wire;
    job_to_proto(job, &w);
    if (w.key().empty()) w.set_key(job_content_key(job));
    if (by_key_.count(w.key())) continue;
    by_key_[w.key()] = jobs_.size();
    pending_.push_back(jobs_.size());
    jobs_.push_back(std::move(js));
  }
  for (auto& e : endpoints_) e->in_flight.clear();
  sink_ = &on_result;
  running_ = true;
  // The preflight's keys are the evaluator's: a job under one would never be answered.
  std::vector<BatchResult> reserved;
  for (size_t j = 0; j < jobs_.size(); ++j)
    if (jobs_[j].wire.key().rfind(kPreflightPrefix, 0) == 0)
      reserved.push_back(final_result_locked(j, nullptr, nullptr, "MALFORMED",
                                             std::string("keys starting with ") + kPreflightPrefix +
                                                 " are reserved for the evaluator's health checks"));
  if (!reserved.empty()) {
    lock.unlock();
    deliver(std::move(reserved));
    lock.lock();
  }

  Clock::time_point last_ready = start;
  Clock::time_point last_progress = start;
  BatchSummary summary;
  while ((final_ < int64_t(jobs_.size()) || delivering_ > 0) && !stopping_) {
    const Clock::time_point now = Clock::now();
    tick_locked(now);
    dispatch_locked();
    int64_t in_flight = 0;
    for (const auto& e : endpoints_) in_flight += int64_t(e->in_flight.size());
    if (ready_count_locked() > 0 || in_flight > 0) {
      last_ready = now;
    } else if (!pending_.empty() && (seconds(now - last_ready) > options.give_up_s || all_refused_locked())) {
      break;  // nowhere to run the rest
    }
    if (on_progress && seconds(now - last_progress) >= period_s) {
      last_progress = now;
      BatchProgress p = progress_locked(start);
      lock.unlock();
      on_progress(p);
      lock.lock();
    }
    cv_.wait_for(lock, kTick);
  }
  for (size_t j : pending_)
    if (!jobs_[j].final) summary.unfinished.push_back(jobs_[j].wire.key());
  running_ = false;
  pending_.clear();
  for (auto& e : endpoints_) e->in_flight.clear();
  cv_.wait(lock, [&] { return delivering_ == 0; });
  sink_ = nullptr;
  if (on_progress) {
    BatchProgress p = progress_locked(start);
    lock.unlock();
    on_progress(p);
    lock.lock();
  }
  summary.jobs = int64_t(jobs_.size());
  summary.results = final_;
  summary.ok = ok_;
  summary.failed = failed_;
  summary.retried = retried_;
  summary.duplicates = duplicates_;
  summary.by_error = by_error_;
  summary.wall_s = seconds(Clock::now() - start);
  summary.jobs_per_s = summary.wall_s > 0 ? double(final_) / summary.wall_s : 0;
  lock.unlock();
  summary.endpoints = reports();
  return summary;
}

std::vector<EndpointReport> BatchEvaluator::Impl::reports() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<EndpointReport> out;
  for (const auto& e : endpoints_) {
    EndpointReport r = e->report;
    r.name = e->name;
    r.state = state_name(e->state);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<pid_t> BatchEvaluator::Impl::local_pids() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<pid_t> out;
  for (const auto& e : endpoints_)
    if (e->local) out.push_back(e->pid);
  return out;
}

bool BatchEvaluator::Impl::wait_ready(int n, double timeout_s) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return ready_count_locked() >= n; });
}

// --- BatchEvaluator ----------------------------------------------------------------

BatchEvaluator::BatchEvaluator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

BatchEvaluator::~BatchEvaluator() = default;

Expected<std::unique_ptr<BatchEvaluator>> BatchEvaluator::create(BatchOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  TG_RETURN_IF_ERROR(impl->init());
  return std::unique_ptr<BatchEvaluator>(new BatchEvaluator(std::move(impl)));
}

BatchSummary BatchEvaluator::run(const std::vector<BatchJob>& jobs, const ResultSink& on_result,
                                 const ProgressSink& on_progress, double progress_period_s) {
  return impl_->run(jobs, on_result, on_progress, progress_period_s);
}

std::vector<BatchResult> BatchEvaluator::evaluate(const std::vector<BatchJob>& jobs, BatchSummary* summary) {
  std::vector<std::string> keys;
  std::unordered_map<std::string, std::vector<size_t>> where;
  for (size_t i = 0; i < jobs.size(); ++i) {
    keys.push_back(jobs[i].key.empty() ? job_content_key(jobs[i]) : jobs[i].key);
    where[keys.back()].push_back(i);
  }
  std::vector<BatchResult> out(jobs.size());
  std::vector<bool> have(jobs.size(), false);
  BatchSummary s = run(jobs, [&](const BatchResult& r) {
    auto it = where.find(r.key);
    if (it == where.end()) return;
    for (size_t i : it->second) {
      out[i] = r;
      have[i] = true;
    }
  });
  std::string why = "no endpoint could run the job";
  for (const EndpointReport& e : s.endpoints)
    if (!e.last_error.empty()) {
      why += " (last error: " + e.last_error + ")";
      break;
    }
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (have[i]) continue;
    out[i].key = keys[i];
    out[i].benchmark = jobs[i].benchmark;
    out[i].error = "UNAVAILABLE";
    out[i].message = why;
  }
  if (summary) *summary = std::move(s);
  return out;
}

std::vector<EndpointReport> BatchEvaluator::endpoints() const { return impl_->reports(); }

std::vector<pid_t> BatchEvaluator::local_pids() const { return impl_->local_pids(); }

bool BatchEvaluator::wait_ready(int n, double timeout_s) { return impl_->wait_ready(n, timeout_s); }

bool job_measures(const BatchJob& job) {
  static const std::set<std::string> kMeasured = {"runtime", "gflops", "compile_time", "llvm_ir"};
  for (const std::string& o : job.observations)
    if (kMeasured.count(o)) return true;
  for (const std::string& r : job.rewards)
    if (r.rfind("runtime", 0) == 0 || r.rfind("gflops", 0) == 0) return true;
  return false;
}

}  // namespace tensorgym::client
