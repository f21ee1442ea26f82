#include "client/remote_env.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "client/connection.h"
#include "client/connection_impl.h"
#include "client/polled_call.h"
#include "proto/rpc_status.h"
#include "proto/wire.h"

namespace tensorgym::client {
namespace {

// Calls past which the state of the episode is left as it is (the session intact).
bool keeps_episode(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::CANCELLED:
      return true;
    default:
      return false;
  }
}

bool is_session_not_found(const grpc::Status& st) {
  if (st.error_code() != grpc::StatusCode::NOT_FOUND) return false;
  proto::SessionNotFound detail;
  return rpc::unpack_detail(st, &detail);
}

bool is_session_not_found(const proto::RpcStatus& status) {
  if (status.code() != int(StatusCode::kNotFound)) return false;
  for (const google::protobuf::Any& any : status.details())
    if (any.type_url().ends_with("/tensorgym.proto.SessionNotFound")) return true;
  return false;
}

}  // namespace

struct RemoteEnv::Impl {
  // One step or one parameter of the episode, as sent: replaying them in order from
  // the benchmark rebuilds the episode exactly (the environment is deterministic).
  struct Entry {
    bool parameter = false;
    std::vector<Event> actions;
    std::vector<std::string> rewards;
    std::string key, value;
  };

  std::shared_ptr<Connection> connection;
  ConnectionImpl& conn;
  std::string name;
  EnvSpaces spaces;
  std::map<std::string, const Space*> observation_by_name;
  std::map<std::string, const Space*> reward_by_name;
  double timeout_s = 0;
  bool streaming = false;
  double busy_poll_us = conn.options.busy_poll_us;
  std::unique_ptr<PolledCalls> poller;  // made on the first polled step

  // The session on the service.
  bool has_session = false;
  std::string session_id;  // the server's handle
  size_t backend_index = 0;
  uint64_t epoch = 0;
  bool lost = false;       // gone with its server, or ended there: replay before use
  bool uncertain = false;  // the answer to `pending` was lost: was it applied?
  Entry pending;
  uint64_t step_count = 0;  // Step calls the session has applied

  // The episode, for replay.
  bool started = false;
  std::string benchmark;
  ResetOptions reset_options;
  std::vector<std::pair<std::string, std::string>> parameters;        // current, one per key
  std::vector<std::pair<std::string, std::string>> start_parameters;  // at reset
  std::vector<Entry> entries;

  // The Session stream, when streaming.
  std::unique_ptr<grpc::ClientContext> stream_ctx;
  std::unique_ptr<grpc::ClientReaderWriter<proto::StepRequest, proto::StepResponse>> stream;
  std::unique_ptr<PolledStream> polled_stream;  // instead of `stream` when busy polling
  size_t stream_backend = 0;
  std::string stream_session;

  Impl(std::shared_ptr<Connection> c, std::string n, EnvSpaces s)
      : connection(std::move(c)), conn(connection->impl()), name(std::move(n)), spaces(std::move(s)) {
    index_spaces();
  }

  Impl(const Impl& o)
      : connection(o.connection),
        conn(o.conn),
        name(o.name),
        spaces(o.spaces),
        timeout_s(o.timeout_s),
        streaming(o.streaming),
        busy_poll_us(o.busy_poll_us),
        step_count(o.step_count),
        started(o.started),
        benchmark(o.benchmark),
        reset_options(o.reset_options),
        parameters(o.parameters),
        start_parameters(o.start_parameters),
        entries(o.entries) {
    index_spaces();
  }

  void index_spaces() {
    for (const Space& s : spaces.observation) observation_by_name[s.name()] = &s;
    for (const Space& s : spaces.reward) reward_by_name[s.name()] = &s;
  }

  std::shared_ptr<Backend> current() const { return conn.backend(backend_index); }

  void prepare(grpc::ClientContext* ctx) const { conn.prepare(ctx, timeout_s); }

  bool measures(const std::vector<std::string>& observations, const std::vector<std::string>& rewards) const {
    for (const std::string& o : observations) {
      auto it = observation_by_name.find(o);
      if (it == observation_by_name.end() || it->second->platform_dependent()) return true;
    }
    for (const std::string& r : rewards) {
      auto it = reward_by_name.find(r);
      if (it == reward_by_name.end() || it->second->platform_dependent()) return true;
    }
    return false;
  }

  std::vector<Event> default_observations(const std::vector<std::string>& names) const {
    std::vector<Event> out;
    for (const std::string& n : names) {
      auto it = observation_by_name.find(n);
      out.push_back(it == observation_by_name.end() ? Event() : it->second->default_value());
    }
    return out;
  }

  std::vector<double> default_rewards(const std::vector<std::string>& names) const {
    std::vector<double> out;
    for (const std::string& n : names) {
      auto it = reward_by_name.find(n);
      double v = it == reward_by_name.end() ? 0.0 : it->second->default_value().to_double();
      out.push_back(std::isnan(v) ? 0.0 : v);
    }
    return out;
  }

  StepResult failed_step(Status error, const std::vector<std::string>& observations,
                         const std::vector<std::string>& rewards, bool terminated) const {
    StepResult r;
    r.observations = default_observations(observations);
    r.rewards = default_rewards(rewards);
    r.terminated = terminated;
    r.error = std::move(error);
    return r;
  }

  // After a call failed with UNAVAILABLE: recovers the connection; the session is lost
  // when its server changed (another address, a restarted service).
  Status recover(uint64_t seen_epoch) {
    size_t index = backend_index;
    TG_RETURN_IF_ERROR(conn.recover(&index, seen_epoch));
    if (index != backend_index || conn.backend(index)->epoch != epoch) {
      backend_index = index;
      lost = true;
      close_stream();
    }
    return Status();
  }

  void close_stream() {
    if (polled_stream) {
      polled_stream.reset();  // cancels and finishes it
      stream_ctx.reset();
    }
    if (!stream) return;
    stream_ctx->TryCancel();
    (void)stream->Finish();
    stream.reset();
    stream_ctx.reset();
  }

  void end_session_quietly() {
    close_stream();
    if (!has_session || lost) return;
    grpc::ClientContext ctx;
    conn.prepare(&ctx, 5);
    proto::EndSessionRequest request;
    request.set_session_id(session_id);
    proto::EndSessionResponse response;
    (void)current()->stub->EndSession(&ctx, request, &response);
  }

  // The observations to request while replaying entry i: deterministic ones at every
  // step, a measured one only at the last step that asked for it (so the episode's
  // reward bookkeeping ends where it was, with one measurement per reward).
  std::vector<std::vector<std::string>> replay_rewards() const {
    std::map<std::string, size_t> last;
    for (size_t i = 0; i < entries.size(); ++i)
      for (const std::string& r : entries[i].rewards) last[r] = i;
    std::vector<std::vector<std::string>> out(entries.size());
    for (size_t i = 0; i < entries.size(); ++i)
      for (const std::string& r : entries[i].rewards) {
        auto it = reward_by_name.find(r);
        const bool deterministic = it != reward_by_name.end() && it->second->deterministic();
        if (deterministic || last[r] == i) out[i].push_back(r);
      }
    return out;
  }

  // Rebuilds the episode in a new session: StartSession, then every parameter and step.
  Status replay() {
    close_stream();
    const std::vector<std::vector<std::string>> rewards = replay_rewards();
    Status last;
    for (int attempt = 0; attempt <= ConnectionImpl::kMaxAttempts; ++attempt) {
      std::shared_ptr<Backend> b = current();
      grpc::Status st = replay_on(*b, rewards);
      if (st.ok()) {
        ++conn.replays;
        return Status();
      }
      last = rpc::from_grpc(st);
      if (st.error_code() == grpc::StatusCode::UNAVAILABLE) {
        TG_RETURN_IF_ERROR(recover(b->epoch));
        continue;
      }
      if (is_session_not_found(st)) continue;  // ended while we replayed (reaped?): again
      return last.with_context("replaying the episode after the service was lost");
    }
    return last.with_context("replaying the episode after the service was lost");
  }

  grpc::Status replay_on(Backend& b, const std::vector<std::vector<std::string>>& rewards) {
    if (Status st = conn.push_benchmarks(backend_index, timeout_s); !st.ok()) return rpc::to_grpc(st);
    proto::StartSessionRequest start;
    start.set_env(name);
    start.set_benchmark(benchmark);
    start.set_action_space(reset_options.action_space);
    start.set_max_episode_steps(reset_options.max_episode_steps);
    start.set_target(reset_options.target);
    for (const auto& [k, v] : start_parameters) (*start.mutable_parameter())[k] = v;
    proto::StartSessionResponse started_session;
    {
      grpc::ClientContext ctx;
      prepare(&ctx);
      grpc::Status st = b.stub->StartSession(&ctx, start, &started_session);
      if (!st.ok()) return st;
    }
    const std::string id = started_session.session_id();
    uint64_t steps = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
      const Entry& e = entries[i];
      grpc::ClientContext ctx;
      prepare(&ctx);
      grpc::Status st;
      if (e.parameter) {
        proto::SendSessionParameterRequest request;
        request.set_session_id(id);
        request.set_key(e.key);
        request.set_value(e.value);
        proto::SendSessionParameterResponse response;
        st = b.stub->SendSessionParameter(&ctx, request, &response);
      } else {
        proto::StepRequest request;
        request.set_session_id(id);
        fill_actions(e.actions, &request);
        for (const std::string& r : rewards[i]) request.add_reward_space(r);
        request.set_error_in_response(true);  // a step that failed originally fails again: fine
        proto::StepResponse response;
        st = b.stub->Step(&ctx, request, &response);
        steps = response.step_count();
      }
      if (!st.ok()) return st;
    }
    session_id = id;
    has_session = true;
    epoch = b.epoch;
    lost = false;
    uncertain = false;
    step_count = steps;
    return grpc::Status::OK;
  }

  static void fill_actions(const std::vector<Event>& actions, proto::StepRequest* request) {
    request->mutable_action()->Reserve(int(actions.size()));
    for (const Event& a : actions) {
      proto::Event* e = request->add_action();
      if (a.is<int64_t>()) {
        e->set_int64_value(a.as<int64_t>());
      } else if (a.is<std::string>()) {
        e->set_string_value(a.as<std::string>());
      }
    }
  }

  // Whether the step whose answer was lost was applied: the session's step count says.
  Status resolve_uncertain() {
    grpc::ClientContext ctx;
    prepare(&ctx);
    proto::GetStateRequest request;
    request.set_session_id(session_id);
    proto::GetStateResponse response;
    std::shared_ptr<Backend> b = current();
    grpc::Status st = b->stub->GetState(&ctx, request, &response);
    if (st.error_code() == grpc::StatusCode::UNAVAILABLE) {
      TG_RETURN_IF_ERROR(recover(b->epoch));
      return ensure_session();
    }
    if (is_session_not_found(st)) {
      lost = true;
      return ensure_session();
    }
    if (!st.ok()) return rpc::from_grpc(st);
    if (response.step_count() == step_count + 1) {
      entries.push_back(std::move(pending));
      ++step_count;
    } else if (response.step_count() != step_count) {
      end_session_quietly();
      lost = true;
      return ensure_session();
    }
    uncertain = false;
    return Status();
  }

  // Brings the session up to date before a call.
  Status ensure_session() {
    if (!has_session) return failed_precondition("no session: call reset(benchmark) first");
    if (conn.backend(backend_index)->epoch != epoch) lost = true;
    if (lost) return replay();
    if (uncertain) return resolve_uncertain();
    return Status();
  }

  // A call on the session, with recovery. f(backend, ctx, session_id) makes it.
  template <class F>
  grpc::Status session_call(F f) {
    grpc::Status st;
    for (int attempt = 0; attempt <= ConnectionImpl::kMaxAttempts; ++attempt) {
      if (Status s = ensure_session(); !s.ok()) return rpc::to_grpc(s);
      std::shared_ptr<Backend> b = current();
      grpc::ClientContext ctx;
      prepare(&ctx);
      st = f(*b, &ctx, session_id);
      if (st.error_code() == grpc::StatusCode::UNAVAILABLE) {
        if (Status r = recover(b->epoch); !r.ok()) return rpc::to_grpc(r);
        continue;
      }
      if (is_session_not_found(st)) {
        lost = true;
        continue;
      }
      return st;
    }
    return st;
  }

  // One step on the Session stream (opened on first use), its answer slept on or, with
  // busy polling, polled for.
  grpc::Status stream_step(Backend& b, const proto::StepRequest& request, proto::StepResponse* response) {
    const bool poll = busy_poll_us > 0;
    if ((stream || polled_stream) &&
        (stream_backend != backend_index || stream_session != session_id || poll != bool(polled_stream)))
      close_stream();
    if (!stream && !polled_stream) {
      stream_ctx = std::make_unique<grpc::ClientContext>();
      conn.prepare(stream_ctx.get(), 0);
      stream_ctx->set_deadline(std::chrono::system_clock::time_point::max());
      if (poll) {
        polled_stream = std::make_unique<PolledStream>(*b.stub, stream_ctx.get(), busy_poll_us);
      } else {
        stream = b.stub->Session(stream_ctx.get());
      }
      stream_backend = backend_index;
      stream_session = session_id;
    }
    grpc::Status st;
    if (poll) {
      if (polled_stream->step(request, response)) return grpc::Status::OK;
      st = polled_stream->finish();
      polled_stream.reset();
    } else {
      if (stream->Write(request) && stream->Read(response)) return grpc::Status::OK;
      st = stream->Finish();
      stream.reset();
    }
    stream_ctx.reset();
    if (st.ok()) st = grpc::Status(grpc::StatusCode::UNAVAILABLE, "the step stream closed");
    return st;
  }

  StepResult step(const std::vector<Event>& actions, const std::vector<std::string>& observations,
                  const std::vector<std::string>& rewards) {
    if (!started) {
      StepResult r = failed_step(failed_precondition("step before reset: call reset(benchmark) first"), observations,
                                 rewards, true);
      return r;
    }
    for (const Event& a : actions)
      if (!a.is<int64_t>() && !a.is<std::string>())
        return failed_step(invalid_argument("an action is an index or the action's text"), observations, rewards,
                           false);
    if (Status s = ensure_session(); !s.ok()) return failed_step(s, observations, rewards, true);
    const size_t entries_before = entries.size();
    Entry entry;
    entry.actions = actions;
    entry.rewards = rewards;
    proto::StepRequest request;
    fill_actions(actions, &request);
    for (const std::string& o : observations) request.add_observation_space(o);
    for (const std::string& r : rewards) request.add_reward_space(r);
    request.set_error_in_response(true);
    const bool cheap = !measures(observations, rewards);
    const bool use_stream = streaming && cheap;
    const bool poll = busy_poll_us > 0 && cheap;

    grpc::Status st;
    for (int attempt = 0; attempt <= ConnectionImpl::kMaxAttempts; ++attempt) {
      if (Status s = ensure_session(); !s.ok()) return failed_step(s, observations, rewards, true);
      if (entries.size() > entries_before)  // it was applied; only its answer was lost
        return failed_step(Status(StatusCode::kUnavailable,
                                  "the step was applied but its answer was lost with the connection; "
                                  "step with no actions to observe"),
                           observations, rewards, false);
      request.set_session_id(session_id);
      std::shared_ptr<Backend> b = current();
      proto::StepResponse response;
      if (use_stream) {
        st = stream_step(*b, request, &response);
      } else {
        grpc::ClientContext ctx;
        prepare(&ctx);
        if (poll && !poller) poller = std::make_unique<PolledCalls>();
        st = poll ? poller->step(*b->stub, &ctx, request, &response, busy_poll_us)
                  : b->stub->Step(&ctx, request, &response);
      }
      if (st.ok() && is_session_not_found(response.status())) {
        lost = true;
        continue;
      }
      if (st.ok()) {
        if (response.step_count() == step_count + 1) {  // it reached the environment
          entries.push_back(std::move(entry));
          ++step_count;
        }
        return from_response(std::move(response), observations, rewards);
      }
      if (st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED || st.error_code() == grpc::StatusCode::CANCELLED) {
        // The service cancels a step whose deadline passed and leaves the session as
        // it was, but the answer may have crossed the deadline: check before the next call.
        uncertain = true;
        pending = std::move(entry);
        return failed_step(rpc::from_grpc(st), observations, rewards, false);
      }
      if (st.error_code() == grpc::StatusCode::UNAVAILABLE) {
        if (Status r = recover(b->epoch); !r.ok()) return failed_step(r, observations, rewards, true);
        if (!lost) {  // the same server: the step may have reached it
          uncertain = true;
          pending = entry;
        }
        continue;
      }
      if (is_session_not_found(st)) {
        lost = true;
        continue;
      }
      return failed_step(rpc::from_grpc(st), observations, rewards, !keeps_episode(st.error_code()));
    }
    return failed_step(rpc::from_grpc(st), observations, rewards, true);
  }

  StepResult from_response(proto::StepResponse&& response, const std::vector<std::string>& observations,
                           const std::vector<std::string>& rewards) const {
    StepResult r;
    if (response.observation_size() == int(observations.size())) {
      r.observations.reserve(observations.size());
      for (const proto::Event& e : response.observation()) {
        Expected<Event> v = event_from_proto(e);
        r.observations.push_back(v.ok() ? std::move(*v) : Event());
      }
    } else {
      r.observations = default_observations(observations);
    }
    if (response.reward_size() == int(rewards.size())) {
      r.rewards.assign(response.reward().begin(), response.reward().end());
    } else {
      r.rewards = default_rewards(rewards);
    }
    r.terminated = response.terminated();
    r.truncated = response.truncated();
    r.action_had_no_effect = response.action_had_no_effect();
    if (response.status().code() != 0)
      r.error = Status(StatusCode(response.status().code()), response.status().message());
    return r;
  }
};

std::unique_ptr<RemoteEnv> RemoteEnv::create(std::shared_ptr<Connection> connection, const std::string& name, EnvSpaces spaces) {
  return std::unique_ptr<RemoteEnv>(new RemoteEnv(std::make_unique<Impl>(std::move(connection), name, std::move(spaces))));
}

RemoteEnv::RemoteEnv(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RemoteEnv::~RemoteEnv() { close(); }

const std::string& RemoteEnv::name() const { return impl_->name; }
const std::vector<Space>& RemoteEnv::action_spaces() const { return impl_->spaces.action; }
const std::vector<Space>& RemoteEnv::observation_spaces() const { return impl_->spaces.observation; }
const std::vector<Space>& RemoteEnv::reward_spaces() const { return impl_->spaces.reward; }

void RemoteEnv::set_timeout(double seconds) { impl_->timeout_s = seconds; }
void RemoteEnv::set_busy_poll(double microseconds) { impl_->busy_poll_us = std::max(0.0, microseconds); }

void RemoteEnv::set_streaming(bool on) {
  impl_->streaming = on;
  if (!on) impl_->close_stream();
}
const std::string& RemoteEnv::session_id() const { return impl_->session_id; }
const std::shared_ptr<Connection>& RemoteEnv::connection() const { return impl_->connection; }

Expected<std::vector<Event>> RemoteEnv::reset(const std::string& benchmark, const ResetOptions& options,
                                        const std::vector<std::string>& observations) {
  Impl& m = *impl_;
  m.end_session_quietly();
  m.has_session = false;
  m.started = false;
  proto::StartSessionRequest request;
  request.set_env(m.name);
  request.set_benchmark(benchmark);
  request.set_action_space(options.action_space);
  request.set_max_episode_steps(options.max_episode_steps);
  request.set_target(options.target);
  for (const std::string& o : observations) request.add_observation_space(o);
  for (const auto& [k, v] : m.parameters) (*request.mutable_parameter())[k] = v;
  size_t index = m.conn.next_backend();
  grpc::Status st;
  proto::StartSessionResponse response;
  for (int attempt = 0; attempt <= ConnectionImpl::kMaxAttempts; ++attempt) {
    std::shared_ptr<Backend> b = m.conn.backend(index);
    Status pushed = m.conn.push_benchmarks(index, m.timeout_s);
    if (pushed.ok()) {
      grpc::ClientContext ctx;
      m.prepare(&ctx);
      response.Clear();
      st = b->stub->StartSession(&ctx, request, &response);
    } else {
      st = rpc::to_grpc(pushed);
    }
    if (st.error_code() != grpc::StatusCode::UNAVAILABLE) break;
    if (Status r = m.conn.recover(&index, b->epoch); !r.ok()) return r;
  }
  if (!st.ok()) return rpc::from_grpc(st);
  m.session_id = response.session_id();
  m.backend_index = index;
  m.epoch = m.conn.backend(index)->epoch;
  m.has_session = true;
  m.lost = false;
  m.uncertain = false;
  m.step_count = 0;
  m.started = true;
  m.benchmark = benchmark;
  m.reset_options = options;
  m.start_parameters = m.parameters;
  m.entries.clear();
  std::vector<Event> out;
  out.reserve(size_t(response.observation_size()));
  for (const proto::Event& e : response.observation()) {
    Expected<Event> v = event_from_proto(e);
    if (!v.ok()) return v.status();
    out.push_back(std::move(*v));
  }
  return out;
}

StepResult RemoteEnv::step(const std::vector<Event>& actions, const std::vector<std::string>& observations,
                     const std::vector<std::string>& rewards) {
  return impl_->step(actions, observations, rewards);
}

Expected<std::unique_ptr<tensorgym::Env>> RemoteEnv::fork() const {
  Impl& m = *impl_;
  if (!m.started) return failed_precondition("fork before reset");
  proto::ForkSessionResponse response;
  grpc::Status st = m.session_call([&](Backend& b, grpc::ClientContext* ctx, const std::string& id) {
    proto::ForkSessionRequest request;
    request.set_session_id(id);
    return b.stub->ForkSession(ctx, request, &response);
  });
  if (!st.ok()) return rpc::from_grpc(st);
  auto copy = std::make_unique<Impl>(m);
  copy->has_session = true;
  copy->session_id = response.session_id();
  copy->backend_index = m.backend_index;
  copy->epoch = m.epoch;
  copy->step_count = m.step_count;
  return std::unique_ptr<tensorgym::Env>(new RemoteEnv(std::move(copy)));
}

EpisodeState RemoteEnv::state() const {
  Impl& m = *impl_;
  EpisodeState fallback;
  fallback.env = m.name;
  if (!m.started) return fallback;
  fallback.benchmark = m.benchmark;
  fallback.action_space = m.reset_options.action_space;
  if (!m.reset_options.target.empty()) fallback.target = m.reset_options.target;
  proto::GetStateResponse response;
  grpc::Status st = m.session_call([&](Backend& b, grpc::ClientContext* ctx, const std::string& id) {
    proto::GetStateRequest request;
    request.set_session_id(id);
    return b.stub->GetState(ctx, request, &response);
  });
  if (!st.ok()) return fallback;
  return wire::episode_state_from_proto(response.state());
}

Status RemoteEnv::set_parameter(const std::string& key, const std::string& value) {
  Impl& m = *impl_;
  auto remember = [&] {
    for (auto& [k, v] : m.parameters)
      if (k == key) {
        v = value;
        return;
      }
    m.parameters.emplace_back(key, value);
  };
  if (!m.started) {
    remember();
    return Status();
  }
  grpc::Status st = m.session_call([&](Backend& b, grpc::ClientContext* ctx, const std::string& id) {
    proto::SendSessionParameterRequest request;
    request.set_session_id(id);
    request.set_key(key);
    request.set_value(value);
    proto::SendSessionParameterResponse response;
    return b.stub->SendSessionParameter(ctx, request, &response);
  });
  if (!st.ok()) return rpc::from_grpc(st);
  remember();
  Impl::Entry e;
  e.parameter = true;
  e.key = key;
  e.value = value;
  m.entries.push_back(std::move(e));
  return Status();
}

void RemoteEnv::close() {
  Impl& m = *impl_;
  m.end_session_quietly();
  m.has_session = false;
  m.started = false;
}

}  // namespace tensorgym::client
