// The service against the transport's own floor, side by side in one run.
//
//   build/bin/service_benchmark [--rounds N] [--calls N] [--busy-poll]
//                               [--serve-binary PATH] [--baseline OTHER/tensorgym]
//                               [--pin | --pin-one-core | --pin-servers CPU]
//
// Starts `tensorgym serve` (the real service) and a bare gRPC echo server (this binary
// with --echo-server: a callback service on the same generated API as the service,
// whose Step and Session answer every message with a canned StepResponse of the size
// the real service sends), both as separate processes on 127.0.0.1, then interleaves
// chunks of calls to each with the same generated stub and the same request bytes, and
// prints medians and the median of the per-round ratios (docs/performance.md). Two
// more echoes are compared with it: one on gRPC's generic API (the floor of figures
// before 2026-12-04, 22:00 UTC), and one that spins 5 µs on each call, which shows
// what that much server time costs a round trip on the machine at hand.
// --busy-poll makes the client poll for every unary answer, to both servers
// (client/polled_call.h). Also: StartSession and ForkSession latency, the client library's
// Env::step (unary and streaming, each sleeping on or polling for its answers),
// throughput with 1 and 2 client threads, and the service's memory per idle session.
//
// --pin runs this process (the client) on CPU 0 and every server on CPU 1: on this
// VM a thread woken on the other core costs several times one woken on its own, and
// where the kernel puts each process's threads otherwise differs from run to run.
// --pin-one-core runs every process on CPU 0: the shortest round trip on this VM, and
// the placement where the server's work weighs most against it. --pin-servers CPU runs
// every server on CPU and leaves this process to the kernel, as `taskset -c CPU
// tensorgym serve` does for a service and its agent.
//
// --serve-binary runs the service from another build's tensorgym (default: the one next
// to this program), e.g. build-release/bin/tensorgym (scripts/build-release).
// --baseline starts a second service from another build's binary and compares the two
// builds' action steps with each other, interleaved like the rest (and each with the
// echo), then stops: a change to the step is measured against the build before it in
// the same stretches of the VM's time, where two separate runs differ by more than the
// change.
#include <fmt/format.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/connection.h"
#include "client/polled_call.h"
#include "client/remote_env.h"
#include "envs/env_context.h"
#include "proto/tensorgym.grpc.pb.h"

extern char** environ;

namespace tensorgym {
namespace {

using Clock = std::chrono::steady_clock;
using proto::TensorGym;

const std::string kBenchmark = "benchmark://ops-v0/gmm-1";
// One episode of the step workload: each action changes the schedule (the nest is
// lowered again), and every step observes the loop nest.
const std::vector<std::string> kActions = {"split(C.i, 32, io, ii)", "split(C.j, 16, jo, ji)",
                                           "reorder(C, io, jo, ii, ji)", "vectorize(C.ji)", "parallel(C.io)",
                                           "unroll(C.ii)"};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// ---- the echo server (a separate process) -------------------------------------------------

// Canned answers by request size: each workload's requests have their own size, and
// get an answer of the size the real service gives them. EchoService serves them on
// gRPC's generic API, TypedEchoService (below) on the generated one.
using CannedAnswers = std::map<size_t, grpc::ByteBuffer>;

class EchoReactor final : public grpc::ServerGenericBidiReactor {
 public:
  EchoReactor(const CannedAnswers& canned, bool unary) : canned_(canned), unary_(unary) { StartRead(&in_); }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    auto it = canned_.find(in_.Length());
    out_ = it != canned_.end() ? it->second : canned_.begin()->second;
    if (unary_) {
      StartWriteAndFinish(&out_, grpc::WriteOptions(), grpc::Status::OK);
    } else {
      StartWrite(&out_);
    }
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::CANCELLED);
      return;
    }
    if (!unary_) StartRead(&in_);
  }
  void OnDone() override { delete this; }

 private:
  const CannedAnswers& canned_;
  grpc::ByteBuffer in_;
  grpc::ByteBuffer out_;
  const bool unary_;
};

class EchoService final : public grpc::CallbackGenericService {
 public:
  void add(size_t request_size, const std::string& bytes) {
    grpc::Slice slice(bytes);
    canned_[request_size] = grpc::ByteBuffer(&slice, 1);
  }
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    const bool stream = ctx->method().size() >= 8 && ctx->method().compare(ctx->method().size() - 8, 8, "/Session") == 0;
    return new EchoReactor(canned_, !stream);
  }

 private:
  CannedAnswers canned_;
};

// The same echo on the generated (typed) callback API, the way the service itself is
// built: a unary Step handler and a Session stream reactor that parse the request and
// answer with a copy of the canned StepResponse. The least any typed service of this
// RPC shape pays. The generic echo above serves each unary call as a stream, which
// costs gRPC more on every call.
class TypedEchoService final : public TensorGym::CallbackService {
 public:
  // Spins this long on each message before answering (--work-us): the server time of a
  // step, without the step.
  std::chrono::nanoseconds work{0};

  bool add(size_t request_size, const std::string& bytes) {
    proto::StepResponse& r = canned_[request_size];
    return r.ParseFromString(bytes) && r.SerializeAsString() == bytes;  // the same bytes on the wire
  }
  const proto::StepResponse& answer_for(size_t request_size) const {
    auto it = canned_.find(request_size);
    return it != canned_.end() ? it->second : canned_.begin()->second;
  }

  grpc::ServerUnaryReactor* Step(grpc::CallbackServerContext* ctx, const proto::StepRequest* request,
                                 proto::StepResponse* response) override {
    spin();
    *response = answer_for(request->ByteSizeLong());
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  grpc::ServerBidiReactor<proto::StepRequest, proto::StepResponse>* Session(grpc::CallbackServerContext*) override {
    return new Stream(*this);
  }

 private:
  class Stream final : public grpc::ServerBidiReactor<proto::StepRequest, proto::StepResponse> {
   public:
    explicit Stream(const TypedEchoService& service) : service_(service) { StartRead(&in_); }
    void OnReadDone(bool ok) override {
      if (!ok) {
        Finish(grpc::Status::OK);
        return;
      }
      service_.spin();
      out_ = service_.answer_for(in_.ByteSizeLong());
      StartWrite(&out_);
    }
    void OnWriteDone(bool ok) override {
      if (!ok) {
        Finish(grpc::Status::CANCELLED);
        return;
      }
      StartRead(&in_);
    }
    void OnDone() override { delete this; }

   private:
    const TypedEchoService& service_;
    proto::StepRequest in_;
    proto::StepResponse out_;
  };

  void spin() const {
    if (work.count() == 0) return;
    const auto until = Clock::now() + work;
    while (Clock::now() < until) {
    }
  }

  std::map<size_t, proto::StepResponse> canned_;
};

// answers: "REQUEST_SIZE=FILE" pairs; `typed`: TypedEchoService, else EchoService.
int run_echo_server(const std::string& port_file, const std::vector<std::string>& answers, bool typed, int work_us) {
  EchoService service;
  TypedEchoService typed_service;
  typed_service.work = std::chrono::microseconds(work_us);
  for (const std::string& a : answers) {
    const size_t eq = a.find('=');
    std::ifstream in(a.substr(eq + 1), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    service.add(std::stoul(a.substr(0, eq)), ss.str());
    if (!typed_service.add(std::stoul(a.substr(0, eq)), ss.str())) {
      fmt::print(stderr, "echo: the answer in {} does not parse back to its bytes\n", a);
      return 1;
    }
  }
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  if (typed) {
    builder.RegisterService(&typed_service);
  } else {
    builder.RegisterCallbackGenericService(&service);
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) return 1;
  {
    std::ofstream out(port_file + ".tmp");
    out << port << "\n";
  }
  std::rename((port_file + ".tmp").c_str(), port_file.c_str());
  server->Wait();  // until killed
  return 0;
}

// ---- child processes ------------------------------------------------------------------------

// The run's folder (answers, port files): a fixed buffer, not a std::string that exit's
// static destructors could free under a client thread.
char g_run_dir[256] = "";

void remove_run_dir() {
  if (!g_run_dir[0]) return;
  std::error_code ignored;
  std::filesystem::remove_all(g_run_dir, ignored);
}

// Ends a run that cannot go on, from any thread: removes the run's folder and exits
// without static destructors (client threads may still be running); the servers die
// with this process (spawn).
[[noreturn]] void fail(const std::string& what) {
  fmt::print(stderr, "service_benchmark: {}\n", what);
  remove_run_dir();
  std::_Exit(1);
}

struct Child {
  pid_t pid = -1;
  int port = 0;
  ~Child() {
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      int status = 0;
      ::waitpid(pid, &status, 0);
    }
  }
};

// --pin, --pin-one-core, --pin-servers: the servers' CPU; -1 leaves placement to the kernel.
int g_server_cpu = -1;

// Raw calls: a forked child calls it before exec, where only async-signal-safe calls
// may run.
void pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  ::sched_setaffinity(0, sizeof set, &set);
}

// Starts args[0] with the child tied to this process: PR_SET_PDEATHSIG kills it when
// the benchmark ends in any way (a crash, kill -9, fail() from a client thread), so no
// server outlives a run.
bool spawn(std::vector<std::string> args, const std::string& port_file, Child* child) {
  std::remove(port_file.c_str());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {  // only async-signal-safe calls until exec: gRPC's threads run in the parent
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before the prctl
    if (g_server_cpu >= 0) pin_to_cpu(g_server_cpu);
    ::execve(argv[0], argv.data(), environ);
    ::_exit(127);
  }
  child->pid = pid;
  for (int i = 0; i < 3000; ++i) {
    std::ifstream in(port_file);
    if (in >> child->port && child->port > 0) return true;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {  // exited: cannot exec, or failed to start
      child->pid = -1;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::string self_path() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

int64_t rss_kib(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  return -1;
}

// ---- the client side -------------------------------------------------------------------------

std::unique_ptr<grpc::ClientContext> context() {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  return c;
}

std::string start_session(TensorGym::Stub& stub) {
  proto::StartSessionRequest r;
  r.set_env("schedule-v0");
  r.set_benchmark(kBenchmark);
  proto::StartSessionResponse s;
  grpc::Status st = stub.StartSession(context().get(), r, &s);
  if (!st.ok()) fail("StartSession: " + st.error_message());
  return s.session_id();
}

void end_session(TensorGym::Stub& stub, const std::string& id) {
  proto::EndSessionRequest r;
  r.set_session_id(id);
  proto::EndSessionResponse e;
  (void)stub.EndSession(context().get(), r, &e);
}

proto::StepRequest step_request(const std::string& session, const std::string& action, const std::string& observation) {
  proto::StepRequest r;
  r.set_session_id(session);
  if (!action.empty()) r.add_action()->set_string_value(action);
  r.add_observation_space(observation);
  return r;
}

// --busy-poll: every timed unary call, to either server, polls for its answer instead
// of sleeping on it (client/polled_call.h), so that the client's vCPU never halts.
bool g_busy_poll = false;
grpc::Status unary_step(TensorGym::Stub& stub, grpc::ClientContext* ctx, const proto::StepRequest& r,
                        proto::StepResponse* out) {
  if (!g_busy_poll) return stub.Step(ctx, r, out);
  // One queue per thread (a queue serves one call at a time), left to the exit.
  static thread_local client::PolledCalls* polled = new client::PolledCalls;
  return polled->step(stub, ctx, r, out, 1e6);
}

// A workload: `calls` timed calls; returns each call's microseconds.
using Workload = std::function<std::vector<double>(int calls)>;

struct Comparison {
  double a_us = 0, b_us = 0, ratio = 0;
};

// Calls per chunk when A and B are interleaved.
constexpr int kChunk = 10;

// Interleaves A and B in chunks of kChunk calls (A first in even chunks, B first in odd
// ones). On this VM a loopback round trip drifts by tens of percent over stretches of
// tens of milliseconds (where the threads land on the two cores, among other things);
// chunks of a few milliseconds put A and B through the same stretches, where blocks of
// a whole round did not (one build's action-step ratio ranged 1.06-1.45 over seven
// runs). Each round's ratio is median(A) / median(B) over its calls (medians, not
// means: a burst of other work lands on a few calls); returns the medians and the
// median ratio.
Comparison compare(const Workload& a, const Workload& b, int rounds, int calls) {
  a(calls / 4);  // warm both
  b(calls / 4);
  std::vector<double> as, bs, ratios;
  for (int r = 0; r < rounds; ++r) {
    std::vector<double> ta, tb;
    auto take = [](const Workload& w, int n, std::vector<double>* into) {
      std::vector<double> t = w(n);
      into->insert(into->end(), t.begin(), t.end());
    };
    for (int done = 0, c = 0; done < calls; done += kChunk, ++c) {
      const int n = std::min(kChunk, calls - done);
      if (c % 2 == 0) {
        take(a, n, &ta);
        take(b, n, &tb);
      } else {
        take(b, n, &tb);
        take(a, n, &ta);
      }
    }
    as.push_back(median(ta));
    bs.push_back(median(tb));
    ratios.push_back(as.back() / bs.back());
  }
  return {median(as), median(bs), median(ratios)};
}

// Steps of the action workload on a session: episodes of kActions, a fresh session
// (not timed) after each.
struct ActionSteps {
  TensorGym::Stub& stub;
  std::string observation;
  std::string session;
  size_t next = 0;
  std::vector<double> operator()(int calls) {
    std::vector<double> t;
    for (int i = 0; i < calls; ++i) {
      if (session.empty() || next == kActions.size()) {
        if (!session.empty()) end_session(stub, session);
        session = start_session(stub);
        next = 0;
      }
      proto::StepRequest r = step_request(session, kActions[next++], observation);
      proto::StepResponse out;
      grpc::ClientContext ctx;
      const auto t0 = Clock::now();
      grpc::Status st = unary_step(stub, &ctx, r, &out);
      t.push_back(micros(Clock::now() - t0));
      if (!st.ok()) fmt::print(stderr, "Step: {}\n", st.error_message());
    }
    return t;
  }
};

// Unary calls with one fixed request (echo, or an observation-only step).
std::vector<double> fixed_unary(TensorGym::Stub& stub, const proto::StepRequest& r, int calls) {
  std::vector<double> t;
  for (int i = 0; i < calls; ++i) {
    proto::StepResponse out;
    grpc::ClientContext ctx;
    const auto t0 = Clock::now();
    (void)unary_step(stub, &ctx, r, &out);
    t.push_back(micros(Clock::now() - t0));
  }
  return t;
}

// One message each way on an open Session stream.
struct StreamSteps {
  TensorGym::Stub& stub;
  std::unique_ptr<grpc::ClientContext> ctx = std::make_unique<grpc::ClientContext>();
  std::unique_ptr<grpc::ClientReaderWriter<proto::StepRequest, proto::StepResponse>> stream;
  explicit StreamSteps(TensorGym::Stub& s) : stub(s), stream(s.Session(ctx.get())) {}
  ~StreamSteps() {
    stream->WritesDone();
    (void)stream->Finish();
  }
  std::vector<double> run(const std::function<proto::StepRequest()>& next, int calls) {
    std::vector<double> t;
    for (int i = 0; i < calls; ++i) {
      proto::StepRequest r = next();
      proto::StepResponse out;
      const auto t0 = Clock::now();
      stream->Write(r);
      stream->Read(&out);
      t.push_back(micros(Clock::now() - t0));
    }
    return t;
  }
};

int run_benchmark(int rounds, int calls, const std::string& serve_binary, const std::string& baseline) {
  const std::string dir = fmt::format("/tmp/tensorgym-service-benchmark-{}", ::getpid());
  ::mkdir(dir.c_str(), 0700);
  g_run_dir[dir.copy(g_run_dir, sizeof g_run_dir - 1)] = '\0';
  // Removes the answers and the port files however the run ends; declared before the
  // children, it runs after they are stopped (the killed echo leaves its port file).
  struct RemoveDir {
    ~RemoveDir() { remove_run_dir(); }
  } remove_dir;
  const std::string self = self_path();
  const std::string tensorgym = serve_binary.empty() ? self.substr(0, self.rfind('/')) + "/tensorgym" : serve_binary;

  // `binary serve`, its port file named `name`.
  auto start_service = [&](const std::string& binary, const std::string& name, Child* child) {
    const std::string port_file = dir + "/" + name + ".port";
    std::vector<std::string> serve = {binary,        "serve",   "--port",         "0",     "--port-file", port_file,
                                      "--log-level", "warning", "--max-sessions", "100000",
                                      "--max-sessions-per-client", "100000"};
    if (spawn(serve, port_file, child)) return true;
    fmt::print(stderr, "cannot start {} serve\n", binary);
    return false;
  };
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto stub_for = [&](const Child& child) {
    return TensorGym::NewStub(
        grpc::CreateCustomChannel(fmt::format("127.0.0.1:{}", child.port), grpc::InsecureChannelCredentials(), args));
  };
  Child real;
  if (!start_service(tensorgym, "real", &real)) return 1;
  auto real_stub = stub_for(real);

  // The echo answers an action step with a real StepResponse of the median size of the
  // episode's answers for that observation.
  auto median_answer = [&](const std::string& observation) {
    std::vector<std::string> responses;
    std::string s = start_session(*real_stub);
    for (const std::string& a : kActions) {
      proto::StepResponse out;
      grpc::ClientContext ctx;
      (void)real_stub->Step(&ctx, step_request(s, a, observation), &out);
      responses.push_back(out.SerializeAsString());
    }
    end_session(*real_stub, s);
    std::sort(responses.begin(), responses.end(),
              [](const std::string& x, const std::string& y) { return x.size() < y.size(); });
    return responses[responses.size() / 2];
  };
  const std::string canned = median_answer("loop_nest");
  const std::string action_step_mask_answer = median_answer("action_mask");
  // The session ids of the real and the echo requests differ, but not their encoded size.
  const std::string kEchoSession(32, 'e');  // the size of a real handle
  const size_t request_bytes = step_request(kEchoSession, kActions[0], "loop_nest").ByteSizeLong();
  const proto::StepRequest echo_action_mask_request = step_request(kEchoSession, kActions[0], "action_mask");
  std::string mask_answer;
  std::string mask_session = start_session(*real_stub);
  const proto::StepRequest mask_request = step_request(mask_session, "", "action_mask");
  {
    proto::StepResponse out;
    grpc::ClientContext ctx;
    (void)real_stub->Step(&ctx, mask_request, &out);
    mask_answer = out.SerializeAsString();
  }
  const proto::StepRequest echo_mask_request = step_request(kEchoSession, "", "action_mask");
  // loop_nest without an action: the nest is cached, the step only prints it.
  std::string nest_answer;
  const proto::StepRequest nest_request = step_request(mask_session, "", "loop_nest");
  {
    proto::StepResponse out;
    grpc::ClientContext ctx;
    (void)real_stub->Step(&ctx, nest_request, &out);
    nest_answer = out.SerializeAsString();
  }
  const proto::StepRequest echo_nest_request = step_request(kEchoSession, "", "loop_nest");
  // The echo's workloads: each request's size, and the answer it gets. The echo tells
  // them apart by size alone.
  const std::vector<std::pair<size_t, const std::string*>> echo_answers = {
      {request_bytes, &canned},
      {echo_action_mask_request.ByteSizeLong(), &action_step_mask_answer},
      {echo_mask_request.ByteSizeLong(), &mask_answer},
      {echo_nest_request.ByteSizeLong(), &nest_answer}};
  std::vector<std::string> answer_args;  // "SIZE=FILE", for every echo server
  std::set<size_t> echo_sizes;
  for (const auto& [size, answer] : echo_answers) {
    if (!echo_sizes.insert(size).second) {
      fmt::print(stderr, "two echo workloads have requests of the same size\n");
      return 1;
    }
    const std::string file = fmt::format("{}/answer{}.bin", dir, answer_args.size());
    std::ofstream(file, std::ios::binary) << *answer;
    answer_args.push_back(fmt::format("{}={}", size, file));
  }
  // An echo server named `name` (its port file), with `flag` (empty for none).
  auto start_echo = [&](const std::string& name, const std::string& flag, Child* child) {
    const std::string port_file = dir + "/" + name + ".port";
    std::vector<std::string> echo_args = {self, "--echo-server", port_file};
    echo_args.insert(echo_args.end(), answer_args.begin(), answer_args.end());
    if (!flag.empty()) echo_args.push_back(flag);
    if (spawn(echo_args, port_file, child)) return true;
    fmt::print(stderr, "cannot start the {} server\n", name);
    return false;
  };
  Child echo;
  if (!start_echo("echo", "", &echo)) return 1;
  auto echo_stub = stub_for(echo);
  // The same echo on gRPC's generic API (the floor of earlier figures), to show what it adds.
  Child generic_echo;
  if (!start_echo("generic_echo", "--generic", &generic_echo)) return 1;
  auto generic_stub = stub_for(generic_echo);
  // And one that spins kEchoWorkUs on each call, about an action step's median time in
  // the server: what that much work costs a round trip on this machine, step or not.
  constexpr int kEchoWorkUs = 5;
  Child working_echo;
  if (!start_echo("working_echo", fmt::format("--work-us={}", kEchoWorkUs), &working_echo)) return 1;
  auto working_stub = stub_for(working_echo);

  fmt::print(
      "service_benchmark: {} rounds of {} calls, alternating; action step: request {} B, response {} B; "
      "action_mask step: request {} B, response {} B\n\n",
      rounds, calls, request_bytes, canned.size(), mask_request.ByteSizeLong(), mask_answer.size());
  fmt::print("| measure | TensorGym | bare gRPC echo (same shape, same bytes) | ratio |\n|---|---|---|---|\n");

  // 1. Unary Step: an action + the loop_nest observation.
  ActionSteps real_steps{*real_stub, "loop_nest"};
  const proto::StepRequest echo_request = step_request(kEchoSession, kActions[0], "loop_nest");
  Comparison unary = compare([&](int n) { return real_steps(n); },
                             [&](int n) { return fixed_unary(*echo_stub, echo_request, n); }, rounds, calls);
  fmt::print("| unary Step (action + loop_nest), us | {:.1f} | {:.1f} | {:.3f} |\n", unary.a_us, unary.b_us,
             unary.ratio);

  if (!baseline.empty()) {
    Child other;
    if (!start_service(baseline, "baseline", &other)) return 1;
    auto other_stub = stub_for(other);
    ActionSteps other_steps{*other_stub, "loop_nest"};
    Comparison against_echo = compare([&](int n) { return other_steps(n); },
                                      [&](int n) { return fixed_unary(*echo_stub, echo_request, n); }, rounds, calls);
    fmt::print("| baseline build: unary Step (action + loop_nest), us | {:.1f} | {:.1f} | {:.3f} |\n",
               against_echo.a_us, against_echo.b_us, against_echo.ratio);
    Comparison builds =
        compare([&](int n) { return real_steps(n); }, [&](int n) { return other_steps(n); }, rounds, calls);
    fmt::print("\n| measure | this build | baseline build | ratio |\n|---|---|---|---|\n");
    fmt::print("| unary Step (action + loop_nest), us | {:.1f} | {:.1f} | {:.3f} |\n", builds.a_us, builds.b_us,
               builds.ratio);
    return 0;
  }

  // The same actions with the action_mask observation, which needs no lowering.
  ActionSteps real_mask_steps{*real_stub, "action_mask"};
  Comparison action_mask =
      compare([&](int n) { return real_mask_steps(n); },
              [&](int n) { return fixed_unary(*echo_stub, echo_action_mask_request, n); }, rounds, calls);
  fmt::print("| unary Step (action + action_mask), us | {:.1f} | {:.1f} | {:.3f} |\n", action_mask.a_us,
             action_mask.b_us, action_mask.ratio);

  // 2. Unary Step: action_mask only (no action).
  Comparison mask = compare([&](int n) { return fixed_unary(*real_stub, mask_request, n); },
                            [&](int n) { return fixed_unary(*echo_stub, echo_mask_request, n); }, rounds, calls);
  fmt::print("| unary Step (action_mask, no action), us | {:.1f} | {:.1f} | {:.3f} |\n", mask.a_us, mask.b_us,
             mask.ratio);
  Comparison nest = compare([&](int n) { return fixed_unary(*real_stub, nest_request, n); },
                            [&](int n) { return fixed_unary(*echo_stub, echo_nest_request, n); }, rounds, calls);
  fmt::print("| unary Step (loop_nest, no action), us | {:.1f} | {:.1f} | {:.3f} |\n", nest.a_us, nest.b_us,
             nest.ratio);
  Comparison generic = compare([&](int n) { return fixed_unary(*generic_stub, echo_request, n); },
                               [&](int n) { return fixed_unary(*echo_stub, echo_request, n); }, rounds, calls);
  fmt::print(
      "| the echo on gRPC's generic API / this echo (unary, action step's bytes), us | {:.1f} | {:.1f} | {:.3f} |\n",
      generic.a_us, generic.b_us, generic.ratio);
  Comparison working = compare([&](int n) { return fixed_unary(*working_stub, echo_request, n); },
                               [&](int n) { return fixed_unary(*echo_stub, echo_request, n); }, rounds, calls);
  fmt::print(
      "| the echo spinning {} us a call / this echo (unary, action step's bytes), us | {:.1f} | {:.1f} | {:.3f} |\n",
      kEchoWorkUs, working.a_us, working.b_us, working.ratio);

  // 3. Session stream: one message each way, action + loop_nest.
  {
    StreamSteps real_stream(*real_stub), echo_stream(*echo_stub);
    std::string session;
    size_t next = 0;
    auto real_next = [&] {
      if (session.empty() || next == kActions.size()) {
        if (!session.empty()) end_session(*real_stub, session);
        session = start_session(*real_stub);
        next = 0;
      }
      return step_request(session, kActions[next++], "loop_nest");
    };
    Comparison stream = compare([&](int n) { return real_stream.run(real_next, n); },
                                [&](int n) { return echo_stream.run([&] { return echo_request; }, n); }, rounds, calls);
    fmt::print("| Session stream step (action + loop_nest), us | {:.1f} | {:.1f} | {:.3f} |\n", stream.a_us,
               stream.b_us, stream.ratio);
    StreamSteps generic_stream(*generic_stub), typed_stream(*echo_stub);
    Comparison generic_vs_typed =
        compare([&](int n) { return generic_stream.run([&] { return echo_request; }, n); },
                [&](int n) { return typed_stream.run([&] { return echo_request; }, n); }, rounds, calls);
    fmt::print(
        "| the echo on gRPC's generic API / this echo (stream message, action step's bytes), us | {:.1f} | {:.1f} | "
        "{:.3f} "
        "|\n",
        generic_vs_typed.a_us, generic_vs_typed.b_us, generic_vs_typed.ratio);
    // What the stream saves: TensorGym's stream step against TensorGym's unary Step.
    ActionSteps unary_steps{*real_stub, "loop_nest"};
    Comparison vs_unary = compare([&](int n) { return real_stream.run(real_next, n); },
                                  [&](int n) { return unary_steps(n); }, rounds, calls);
    fmt::print(
        "| TensorGym Session stream step / TensorGym unary Step (action + loop_nest), us | {:.1f} | {:.1f} (unary) | "
        "{:.3f} |\n",
        vs_unary.a_us, vs_unary.b_us, vs_unary.ratio);
    if (!unary_steps.session.empty()) end_session(*real_stub, unary_steps.session);
  }

  // 4. The client library's Env::step (unary and streaming) against the raw stub.
  {
    client::ConnectionOptions o;
    o.endpoint = fmt::format("127.0.0.1:{}", real.port);
    auto conn = client::Connection::open(o);
    if (!conn.ok()) {
      fmt::print(stderr, "{}\n", conn.status().to_string());
      return 1;
    }
    for (int mode = 0; mode < 4; ++mode) {
      const bool streaming = mode & 1, busy_poll = mode & 2;
      auto env = (*conn)->make_env("schedule-v0");
      (*env)->set_streaming(streaming);
      if (busy_poll) (*env)->set_busy_poll(1000);
      size_t next = kActions.size();
      auto lib = [&](int n) {
        std::vector<double> t;
        for (int i = 0; i < n; ++i) {
          if (next == kActions.size()) {
            (void)(*env)->reset(kBenchmark, {}, {});
            next = 0;
          }
          const auto t0 = Clock::now();
          StepResult r = (*env)->step({Event(kActions[next++])}, {"loop_nest"}, {});
          t.push_back(micros(Clock::now() - t0));
          if (!r.error.ok()) fmt::print(stderr, "step: {}\n", r.error.to_string());
        }
        return t;
      };
      // Against the generated stub doing the same steps: what the library adds.
      ActionSteps raw{*real_stub, "loop_nest"};
      Comparison c = compare(lib, [&](int n) { return raw(n); }, rounds, calls);
      fmt::print(
          "| client::RemoteEnv::step{}{} / raw stub Step (action + loop_nest), us | {:.1f} | {:.1f} (raw stub) | "
          "{:.3f} |\n",
          streaming ? " streaming" : "", busy_poll ? " with set_busy_poll(1000)" : "", c.a_us, c.b_us, c.ratio);
      if (!raw.session.empty()) end_session(*real_stub, raw.session);
    }
  }

  // 5. The same step in-process, for the work itself.
  {
    auto env = make_env("schedule-v0", std::make_shared<EnvContext>());
    std::vector<double> per, mask;
    for (int r = 0; r < rounds; ++r) {
      std::vector<double> t, m;
      for (int i = 0; i < calls; ++i) {
        if (i % int(kActions.size()) == 0) (void)(*env)->reset(kBenchmark, {}, {});
        auto t0 = Clock::now();
        StepResult s = (*env)->step({Event(kActions[size_t(i) % kActions.size()])}, {"loop_nest"}, {});
        t.push_back(micros(Clock::now() - t0));
        t0 = Clock::now();
        s = (*env)->step({}, {"action_mask"}, {});
        m.push_back(micros(Clock::now() - t0));
      }
      per.push_back(median(t));
      mask.push_back(median(m));
    }
    fmt::print("| in-process Env::step (action + loop_nest), us | {:.1f} | | |\n", median(per));
    // The same steps, each after an echo call: caches as cold as a server's, where
    // gRPC's threads and the client run between two steps of a session.
    std::vector<double> cold;
    for (int r = 0; r < rounds; ++r) {
      std::vector<double> t;
      for (int i = 0; i < calls; ++i) {
        if (i % int(kActions.size()) == 0) (void)(*env)->reset(kBenchmark, {}, {});
        fixed_unary(*echo_stub, echo_request, 1);
        const auto t0 = Clock::now();
        StepResult s = (*env)->step({Event(kActions[size_t(i) % kActions.size()])}, {"loop_nest"}, {});
        t.push_back(micros(Clock::now() - t0));
      }
      cold.push_back(median(t));
    }
    fmt::print("| in-process Env::step (action + loop_nest), each after an echo call, us | {:.1f} | | |\n",
               median(cold));
    fmt::print("| in-process Env::step (action_mask, no action), us | {:.1f} | | |\n", median(mask));
  }

  // 6. StartSession and ForkSession latency (EndSession not timed).
  {
    std::vector<double> starts, forks;
    for (int i = 0; i < rounds * 20; ++i) {
      proto::StartSessionRequest r;
      r.set_env("schedule-v0");
      r.set_benchmark(kBenchmark);
      proto::StartSessionResponse s;
      grpc::ClientContext ctx;
      auto t0 = Clock::now();
      (void)real_stub->StartSession(&ctx, r, &s);
      starts.push_back(micros(Clock::now() - t0));
      proto::StepResponse out;
      grpc::ClientContext sctx;
      (void)real_stub->Step(&sctx, step_request(s.session_id(), kActions[0], "loop_nest"), &out);
      proto::ForkSessionRequest f;
      f.set_session_id(s.session_id());
      proto::ForkSessionResponse fr;
      grpc::ClientContext fctx;
      t0 = Clock::now();
      (void)real_stub->ForkSession(&fctx, f, &fr);
      forks.push_back(micros(Clock::now() - t0));
      end_session(*real_stub, fr.session_id());
      end_session(*real_stub, s.session_id());
    }
    fmt::print("| StartSession (gmm-1), us | {:.1f} | | |\n", median(starts));
    fmt::print("| ForkSession, us | {:.1f} | | |\n", median(forks));
  }

  // 7. Throughput with 1 and 2 client threads (each its own session and channel).
  auto throughput = [&](int threads, bool use_echo) {
    std::atomic<int64_t> steps{0};
    std::atomic<bool> stop{false};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        grpc::ChannelArguments a;
        a.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
        a.SetInt("tensorgym.bench.thread", t);  // a channel (connection) of its own
        auto ch = grpc::CreateCustomChannel(fmt::format("127.0.0.1:{}", use_echo ? echo.port : real.port),
                                            grpc::InsecureChannelCredentials(), a);
        auto stub = TensorGym::NewStub(ch);
        ActionSteps w{*stub, "loop_nest"};
        while (!stop.load()) {
          if (use_echo) {
            fixed_unary(*stub, echo_request, 10);
          } else {
            w(10);
          }
          steps += 10;
        }
        if (!w.session.empty()) end_session(*stub, w.session);
      });
    }
    std::this_thread::sleep_for(std::chrono::seconds(2));
    stop = true;
    for (std::thread& th : pool) th.join();
    return double(steps.load()) / 2.0;
  };
  const double t1 = throughput(1, false), t2 = throughput(2, false);
  const double e1 = throughput(1, true), e2 = throughput(2, true);
  fmt::print("| throughput, 1 client thread, steps/s | {:.0f} | {:.0f} | {:.3f} |\n", t1, e1, t1 / e1);
  fmt::print("| throughput, 2 client threads, steps/s | {:.0f} | {:.0f} | {:.3f} |\n", t2, e2, t2 / e2);

  // 8. Memory per idle session.
  {
    const int n = 2000;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const int64_t before = rss_kib(real.pid);
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) ids.push_back(start_session(*real_stub));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const int64_t after = rss_kib(real.pid);
    fmt::print("| memory per idle session ({} sessions on gmm-1), KiB | {:.1f} | | |\n", n, double(after - before) / n);
    for (const std::string& id : ids) end_session(*real_stub, id);
  }
  return 0;
}

}  // namespace
}  // namespace tensorgym

int main(int argc, char** argv) {
  if (argc >= 4 && std::strcmp(argv[1], "--echo-server") == 0) {
    std::vector<std::string> answers(argv + 3, argv + argc);
    auto take_flag = [&](const char* flag) {
      const auto it = std::find(answers.begin(), answers.end(), flag);
      if (it == answers.end()) return false;
      answers.erase(it);
      return true;
    };
    const bool generic = take_flag("--generic");
    // --name=N: an integer option, -1 when absent.
    auto take_int = [&](const std::string& name) {
      for (auto it = answers.begin(); it != answers.end(); ++it) {
        if (it->rfind(name + "=", 0) != 0) continue;
        const int v = std::atoi(it->c_str() + name.size() + 1);
        answers.erase(it);
        return v;
      }
      return -1;
    };
    const int work_us = std::max(0, take_int("--work-us"));
    return tensorgym::run_echo_server(argv[2], answers, !generic, work_us);
  }
  int rounds = 15, calls = 200;
  std::string baseline, serve_binary;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--busy-poll") == 0) tensorgym::g_busy_poll = true;
    if (std::strcmp(argv[i], "--pin") == 0 && std::thread::hardware_concurrency() >= 2) {
      tensorgym::pin_to_cpu(0);  // before any gRPC thread starts: they inherit it
      tensorgym::g_server_cpu = 1;
    }
    if (std::strcmp(argv[i], "--pin-one-core") == 0) {
      tensorgym::pin_to_cpu(0);
      tensorgym::g_server_cpu = 0;
    }
    if (i + 1 >= argc) continue;
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--calls") == 0) calls = std::max(8, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--pin-servers") == 0) tensorgym::g_server_cpu = std::max(0, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--baseline") == 0) baseline = argv[i + 1];
    if (std::strcmp(argv[i], "--serve-binary") == 0) serve_binary = argv[i + 1];
  }
  return tensorgym::run_benchmark(rounds, calls, serve_binary, baseline);
}
