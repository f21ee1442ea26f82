#include "service/tensorgym_service.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <random>
#include <thread>

#include "codegen/measure/runner.h"
#include "datasets/registry.h"
#include "envs/env_context.h"
#include "envs/replay.h"
#include "proto/rpc_status.h"
#include "proto/wire.h"
#include "service/log.h"
#include "support/deferred_release.h"
#include "support/quote.h"

namespace tensorgym::service {
namespace {

constexpr const char* kProtocolVersion = "2";  // 2: session handles are strings
constexpr int kDefaultPageSize = 100;
constexpr int kMaxPageSize = 10000;
constexpr size_t kMaxParameterBytes = 4096;

grpc::ServerUnaryReactor* finish(grpc::CallbackServerContext* ctx, const grpc::Status& status) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

grpc::ServerUnaryReactor* finish(grpc::CallbackServerContext* ctx, const Status& status) {
  return finish(ctx, rpc::to_grpc(status));
}

grpc::Status session_not_found(const std::string& id) {
  proto::SessionNotFound detail;
  if (is_handle(id)) detail.set_session_id(id);
  return rpc::to_grpc(SessionTable::unknown_session(id), detail);
}

DatasetRegistry& registry_of(const EnvContext& context) {
  return context.datasets ? *context.datasets : DatasetRegistry::global();
}

}  // namespace

// A unary call that runs on the executor; the client cancelling it (or its deadline
// passing, which gRPC reports the same way) cancels its measurement.
class TensorGymService::SlowUnaryReactor final : public grpc::ServerUnaryReactor {
 public:
  SlowUnaryReactor(CallExecutor& executor, std::shared_ptr<CallExecutor::Call> call)
      : executor_(executor), call_(std::move(call)) {}
  void OnCancel() override {
    const bool late = CallExecutor::Clock::now() >= call_->deadline();
    executor_.cancel(*call_, late ? StatusCode::kDeadlineExceeded : StatusCode::kCancelled);
  }
  void OnDone() override { delete this; }

 private:
  CallExecutor& executor_;
  const std::shared_ptr<CallExecutor::Call> call_;
};

TensorGymService::TensorGymService(const ServerOptions& options, std::shared_ptr<EnvContext> context,
                                   Authenticator auth)
    : options_(options),
      context_(std::move(context)),
      auth_(std::move(auth)),
      sessions_(options.max_sessions, options.max_sessions_per_client) {
  const int threads = options_.call_threads > 0 ? options_.call_threads : 2 * std::max(1, options_.workers) + 2;
  std::shared_ptr<EnvContext> ctx = context_;
  executor_ = std::make_unique<CallExecutor>(threads, [ctx](uint64_t job_id) { ctx->runner().cancel(job_id); });
  SetMessageAllocatorFor_Step(&step_messages_);
  std::random_device rd;
  instance_id_ = fmt::format("{:08x}{:08x}-{}", rd(), rd(), int(::getpid()));
  EvaluatePoolOptions eval;
  eval.concurrency = options_.eval_concurrency > 0 ? options_.eval_concurrency
                                                   : std::max(2, int(std::thread::hardware_concurrency()));
  eval.measure_slots = std::max(1, options_.workers);
  eval.max_queued_per_stream = options_.eval_max_queued_jobs;
  eval.instance_id = instance_id_;
  eval.limits.max_spaces = options_.max_spaces_per_call;
  eval.limits.max_actions = options_.max_actions_per_step;
  eval.limits.max_program_bytes = options_.max_program_bytes;
  evaluate_ = std::make_unique<EvaluatePool>(std::move(eval), context_);
  for (const std::string& name : env_names()) {
    Expected<std::unique_ptr<Env>> env = make_env(name, context_);
    if (!env.ok()) continue;
    spaces_to_proto(**env, &spaces_[name]);
    std::unordered_set<std::string>& measuring = measuring_[name];
    for (const Space& s : (*env)->observation_spaces())
      if (s.platform_dependent()) measuring.insert(s.name());
    for (const Space& s : (*env)->reward_spaces())
      if (s.platform_dependent()) measuring.insert(s.name());
  }
}

TensorGymService::~TensorGymService() {
  executor_.reset();  // cancels and joins calls in flight before the sessions go
  evaluate_.reset();
  sessions_.clear();
}

bool TensorGymService::may_measure(const std::string& env, const std::vector<std::string>& observations,
                                   const std::vector<std::string>& rewards) const {
  auto it = measuring_.find(env);
  if (it == measuring_.end()) return true;  // unknown: be safe
  for (const std::string& o : observations)
    if (it->second.count(o)) return true;
  for (const std::string& r : rewards)
    if (it->second.count(r)) return true;
  return false;
}

Expected<std::string> TensorGymService::admit(const grpc::CallbackServerContext& ctx) const {
  return auth_.identify(ctx);
}

template <class Fn>
grpc::ServerUnaryReactor* TensorGymService::run_slow(grpc::CallbackServerContext* ctx, Fn fn) {
  std::shared_ptr<CallExecutor::Call> call = executor_->create_call(ctx->deadline());
  auto* reactor = new SlowUnaryReactor(*executor_, call);
  executor_->submit(std::move(call), [reactor, fn = std::move(fn)](CallExecutor::Call& c) mutable {
    grpc::Status status = c.cancelled() ? rpc::to_grpc(c.reason()) : fn(c);
    reactor->Finish(status);
  });
  return reactor;
}

template <class Fn>
grpc::ServerUnaryReactor* TensorGymService::with_session(grpc::CallbackServerContext* ctx,
                                                         const std::string& session_id, const std::string& caller,
                                                         bool may_block, Fn fn) {
  Expected<std::shared_ptr<service::Session>> found = sessions_.find(session_id, caller);
  if (!found.ok()) return finish(ctx, session_not_found(session_id));
  return with_session(ctx, std::move(*found), may_block, std::move(fn));
}

template <class Fn>
grpc::ServerUnaryReactor* TensorGymService::with_session(grpc::CallbackServerContext* ctx,
                                                         std::shared_ptr<service::Session> session, bool may_block,
                                                         Fn fn) {
  if (!may_block) {
    std::unique_lock<std::mutex> lock(session->mu, std::try_to_lock);
    if (lock.owns_lock()) {
      session->touch();
      return finish(ctx, fn(*session, nullptr));
    }
  }
  // Busy (a call that measures holds it) or slow: wait on the executor, not on gRPC's threads.
  return run_slow(ctx, [session, fn = std::move(fn)](CallExecutor::Call& call) mutable {
    std::lock_guard<std::mutex> lock(session->mu);
    if (call.cancelled()) return rpc::to_grpc(call.reason());
    session->touch();
    return fn(*session, &call);
  });
}

grpc::ServerUnaryReactor* TensorGymService::GetVersion(grpc::CallbackServerContext* ctx,
                                                       const proto::GetVersionRequest*,
                                                       proto::GetVersionResponse* response) {
  Expected<std::string> caller = admit(*ctx);
  if (!caller.ok()) return finish(ctx, caller.status());
  response->set_service_version(TENSORGYM_VERSION);
  response->set_protocol_version(kProtocolVersion);
  response->set_instance_id(instance_id_);
  for (const auto& [name, spaces] : spaces_) response->add_env(name);
  return finish(ctx, grpc::Status::OK);
}

grpc::ServerUnaryReactor* TensorGymService::GetSpaces(grpc::CallbackServerContext* ctx,
                                                      const proto::GetSpacesRequest* request,
                                                      proto::GetSpacesResponse* response) {
  Expected<std::string> caller = admit(*ctx);
  if (!caller.ok()) return finish(ctx, caller.status());
  auto it = spaces_.find(request->env());
  if (it == spaces_.end()) {
    std::string known;
    for (const auto& [name, s] : spaces_) known += (known.empty() ? "" : ", ") + name;
    return finish(ctx, not_found("unknown environment " + quote_text(request->env()) + " (known: " + known + ")"));
  }
  *response = it->second;
  return finish(ctx, grpc::Status::OK);
}

grpc::ServerUnaryReactor* TensorGymService::ListDatasets(grpc::CallbackServerContext* ctx,
                                                         const proto::ListDatasetsRequest*,
                                                         proto::ListDatasetsResponse* response) {
  Expected<std::string> caller = admit(*ctx);
  if (!caller.ok()) return finish(ctx, caller.status());
  for (const Dataset* d : registry_of(*context_).datasets()) {
    proto::DatasetInfo* info = response->add_dataset();
    info->set_name(d->name());
    info->set_description(d->description());
    info->set_size(d->size());
  }
  return finish(ctx, grpc::Status::OK);
}

grpc::ServerUnaryReactor* TensorGymService::ListBenchmarks(grpc::CallbackServerContext* ctx,
                                                           const proto::ListBenchmarksRequest* request,
                                                           proto::ListBenchmarksResponse* response) {
  Expected<std::string> caller = admit(*ctx);
  if (!caller.ok()) return finish(ctx, caller.status());
  if (request->page_size() < 0) return finish(ctx, invalid_argument("page_size must be >= 0"));
  const int64_t page_size = request->page_size() == 0 ? kDefaultPageSize : std::min(request->page_size(), kMaxPageSize);
  if (request->offset() < 0) return finish(ctx, invalid_argument("offset must be >= 0"));
  int64_t offset = request->offset();
  const std::string& token = request->page_token();
  if (!token.empty()) {
    auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), offset);
    if (ec != std::errc() || end != token.data() + token.size() || offset < 0)
      return finish(ctx, invalid_argument("page_token " + quote_text(token) + " is not one this server gave"));
  }
  Expected<const Dataset*> dataset = registry_of(*context_).find_dataset(request->dataset());
  if (!dataset.ok()) return finish(ctx, dataset.status());
  const std::vector<BenchmarkInfo> rows = (*dataset)->list(offset, page_size);
  response->mutable_benchmark()->Reserve(int(rows.size()));
  for (const BenchmarkInfo& b : rows) {
    proto::BenchmarkInfo* info = response->add_benchmark();
    info->set_uri(b.uri);
    info->set_shape(b.shape);
  }
  const int64_t next = offset + int64_t(rows.size());
  const int64_t size = (*dataset)->size();
  if (int64_t(rows.size()) == page_size && (size < 0 || next < size))
    response->set_next_page_token(fmt::format("{}", next));
  return finish(ctx, grpc::Status::OK);
}

grpc::ServerUnaryReactor* TensorGymService::AddBenchmark(grpc::CallbackServerContext* ctx,
                                                         const proto::AddBenchmarkRequest* request,
                                                         proto::AddBenchmarkResponse* response) {
  Expected<std::string> caller = admit(*ctx);
  if (!caller.ok()) return finish(ctx, caller.status());
  if (int64_t(request->program().size()) > options_.max_program_bytes)
    return finish(ctx, invalid_argument(fmt::format("the program text is {} bytes; the cap is {} (--max-program-bytes)",
                                                    request->program().size(), options_.max_program_bytes)));
  Expected<std::string> uri =
      registry_of(*context_).add_user_benchmark(request->name(), request->program(), quota_key(*caller, *ctx));
  if (!uri.ok()) return finish(ctx, uri.status());
  log(LogLevel::kDebug, "added " + *uri);
  response->set_uri(*uri);
  return finish(ctx, grpc::Status::OK);
}

grpc::ServerUnaryReactor* TensorGymService::StartSession(grpc::CallbackServerContext* ctx,
                                                         const proto::StartSessionRequest* request,
                                                         proto::StartSessionResponse* response) {
  Expected<std::string> caller = admit(*ctx);
  if (!caller.ok()) return finish(ctx, caller.status());
  struct Args {
    std::string env, benchmark;
    ResetOptions reset;
    std::vector<std::string> observations, rewards;
    std::vector<std::pair<std::string, std::string>> parameters;
  };
  auto args = std::make_shared<Args>();
  args->env = request->env();
  args->benchmark = request->benchmark();
  args->reset.action_space = request->action_space();
  args->reset.max_episode_steps = request->max_episode_steps();
  args->reset.target = request->target();
  if (Status st = names_from_proto(request->observation_space(), options_, "observation", &args->observations);
      !st.ok())
    return finish(ctx, st);
  if (Status st = names_from_proto(request->reward_space(), options_, "reward", &args->rewards); !st.ok())
    return finish(ctx, st);
  if (request->parameter_size() > options_.max_spaces_per_call)
    return finish(ctx, invalid_argument("too many session parameters"));
  for (const auto& [k, v] : request->parameter()) args->parameters.emplace_back(k, v);
  const std::string quota = quota_key(*caller, *ctx);
  if (Status st = sessions_.check_room(quota); !st.ok()) return finish(ctx, st);

  auto start = [this, args, response, owner = *caller, quota](CallExecutor::Call* call) -> grpc::Status {
    Expected<std::unique_ptr<Env>> env = make_env(args->env, context_);
    if (!env.ok()) return rpc::to_grpc(env.status());
    for (const auto& [k, v] : args->parameters)
      if (Status st = (*env)->set_parameter(k, v); !st.ok()) return rpc::to_grpc(st);
    ResetOptions reset = args->reset;
    // Starting the rewards takes one step; it does not count against the episode's steps.
    if (!args->rewards.empty() && reset.max_episode_steps > 0) ++reset.max_episode_steps;
    Expected<std::vector<Event>> obs = (*env)->reset(args->benchmark, reset, args->observations);
    if (!obs.ok()) return rpc::to_grpc(obs.status());
    if (!args->rewards.empty()) {
      StepResult r = (*env)->step({}, {}, args->rewards);
      if (!r.error.ok()) return rpc::to_grpc(r.error);
    }
    if (call && call->cancelled()) return rpc::to_grpc(call->reason());
    Expected<std::shared_ptr<service::Session>> session = sessions_.add(std::move(*env), owner, quota);
    if (!session.ok()) return rpc::to_grpc(session.status());
    response->set_session_id((*session)->id);
    events_to_proto(*obs, response->mutable_observation());
    log(LogLevel::kDebug, "session " + (*session)->id + " started: " + args->benchmark);
    return grpc::Status::OK;
  };
  if (may_measure(args->env, args->observations, args->rewards))
    return run_slow(ctx, [start](CallExecutor::Call& call) { return start(&call); });
  return finish(ctx, start(nullptr));
}

grpc::Status TensorGymService::step_session(service::Session& session, const StepArgs& args, CallExecutor::Call* call,
                                            proto::StepResponse* response) {
  StepResult result;
  if (call) {
    // Step a fork and keep it only if the call was not cancelled: a step whose
    // deadline passed leaves the session as it was.
    Expected<std::unique_ptr<Env>> fork = session.env->fork();
    if (!fork.ok()) return rpc::to_grpc(fork.status());
    result = (*fork)->step(args.actions, args.observations, args.rewards);
    if (call->cancelled()) return rpc::to_grpc(call->reason());
    session.env = std::move(*fork);
  } else {
    result = session.env->step(args.actions, args.observations, args.rewards);
  }
  ++session.step_count;
  move_step_result_to_proto(&result, response);
  response->set_step_count(session.step_count);
  if (result.error.ok()) return grpc::Status::OK;
  status_to_proto(result.error, response->mutable_status());
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* TensorGymService::Step(grpc::CallbackServerContext* ctx, const proto::StepRequest* request,
                                                 proto::StepResponse* response) {
  Expected<std::string> caller = admit(*ctx);
  if (!caller.ok()) return finish(ctx, caller.status());
  // What the step drops is destroyed once the answer is written (step_messages.h).
  DeferredReleaseScope release_after_answer;
  auto args = std::make_shared<StepArgs>();
  if (Status st = step_args_from_proto(*request, options_, args.get()); !st.ok()) return finish(ctx, st);
  Expected<std::shared_ptr<service::Session>> found = sessions_.find(request->session_id(), *caller);
  if (!found.ok()) return finish(ctx, session_not_found(request->session_id()));
  const bool slow = may_measure((*found)->env_name, args->observations, args->rewards);
  const bool error_in_response = request->error_in_response();
  grpc::ServerUnaryReactor* reactor = with_session(
      ctx, std::move(*found), slow,
      [this, args, response, error_in_response](service::Session& s, CallExecutor::Call* call) {
        grpc::Status st = step_session(s, *args, call, response);
        if (!st.ok() || error_in_response || response->status().code() == 0) return st;
        // The conventional form: the step's error is the call's status.
        return grpc::Status(grpc::StatusCode(response->status().code()), response->status().message());
      });
  // The answer leaves after this handler returns: what the step dropped, and its
  // arguments once no slow call holds them, wait for it.
  if (StepMessages* messages = StepMessages::of(ctx->GetRpcAllocatorState())) {
    release_later(std::move(args));
    messages->keep_until_done(release_after_answer.take());
  }
  return reactor;
}

grpc::ServerUnaryReactor* TensorGymService::ForkSession(grpc::CallbackServerContext* ctx,
                                                        const proto::ForkSessionRequest* request,
                                                        proto::ForkSessionResponse* response) {
  Expected<std::string> caller = admit(*ctx);
  if (!caller.ok()) return finish(ctx, caller.status());
  const std::string quota = quota_key(*caller, *ctx);
  return with_session(ctx, request->session_id(), *caller, false,
                      [this, response, owner = *caller, quota](service::Session& s, CallExecutor::Call*) {
    Expected<std::unique_ptr<Env>> fork = s.env->fork();
    if (!fork.ok()) return rpc::to_grpc(fork.status());
    Expected<std::shared_ptr<service::Session>> copy = sessions_.add(std::move(*fork), owner, quota, s.step_count);
    if (!copy.ok()) return rpc::to_grpc(copy.status());
    response->set_session_id((*copy)->id);
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* TensorGymService::EndSession(grpc::CallbackServerContext* ctx,
                                                       const proto::EndSessionRequest* request,
                                                       proto::EndSessionResponse* response) {
  Expected<std::string> caller = admit(*ctx);
  if (!caller.ok()) return finish(ctx, caller.status());
  if (!sessions_.remove(request->session_id(), *caller)) return finish(ctx, session_not_found(request->session_id()));
  response->set_remaining_sessions(int32_t(sessions_.size()));
  return finish(ctx, grpc::Status::OK);
}

grpc::ServerUnaryReactor* TensorGymService::GetState(grpc::CallbackServerContext* ctx,
                                                     const proto::GetStateRequest* request,
                                                     proto::GetStateResponse* response) {
  Expected<std::string> caller = admit(*ctx);
  if (!caller.ok()) return finish(ctx, caller.status());
  return with_session(ctx, request->session_id(), *caller, false, [response](service::Session& s, CallExecutor::Call*) {
    wire::episode_state_to_proto(s.env->state(), response->mutable_state());
    response->set_step_count(s.step_count);
    return grpc::Status::OK;
  });
}

grpc::ServerUnaryReactor* TensorGymService::SendSessionParameter(grpc::CallbackServerContext* ctx,
                                                                 const proto::SendSessionParameterRequest* request,
                                                                 proto::SendSessionParameterResponse*) {
  Expected<std::string> caller = admit(*ctx);
  if (!caller.ok()) return finish(ctx, caller.status());
  if (request->key().size() > kMaxParameterBytes || request->value().size() > kMaxParameterBytes)
    return finish(ctx, invalid_argument(fmt::format("a session parameter's key and value are at most {} bytes each",
                                                    kMaxParameterBytes)));
  std::string key = request->key(), value = request->value();
  return with_session(ctx, request->session_id(), *caller, false, [key, value](service::Session& s, CallExecutor::Call*) {
    return rpc::to_grpc(s.env->set_parameter(key, value));
  });
}

grpc::ServerUnaryReactor* TensorGymService::Validate(grpc::CallbackServerContext* ctx,
                                                     const proto::ValidateRequest* request,
                                                     proto::ValidateResponse* response) {
  Expected<std::string> caller = admit(*ctx);
  if (!caller.ok()) return finish(ctx, caller.status());
  auto state = std::make_shared<EpisodeState>(wire::episode_state_from_proto(request->state()));
  const double tolerance = request->tolerance() == 0 ? 0.25 : request->tolerance();
  return run_slow(ctx, [this, state, tolerance, response](CallExecutor::Call& call) {
    Expected<ValidationOutcome> out =
        validate_episode(*state, tolerance, [this](const std::string& env) { return make_env(env, context_); });
    if (call.cancelled()) return rpc::to_grpc(call.reason());
    if (!out.ok()) return rpc::to_grpc(out.status());
    response->set_ok(out->ok);
    response->set_error(out->error);
    for (const auto& [name, value] : out->replayed) (*response->mutable_replayed_reward())[name] = value;
    return grpc::Status::OK;
  });
}

// Steps on one stream: read a request, answer it, read the next. Cheap steps run on
// the gRPC thread that read them; steps that measure run on the executor.
class TensorGymService::SessionStream final : public grpc::ServerBidiReactor<proto::StepRequest, proto::StepResponse> {
 public:
  SessionStream(TensorGymService& service, grpc::CallbackServerContext* ctx) : service_(service), ctx_(ctx) {
    Expected<std::string> caller = service_.admit(*ctx);
    if (!caller.ok()) {
      finished_ = true;
      Finish(rpc::to_grpc(caller.status()));
      return;
    }
    caller_ = std::move(*caller);
    std::lock_guard<std::mutex> registry(service_.streams_mu_);
    registered_ = true;
    service_.session_streams_.insert(this);
    std::lock_guard<std::mutex> lock(mu_);
    if (service_.closing_streams_) {
      finish_shutting_down_locked();
      return;
    }
    start_read_locked();
  }

  // Shutdown: a stream waiting for its client's next step ends now; one busy with a
  // step ends once it has answered it.
  void close_if_idle() {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
    if (reading_) finish_shutting_down_locked();
  }

  void OnReadDone(bool ok) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      reading_ = false;
      if (finished_) return;  // ended while the read was pending
      if (!ok) {              // the client closed its side (or the call ended)
        finished_ = true;
        Finish(grpc::Status::OK);
        return;
      }
    }
    response_.Clear();
    auto args = std::make_shared<StepArgs>();
    Status st = step_args_from_proto(request_, service_.options_, args.get());
    std::shared_ptr<service::Session> session;
    if (st.ok()) {
      Expected<std::shared_ptr<service::Session>> found = service_.sessions_.find(request_.session_id(), caller_);
      if (found.ok()) {
        session = std::move(*found);
      } else {
        st = found.status();
        proto::SessionNotFound detail;
        if (is_handle(request_.session_id())) detail.set_session_id(request_.session_id());
        response_.mutable_status()->add_details()->PackFrom(detail);
      }
    }
    if (!st.ok()) {
      status_to_proto(st, response_.mutable_status());
      StartWrite(&response_);
      return;
    }
    if (!service_.may_measure(session->env_name, args->observations, args->rewards)) {
      std::unique_lock<std::mutex> lock(session->mu, std::try_to_lock);
      if (lock.owns_lock()) {
        DeferredReleaseScope release_after_answer;
        session->touch();
        (void)service_.step_session(*session, *args, nullptr, &response_);
        lock.unlock();
        StartWrite(&response_);
        return;
      }
    }
    std::shared_ptr<CallExecutor::Call> call = service_.executor_->create_call(ctx_->deadline());
    {
      std::lock_guard<std::mutex> lock(mu_);
      call_ = call;
    }
    service_.executor_->submit(std::move(call), [this, session, args](CallExecutor::Call& c) {
      std::unique_lock<std::mutex> lock(session->mu);
      session->touch();
      grpc::Status st = c.cancelled() ? rpc::to_grpc(c.reason()) : service_.step_session(*session, *args, &c, &response_);
      lock.unlock();
      if (!st.ok()) status_to_proto(rpc::from_grpc(st), response_.mutable_status());
      {
        std::lock_guard<std::mutex> guard(mu_);
        call_.reset();
      }
      StartWrite(&response_);
    });
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    if (!ok) {
      finished_ = true;
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the stream was closed"));
      return;
    }
    if (closing_) return finish_shutting_down_locked();
    start_read_locked();
  }

  void OnCancel() override {
    std::shared_ptr<CallExecutor::Call> call;
    {
      std::lock_guard<std::mutex> lock(mu_);
      call = call_;
    }
    if (call) {
      const bool late = CallExecutor::Clock::now() >= call->deadline();
      service_.executor_->cancel(*call, late ? StatusCode::kDeadlineExceeded : StatusCode::kCancelled);
    }
  }

  void OnDone() override {
    if (registered_) {
      std::lock_guard<std::mutex> registry(service_.streams_mu_);
      service_.session_streams_.erase(this);
    }
    delete this;
  }

 private:
  void start_read_locked() {
    reading_ = true;
    StartRead(&request_);
  }
  void finish_shutting_down_locked() {
    if (finished_) return;
    finished_ = true;
    Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"));
  }

  TensorGymService& service_;
  grpc::CallbackServerContext* ctx_;
  std::string caller_;  // the client's identity (auth.h), fixed for the stream
  proto::StepRequest request_;
  proto::StepResponse response_;
  std::mutex mu_;
  std::shared_ptr<CallExecutor::Call> call_;  // the step on the executor, if any
  // Guarded by mu_.
  bool reading_ = false;     // a read is pending: the stream waits for its client
  bool closing_ = false;     // the server is shutting down
  bool finished_ = false;    // Finish was called
  bool registered_ = false;  // in service_.session_streams_ (set in the constructor only)
};

grpc::ServerBidiReactor<proto::StepRequest, proto::StepResponse>* TensorGymService::Session(
    grpc::CallbackServerContext* ctx) {
  return new SessionStream(*this, ctx);
}

size_t TensorGymService::reap_idle_sessions() {
  if (options_.idle_timeout_s <= 0) return 0;
  std::vector<std::string> ids =
      sessions_.reap_idle(std::chrono::nanoseconds(int64_t(options_.idle_timeout_s * 1e9)));
  for (const std::string& id : ids) log(LogLevel::kInfo, "session " + id + " ended after being idle");
  return ids.size();
}

size_t TensorGymService::expire_unused_benchmarks() {
  if (options_.user_benchmark_ttl_s <= 0) return 0;
  std::vector<std::string> gone = registry_of(*context_).user_benchmarks().expire_unused(
      std::chrono::nanoseconds(int64_t(options_.user_benchmark_ttl_s * 1e9)));
  for (const std::string& uri : gone) log(LogLevel::kInfo, uri + " ended after being unused");
  return gone.size();
}

void TensorGymService::shutdown(std::chrono::steady_clock::duration grace) {
  {
    std::lock_guard<std::mutex> registry(streams_mu_);
    closing_streams_ = true;
    for (SessionStream* s : session_streams_) s->close_if_idle();
  }
  // Both get the same grace, at the same time.
  std::thread evaluate([this, grace] { evaluate_->shutdown(grace); });
  executor_->shutdown(grace);
  evaluate.join();
}

grpc::ServerBidiReactor<proto::EvaluateRequest, proto::EvaluateResponse>* TensorGymService::Evaluate(
    grpc::CallbackServerContext* ctx) {
  return new_evaluate_reactor(*evaluate_, auth_, ctx);
}

}  // namespace tensorgym::service
