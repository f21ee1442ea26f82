#include "service/evaluate.h"

#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <exception>

#include "codegen/measure/runner.h"
#include "codegen/schedule/trace.h"
#include "datasets/registry.h"
#include "envs/env_context.h"
#include "proto/jobs.h"
#include "proto/rpc_status.h"
#include "service/auth.h"
#include "service/convert.h"
#include "service/log.h"
#include "support/quote.h"
#include "support/sha256.h"

namespace tensorgym::service {
namespace {

using Clock = std::chrono::steady_clock;

// Job ids of the pool's measurements: bit 62 set, so that they never meet the
// CallExecutor's (counted from 1) nor the runner's own (bit 63).
constexpr uint64_t kEvaluateJobIdBit = uint64_t(1) << 62;
// A measurement that started just after its cancel is cancelled again this often.
constexpr auto kRecancelPeriod = std::chrono::milliseconds(20);
constexpr size_t kMaxParameterBytes = 4096;
constexpr double kMaxTimeoutS = 3600;
// One response holds at most this many results (more wait for the next write).
constexpr int kMaxResultsPerResponse = 256;
constexpr const char* kDefaultEnv = "schedule-v0";

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

DatasetRegistry& registry_of(const EnvContext& context) {
  return context.datasets ? *context.datasets : DatasetRegistry::global();
}

// The actions of a job's text: schedule primitives parse as a trace (one per line or
// ';'-separated, comments dropped); other spaces' actions are names separated by ';',
// ',' or white space.
Expected<std::vector<Event>> split_job_actions(const std::string& env, const std::string& action_space,
                                               const std::string& text) {
  std::vector<Event> out;
  if (env == kDefaultEnv && action_space != "cursor") {
    Expected<Trace> trace = parse_trace(text);
    if (!trace.ok()) return Status(trace.status().code(), "actions:" + trace.status().message());
    for (const Primitive& p : trace->steps) out.push_back(Event(p.to_string()));
    return out;
  }
  std::string cur;
  bool comment = false;
  for (char c : text + "\n") {
    if (c == '\n') comment = false;
    if (comment) continue;
    if (c == '#') comment = true;
    if (c == '#' || c == ';' || c == ',' || std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) out.push_back(Event(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

struct MeasureClass {
  const char* name;
  proto::JobError error;
};
constexpr MeasureClass kMeasureClasses[] = {
    {"INSTANTIATION", proto::JOB_INSTANTIATION}, {"COMPILE", proto::JOB_COMPILE},
    {"RUNTIME_CRASH", proto::JOB_RUNTIME_CRASH}, {"WRONG_ANSWER", proto::JOB_WRONG_ANSWER},
    {"TIMEOUT", proto::JOB_TIMEOUT},             {"WORKER_LOST", proto::JOB_WORKER_LOST},
    {"RESOURCE_EXHAUSTED", proto::JOB_RESOURCE_EXHAUSTED}};

// The measurement class an environment's error carries: the environment reports a
// failed measurement as FAILED_PRECONDITION "observation runtime: COMPILE: ...", the
// class first after the context. JOB_OK when there is none.
proto::JobError measurement_class(const std::string& message) {
  size_t best = std::string::npos;
  proto::JobError error = proto::JOB_OK;
  for (const MeasureClass& c : kMeasureClasses) {
    const std::string tag = std::string(c.name) + ": ";
    for (size_t at = message.find(tag); at != std::string::npos; at = message.find(tag, at + 1)) {
      if (at == 0 || (at >= 2 && message.compare(at - 2, 2, ": ") == 0)) {
        if (at < best) best = at, error = c.error;
        break;
      }
    }
  }
  return error;
}

// "worker pid 1234" or "(pid 1234)" in a runner's message; 0 when there is none.
int64_t worker_pid_in(const std::string& message) {
  for (const char* tag : {"worker pid ", "(pid "}) {
    size_t at = message.find(tag);
    if (at == std::string::npos) continue;
    at += std::char_traits<char>::length(tag);
    int64_t pid = 0;
    bool any = false;
    while (at < message.size() && std::isdigit(static_cast<unsigned char>(message[at]))) {
      pid = pid * 10 + (message[at++] - '0');
      any = true;
    }
    if (any) return pid;
  }
  return 0;
}

proto::JobResult failure(proto::JobResult out, proto::JobError error, std::string message) {
  out.set_error(error);
  out.set_error_message(std::move(message));
  return out;
}

// Classifies an error of the job's final step (its observations and rewards).
void classify_step_error(const Status& st, proto::JobResult* out) {
  const MeasureCancellation* token = MeasureCancellation::current();
  if (st.code() == StatusCode::kCancelled || (token && token->cancelled())) {
    out->set_error(proto::JOB_UNAVAILABLE);
    out->set_error_message("the job's measurement was cancelled (the server is shutting down or its caller left): " +
                           st.message());
    return;
  }
  proto::JobError error = measurement_class(st.message());
  std::string message = st.message();
  // A kernel dies of SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT; SIGKILL comes from
  // outside the worker (the OOM killer, an operator), and TIMEOUT is reported as such.
  // That is the worker's loss, not the kernel's fault: worth running again.
  if ((error == proto::JOB_COMPILE || error == proto::JOB_RUNTIME_CRASH) &&
      message.find("killed by SIGKILL") != std::string::npos) {
    error = proto::JOB_WORKER_LOST;
    message += " [the worker was killed from outside: WORKER_LOST]";
  }
  // Past a memory cap outside a measurement (lowering an observation): as in one.
  if (error == proto::JOB_OK && st.code() == StatusCode::kResourceExhausted) error = proto::JOB_RESOURCE_EXHAUSTED;
  if (error == proto::JOB_OK) error = proto::JOB_OBSERVATION_FAILED;
  out->set_error(error);
  out->set_worker_pid(worker_pid_in(message));
  out->set_error_message(std::move(message));
}

bool known_space(const std::vector<Space>& spaces, const std::string& name) {
  return std::any_of(spaces.begin(), spaces.end(), [&](const Space& s) { return s.name() == name; });
}

std::string space_names(const std::vector<Space>& spaces) {
  std::string out;
  for (const Space& s : spaces) out += (out.empty() ? "" : ", ") + s.name();
  return out;
}

// Whether the job's observations use the full measurement (runtime and its kin), so
// that its compile time comes for free.
bool uses_measurement(const proto::EvaluateJob& job, const Env& env) {
  for (const std::string& o : job.observations())
    if (o == "runtime" || o == "gflops" || o == "correct" || o == "compile_time") return true;
  for (const std::string& r : job.rewards())
    for (const Space& s : env.reward_spaces())
      if (s.name() == r && s.platform_dependent()) return true;
  return false;
}

}  // namespace

MeasuringSpaces::MeasuringSpaces() {
  for (const std::string& name : env_names()) {
    Expected<std::unique_ptr<Env>> env = make_env(name, std::make_shared<EnvContext>());
    if (!env.ok()) continue;
    std::unordered_set<std::string>& set = by_env_[name];
    for (const Space& s : (*env)->observation_spaces())
      if (s.platform_dependent()) set.insert(s.name());
    for (const Space& s : (*env)->reward_spaces())
      if (s.platform_dependent()) set.insert(s.name());
  }
}

bool MeasuringSpaces::measures(const proto::EvaluateJob& job) const {
  auto it = by_env_.find(job.env().empty() ? kDefaultEnv : job.env());
  if (it == by_env_.end()) return false;  // an unknown environment fails without measuring
  for (const std::string& o : job.observations())
    if (it->second.count(o)) return true;
  for (const std::string& r : job.rewards())
    if (it->second.count(r)) return true;
  return false;
}

proto::JobResult run_evaluate_job(const proto::EvaluateJob& job, const std::shared_ptr<EnvContext>& context,
                                  const EvaluateLimits& limits) {
  const Clock::time_point start = Clock::now();
  proto::JobResult out;
  out.set_key(job.key());
  auto malformed = [&](std::string message) { return failure(std::move(out), proto::JOB_MALFORMED, std::move(message)); };

  // Caps first: every size a job controls.
  if (job.observations_size() > limits.max_spaces || job.rewards_size() > limits.max_spaces ||
      job.parameters_size() > limits.max_spaces)
    return malformed(
        fmt::format("a job names at most {} observations, rewards and parameters each", limits.max_spaces));
  if (int64_t(job.program().size()) > limits.max_program_bytes || int64_t(job.actions().size()) > limits.max_program_bytes)
    return malformed(fmt::format("a job's program and action texts are at most {} bytes each (--max-program-bytes)",
                                 limits.max_program_bytes));
  for (const auto& [k, v] : job.parameters())
    if (k.size() > kMaxParameterBytes || v.size() > kMaxParameterBytes)
      return malformed(fmt::format("a parameter's key and value are at most {} bytes each", kMaxParameterBytes));
  if (!std::isfinite(job.timeout_s()) || job.timeout_s() < 0 || job.timeout_s() > kMaxTimeoutS)
    return malformed(fmt::format("timeout_s must be in 0..3600 seconds, got {:f}", job.timeout_s()));

  const std::string env_name = job.env().empty() ? kDefaultEnv : job.env();
  Expected<std::unique_ptr<Env>> made = make_env(env_name, context);
  if (!made.ok()) return malformed(made.status().message());
  Env& env = **made;
  for (const std::string& o : job.observations())
    if (!known_space(env.observation_spaces(), o))
      return malformed("unknown observation " + quote_text(o) + " (" + env_name + " has " +
                       space_names(env.observation_spaces()) + ")");
  for (const std::string& r : job.rewards())
    if (!known_space(env.reward_spaces(), r))
      return malformed("unknown reward " + quote_text(r) + " (" + env_name + " has " +
                       space_names(env.reward_spaces()) + ")");

  // The benchmark: a URI, or the job's own program text (cached in
  // benchmark://inline-v0 by its hash and held there while the job runs).
  std::string uri = job.benchmark();
  InlinePrograms::Pin pin;
  if (!job.program().empty()) {
    Expected<InlinePrograms::Pin> added = registry_of(*context).inline_programs().add(job.program());
    if (!added.ok()) {
      std::string message = added.status().message();
      if (!job.benchmark().empty()) message = job.benchmark() + ": " + message;
      // A cache full of running jobs' programs is the server's state, not the job's fault.
      return failure(std::move(out),
                     added.status().code() == StatusCode::kUnavailable ? proto::JOB_UNAVAILABLE : proto::JOB_MALFORMED,
                     "the job's program: " + message);
    }
    pin = std::move(*added);
    uri = pin.uri;
  } else if (uri.empty()) {
    return malformed("a job needs a benchmark URI or a program");
  }

  for (const auto& [k, v] : job.parameters())
    if (Status st = env.set_parameter(k, v); !st.ok()) return malformed(st.message());
  const bool measures = uses_measurement(job, env) ||
                        std::any_of(job.observations().begin(), job.observations().end(),
                                    [](const std::string& o) { return o == "llvm_ir" || o == "inst_count"; });
  if (job.timeout_s() > 0 && measures) {
    const std::string seconds = fmt::format("{}", int64_t(std::max(1.0, std::ceil(job.timeout_s()))));
    if (Status st = env.set_parameter("runner.timeout_s", seconds); !st.ok())
      return malformed("timeout_s: " + st.message());
  }

  ResetOptions reset;
  reset.action_space = job.action_space();
  reset.target = job.target();
  Expected<std::vector<Event>> started = env.reset(uri, reset, {});
  if (!started.ok()) {
    const Status& st = started.status();
    return failure(std::move(out), st.code() == StatusCode::kNotFound ? proto::JOB_NOT_FOUND : proto::JOB_MALFORMED,
                   st.message());
  }

  Expected<std::vector<Event>> actions = split_job_actions(env_name, job.action_space(), job.actions());
  if (!actions.ok()) return failure(std::move(out), proto::JOB_INVALID_ACTION, actions.status().message());
  if (int64_t(actions->size()) > limits.max_actions)
    return malformed(fmt::format("a job has at most {} actions, got {}", limits.max_actions, actions->size()));
  // One step per action, so that an action that fails is named by its position.
  for (size_t i = 0; i < actions->size(); ++i) {
    StepResult r = env.step({(*actions)[i]}, {}, {});
    if (!r.error.ok()) {
      const Event& a = (*actions)[i];
      std::string text = a.is<std::string>() ? a.as<std::string>() : event_to_json(a);
      return failure(std::move(out), proto::JOB_INVALID_ACTION,
                     fmt::format("action {} of {} ({}): {}", i + 1, actions->size(), text, r.error.message()));
    }
  }

  std::vector<std::string> observations(job.observations().begin(), job.observations().end());
  std::vector<std::string> rewards(job.rewards().begin(), job.rewards().end());
  StepResult last = env.step({}, observations, rewards);
  events_to_proto(last.observations, out.mutable_observation());
  for (double r : last.rewards) out.add_reward(r);
  if (!last.error.ok()) classify_step_error(last.error, &out);

  // The kernel's compile time, when the job measured (the measurement is cached, so
  // asking costs nothing; its error, if any, is the job's own already).
  double compile_ms = 0;
  if (env_name == kDefaultEnv && uses_measurement(job, env)) {
    StepResult c = env.step({}, {"compile_time"}, {});
    if (c.error.ok() && !c.observations.empty()) compile_ms = std::max(0.0, c.observations[0].to_double() * 1e3);
  }
  // Where and how it was measured (host, CPU, LLVM, settings, worker), when it was.
  const EpisodeState state = env.state();
  if (!state.provenance_json.empty()) {
    google::protobuf::util::JsonParseOptions opts;
    opts.ignore_unknown_fields = true;
    (void)google::protobuf::util::JsonStringToMessage(state.provenance_json, out.mutable_provenance(), opts);
  }
  const double total_ms = ms_between(start, Clock::now());
  out.set_compile_ms(compile_ms);
  out.set_run_ms(std::max(0.0, total_ms - compile_ms));
  return out;
}

// --- EvaluatePool -------------------------------------------------------------------

class EvaluatePool::Stream {
 public:
  Stream(ResultFn fn, std::function<void()> on_closing)
      : on_result_(std::move(fn)), on_closing_(std::move(on_closing)) {}

 private:
  friend class EvaluatePool;
  std::mutex cb_mu_;
  ResultFn on_result_;  // guarded by cb_mu_; null once the stream is closed
  std::function<void()> on_closing_;  // guarded by cb_mu_, like on_result_
  // Guarded by the pool's mu_.
  std::deque<Queued> cheap_;
  std::deque<Queued> measuring_;
  bool closed_ = false;
  bool in_ready_ = false;
  size_t running_ = 0;
};

EvaluatePool::EvaluatePool(EvaluatePoolOptions options, std::shared_ptr<EnvContext> context)
    : options_(std::move(options)), context_(std::move(context)) {
  measure_free_ = std::max(1, options_.measure_slots);
  for (int i = 0; i < std::max(1, options_.concurrency); ++i) slots_.emplace_back([this, i] { run_slot(i); });
  watcher_ = std::thread([this] { run_watcher(); });
}

EvaluatePool::~EvaluatePool() {
  shutdown(std::chrono::seconds(0));
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  watch_cv_.notify_all();
  for (std::thread& t : slots_) t.join();
  watcher_.join();
}

std::shared_ptr<EvaluatePool::Stream> EvaluatePool::open_stream(ResultFn on_result, std::function<void()> on_closing) {
  auto stream = std::make_shared<Stream>(std::move(on_result), std::move(on_closing));
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(streams_, [](const std::weak_ptr<Stream>& s) { return s.expired(); });
  streams_.push_back(stream);
  return stream;
}

void EvaluatePool::submit(const std::shared_ptr<Stream>& stream, std::vector<proto::EvaluateJob> jobs) {
  std::vector<Queued> queued;
  queued.reserve(jobs.size());
  const Clock::time_point now = Clock::now();
  for (proto::EvaluateJob& j : jobs) {
    Queued q;
    q.measures = measuring_.measures(j);
    q.job = std::move(j);
    q.arrival = now;
    queued.push_back(std::move(q));
  }
  std::vector<proto::JobResult> refused;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stream->closed_) return;
    for (Queued& q : queued) {
      const size_t waiting = stream->cheap_.size() + stream->measuring_.size();
      if (!accepting_ || waiting >= size_t(std::max(1, options_.max_queued_per_stream))) {
        proto::JobResult r;
        r.set_key(q.job.key());
        r.set_error(proto::JOB_UNAVAILABLE);
        r.set_error_message(
            !accepting_
                ? "the server is shutting down"
                : fmt::format("the stream already has {} jobs waiting, its cap; send fewer at a time", waiting));
        r.set_instance_id(options_.instance_id);
        r.set_slot(-1);
        refused.push_back(std::move(r));
        continue;
      }
      (q.measures ? stream->measuring_ : stream->cheap_).push_back(std::move(q));
    }
    if (!stream->in_ready_ && !(stream->cheap_.empty() && stream->measuring_.empty())) {
      stream->in_ready_ = true;
      ready_.push_back(stream);
    }
  }
  work_cv_.notify_all();
  for (proto::JobResult& r : refused) deliver(*stream, std::move(r));
}

bool EvaluatePool::pick(std::shared_ptr<Stream>* out, Queued* job) {
  for (size_t n = ready_.size(); n > 0; --n) {
    std::shared_ptr<Stream> s = std::move(ready_.front());
    ready_.pop_front();
    const bool can_measure = measure_free_ > 0 && !s->measuring_.empty();
    std::deque<Queued>* from = nullptr;
    if (!s->cheap_.empty() && (!can_measure || s->cheap_.front().arrival <= s->measuring_.front().arrival)) {
      from = &s->cheap_;
    } else if (can_measure) {
      from = &s->measuring_;
    }
    if (!from) {  // only jobs that measure, and every measure slot is taken
      ready_.push_back(std::move(s));
      continue;
    }
    *job = std::move(from->front());
    from->pop_front();
    if (s->cheap_.empty() && s->measuring_.empty()) {
      s->in_ready_ = false;
    } else {
      ready_.push_back(s);  // its turn comes again after the other streams'
    }
    *out = std::move(s);
    return true;
  }
  return false;
}

void EvaluatePool::run_slot(int slot) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    std::shared_ptr<Stream> stream;
    Queued q;
    while (!stopping_ && !pick(&stream, &q)) work_cv_.wait(lock);
    if (!stream) return;  // stopping
    Running r(kEvaluateJobIdBit | next_job_id_++);
    r.stream = stream.get();
    running_.insert(&r);
    ++stream->running_;
    if (q.measures) --measure_free_;
    lock.unlock();

    const Clock::time_point start = Clock::now();
    proto::JobResult result;
    {
      MeasureCancellation::Scope scope(&r.token);
      try {
        result = run_evaluate_job(q.job, context_, options_.limits);
      } catch (const std::exception& e) {
        result = failure(proto::JobResult(), proto::JOB_INTERNAL, std::string("the job threw: ") + e.what());
        result.set_key(q.job.key());
      }
    }
    result.set_queue_ms(ms_between(q.arrival, start));
    result.set_instance_id(options_.instance_id);
    result.set_slot(slot);
    deliver(*stream, std::move(result));

    lock.lock();
    running_.erase(&r);
    --stream->running_;
    if (q.measures) {
      ++measure_free_;
      work_cv_.notify_all();
    }
    idle_cv_.notify_all();
  }
}

void EvaluatePool::run_watcher() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    std::vector<uint64_t> to_cancel;
    for (Running* r : running_)
      if (r->token.cancelled()) to_cancel.push_back(r->token.job_id());
    if (!to_cancel.empty()) {
      lock.unlock();
      Runner& runner = context_->runner();
      for (uint64_t id : to_cancel) runner.cancel(id);
      lock.lock();
      watch_cv_.wait_for(lock, kRecancelPeriod);
    } else {
      watch_cv_.wait(lock);
    }
  }
}

void EvaluatePool::cancel_locked(Running& r) {
  r.token.cancel();
  watch_cv_.notify_all();
}

void EvaluatePool::deliver(Stream& stream, proto::JobResult result) {
  std::lock_guard<std::mutex> lock(stream.cb_mu_);
  if (!stream.on_result_) return;
  stream.on_result_(std::move(result));
  delivered_.fetch_add(1);
}

void EvaluatePool::close_stream(const std::shared_ptr<Stream>& stream) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stream->closed_ = true;
    stream->cheap_.clear();
    stream->measuring_.clear();
    for (Running* r : running_)
      if (r->stream == stream.get()) cancel_locked(*r);
  }
  std::lock_guard<std::mutex> lock(stream->cb_mu_);  // waits for a delivery in progress
  stream->on_result_ = nullptr;
  stream->on_closing_ = nullptr;
}

bool EvaluatePool::accepting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return accepting_;
}

size_t EvaluatePool::outstanding(const Stream& stream) const {
  std::lock_guard<std::mutex> lock(mu_);
  return stream.cheap_.size() + stream.measuring_.size() + stream.running_;
}

void EvaluatePool::shutdown(std::chrono::steady_clock::duration grace) {
  std::vector<std::pair<std::shared_ptr<Stream>, proto::JobResult>> refused;
  std::unique_lock<std::mutex> lock(mu_);
  if (accepting_) {
    accepting_ = false;
    for (std::shared_ptr<Stream>& s : ready_) {
      for (std::deque<Queued>* q : {&s->cheap_, &s->measuring_}) {
        for (Queued& j : *q) {
          proto::JobResult r;
          r.set_key(j.job.key());
          r.set_error(proto::JOB_UNAVAILABLE);
          r.set_error_message("the server is shutting down; the job did not start");
          r.set_instance_id(options_.instance_id);
          r.set_slot(-1);
          refused.emplace_back(s, std::move(r));
        }
        q->clear();
      }
      s->in_ready_ = false;
    }
    ready_.clear();
    std::vector<std::shared_ptr<Stream>> open;
    for (const std::weak_ptr<Stream>& w : streams_)
      if (std::shared_ptr<Stream> s = w.lock()) open.push_back(std::move(s));
    lock.unlock();
    for (auto& [s, r] : refused) deliver(*s, std::move(r));
    for (const std::shared_ptr<Stream>& s : open) {
      std::lock_guard<std::mutex> cb(s->cb_mu_);
      if (s->on_closing_) s->on_closing_();
    }
    lock.lock();
  }
  idle_cv_.wait_for(lock, grace, [&] { return running_.empty(); });
  for (Running* r : running_) cancel_locked(*r);
  idle_cv_.wait(lock, [&] { return running_.empty(); });
}

EvaluatePool::Stats EvaluatePool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s;
  s.jobs = delivered_.load();
  s.running = int64_t(running_.size());
  for (const std::shared_ptr<Stream>& st : ready_) s.queued += int64_t(st->cheap_.size() + st->measuring_.size());
  return s;
}

// --- The gRPC reactor ---------------------------------------------------------------

namespace {

class EvaluateReactor final : public grpc::ServerBidiReactor<proto::EvaluateRequest, proto::EvaluateResponse> {
 public:
  EvaluateReactor(EvaluatePool& pool, const Authenticator& auth, grpc::CallbackServerContext* ctx) : pool_(pool) {
    if (Expected<std::string> caller = auth.identify(*ctx); !caller.ok()) {
      finished_ = true;
      Finish(rpc::to_grpc(caller.status()));
      return;
    }
    // Shutdown ends a stream that has nothing left to answer (it would otherwise stay
    // open, idle, until the grace runs out).
    stream_ = pool_.open_stream([this](proto::JobResult r) { on_result(std::move(r)); },
                                [this] {
                                  std::lock_guard<std::mutex> lock(mu_);
                                  maybe_finish_locked();
                                });
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;  // shutdown began while the stream was opening
    response_.set_instance_id(pool_.options().instance_id);
    response_.set_concurrency(std::max(1, pool_.options().concurrency));
    response_.set_measure_slots(std::max(1, pool_.options().measure_slots));
    response_.set_max_queued_jobs(pool_.options().max_queued_per_stream);
    writing_ = true;
    StartWrite(&response_);
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the client half-closed (or the call ended)
      std::lock_guard<std::mutex> lock(mu_);
      read_done_ = true;
      maybe_finish_locked();
      return;
    }
    std::vector<proto::EvaluateJob> jobs(std::make_move_iterator(request_.mutable_job()->begin()),
                                         std::make_move_iterator(request_.mutable_job()->end()));
    request_.Clear();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finished_) return;
      outstanding_ += jobs.size();
    }
    pool_.submit(stream_, std::move(jobs));
    // Under the lock, so that no read starts after Finish.
    std::lock_guard<std::mutex> lock(mu_);
    if (!finished_) StartRead(&request_);
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok) {  // the stream broke: nobody reads the results any more
      if (!finished_) {
        finished_ = true;
        Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the stream was closed"));
      }
      return;
    }
    if (!outbox_.empty() && !finished_) {
      start_write_locked();
      return;
    }
    maybe_finish_locked();
  }

  void OnCancel() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
    }
    if (stream_) pool_.close_stream(stream_);
    std::lock_guard<std::mutex> lock(mu_);
    if (!finished_ && !writing_) {
      finished_ = true;
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the call was cancelled"));
    }
  }

  void OnDone() override {
    if (stream_) pool_.close_stream(stream_);  // no result is delivered to this object afterwards
    delete this;
  }

 private:
  void on_result(proto::JobResult r) {
    std::lock_guard<std::mutex> lock(mu_);
    if (outstanding_ > 0) --outstanding_;
    if (finished_ || cancelled_) return;
    outbox_.push_back(std::move(r));
    if (!writing_) start_write_locked();
  }

  void start_write_locked() {
    response_.Clear();
    int n = 0;
    while (!outbox_.empty() && n < kMaxResultsPerResponse) {
      *response_.add_result() = std::move(outbox_.front());
      outbox_.pop_front();
      ++n;
    }
    writing_ = true;
    StartWrite(&response_);
  }

  void maybe_finish_locked() {
    if (finished_ || writing_ || outstanding_ > 0 || !outbox_.empty()) return;
    if (read_done_) {
      finished_ = true;
      Finish(grpc::Status::OK);
    } else if (!pool_.accepting()) {
      finished_ = true;
      Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"));
    }
  }

  EvaluatePool& pool_;
  std::shared_ptr<EvaluatePool::Stream> stream_;
  proto::EvaluateRequest request_;  // used by the one read in flight
  std::mutex mu_;
  proto::EvaluateResponse response_;  // used by the one write in flight (guarded by mu_)
  std::deque<proto::JobResult> outbox_;
  size_t outstanding_ = 0;  // jobs read and not yet answered
  bool writing_ = false;
  bool read_done_ = false;
  bool cancelled_ = false;
  bool finished_ = false;
};

}  // namespace

grpc::ServerBidiReactor<proto::EvaluateRequest, proto::EvaluateResponse>* new_evaluate_reactor(
    EvaluatePool& pool, const Authenticator& auth, grpc::CallbackServerContext* ctx) {
  return new EvaluateReactor(pool, auth, ctx);
}

}  // namespace tensorgym::service
