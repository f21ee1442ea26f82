// The gRPC service end to end over loopback with the generated stubs: every RPC,
// status codes and messages of bad requests, caps, auth, deadlines that cancel a
// measurement, idle reaping, streams, health, and many sessions from many threads.
// Servers run in this process (service::Server) on 127.0.0.1 only.
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/client_unary_call.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <random>
#include <thread>

#include "proto/rpc_status.h"
#include "proto/wire.h"
#include "codegen/measure/runner.h"
#include "envs/env_context.h"
#include "proto/tensorgym.grpc.pb.h"
#include "service/auth.h"
#include "service/convert.h"
#include "service/server.h"
#include "service/session_table.h"
#include "service/step_messages.h"
#include "service/tensorgym_service.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

using proto::TensorGym;

const std::string kWorker = std::string(TENSORGYM_BINARY_DIR) + "/bin/tensorgym";
const std::string kGemm = "benchmark://ops-v0/gmm-1";

service::ServerOptions test_options() {
  service::ServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.worker_binary = kWorker;
  o.threads = 1;
  o.log_level = service::LogLevel::kWarning;
  o.shutdown_grace_s = 1;
  return o;
}

struct TestServer {
  std::unique_ptr<service::Server> server;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<TensorGym::Stub> stub;

  explicit TestServer(service::ServerOptions o = test_options()) {
    service::set_log_level(o.log_level);
    Expected<std::unique_ptr<service::Server>> s = service::Server::start(o);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    if (!s.ok()) return;
    server = std::move(*s);
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    channel = grpc::CreateCustomChannel(server->address(), grpc::InsecureChannelCredentials(), args);
    stub = TensorGym::NewStub(channel);
  }
};

// Most tests share one server.
TestServer& shared() {
  static TestServer* s = new TestServer();
  return *s;
}

// Every call of these tests is bounded.
std::unique_ptr<grpc::ClientContext> ctx(double seconds = 60) {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(int64_t(seconds * 1000)));
  return c;
}

proto::Event text(const std::string& s) {
  proto::Event e;
  e.set_string_value(s);
  return e;
}

proto::Event index(int64_t i) {
  proto::Event e;
  e.set_int64_value(i);
  return e;
}

std::string start(TensorGym::Stub& stub, const std::string& benchmark = kGemm,
               const std::vector<std::string>& observations = {}, proto::StartSessionResponse* out = nullptr) {
  proto::StartSessionRequest r;
  r.set_env("schedule-v0");
  r.set_benchmark(benchmark);
  for (const std::string& o : observations) r.add_observation_space(o);
  proto::StartSessionResponse response;
  grpc::Status st = stub.StartSession(ctx().get(), r, &response);
  EXPECT_TRUE(st.ok()) << st.error_message();
  if (out) *out = response;
  return response.session_id();
}

grpc::Status step(TensorGym::Stub& stub, const std::string& session, const std::vector<proto::Event>& actions,
                  const std::vector<std::string>& observations, const std::vector<std::string>& rewards,
                  proto::StepResponse* response, bool error_in_response = false, double deadline_s = 60) {
  proto::StepRequest r;
  r.set_session_id(session);
  for (const proto::Event& a : actions) *r.add_action() = a;
  for (const std::string& o : observations) r.add_observation_space(o);
  for (const std::string& w : rewards) r.add_reward_space(w);
  r.set_error_in_response(error_in_response);
  return stub.Step(ctx(deadline_s).get(), r, response);
}

proto::EpisodeState get_state(TensorGym::Stub& stub, const std::string& session, uint64_t* step_count = nullptr) {
  proto::GetStateRequest r;
  r.set_session_id(session);
  proto::GetStateResponse response;
  grpc::Status st = stub.GetState(ctx().get(), r, &response);
  EXPECT_TRUE(st.ok()) << st.error_message();
  if (step_count) *step_count = response.step_count();
  return response.state();
}

grpc::Status set_parameter(TensorGym::Stub& stub, const std::string& session, const std::string& key, const std::string& value) {
  proto::SendSessionParameterRequest r;
  r.set_session_id(session);
  r.set_key(key);
  r.set_value(value);
  proto::SendSessionParameterResponse response;
  return stub.SendSessionParameter(ctx().get(), r, &response);
}

// ---- discovery ------------------------------------------------------------------------

// What a Step handler parks with its messages lives until gRPC releases them (after
// the answer is written), and goes then.
TEST(StepMessages, ReleaseDropsWhatTheStepKept) {
  int destroyed = 0;
  auto counted = [&destroyed] {
    return std::shared_ptr<const void>(new int(0), [&destroyed](const int* p) {
      ++destroyed;
      delete p;
    });
  };
  service::StepMessageAllocator allocator;
  auto* messages = dynamic_cast<service::StepMessages*>(allocator.AllocateMessages());
  ASSERT_NE(messages, nullptr);
  ASSERT_NE(messages->request(), nullptr);
  ASSERT_NE(messages->response(), nullptr);
  EXPECT_EQ(service::StepMessages::of(messages), messages);
  messages->keep_until_done({counted(), counted()});
  messages->keep_until_done({counted()});
  EXPECT_EQ(destroyed, 0);
  messages->Release();  // as gRPC does when the call is done; deletes the holder
  EXPECT_EQ(destroyed, 3);
}

TEST(Service, GetVersionNamesTheEnvironmentsAndTheInstance) {
  proto::GetVersionResponse v;
  ASSERT_TRUE(shared().stub->GetVersion(ctx().get(), {}, &v).ok());
  EXPECT_EQ(v.service_version(), TENSORGYM_VERSION);
  EXPECT_EQ(v.protocol_version(), "2");
  EXPECT_FALSE(v.instance_id().empty());
  bool schedule = false;
  for (const std::string& e : v.env()) schedule |= e == "schedule-v0";
  EXPECT_TRUE(schedule);
}

TEST(Service, GetSpacesAreSelfDescribing) {
  proto::GetSpacesRequest r;
  r.set_env("schedule-v0");
  proto::GetSpacesResponse s;
  ASSERT_TRUE(shared().stub->GetSpaces(ctx().get(), r, &s).ok());
  ASSERT_GE(s.action_space_size(), 2);
  EXPECT_EQ(s.action_space(0).name(), "primitives");
  EXPECT_TRUE(s.action_space(0).has_discrete());
  EXPECT_GT(s.action_space(0).discrete().n(), 100);
  bool runtime = false, loop_nest = false, mask = false;
  for (const proto::Space& o : s.observation_space()) {
    if (o.name() == "runtime") {
      runtime = true;
      EXPECT_FALSE(o.deterministic());
      EXPECT_TRUE(o.platform_dependent());
      EXPECT_TRUE(o.has_double_range());
      EXPECT_EQ(o.default_value().double_value(), -1.0);
    }
    if (o.name() == "loop_nest") {
      loop_nest = true;
      EXPECT_TRUE(o.deterministic());
      EXPECT_FALSE(o.platform_dependent());
      EXPECT_TRUE(o.has_string());
    }
    if (o.name() == "action_mask") {
      mask = true;
      ASSERT_TRUE(o.has_box());
      EXPECT_EQ(o.box().dtype(), proto::BoxSpace::INT64);
      EXPECT_EQ(o.box().shape(0), -1);
      EXPECT_EQ(o.box().range().max(), 1);
    }
    // Every space parses back into the library's Space.
    EXPECT_TRUE(Space::from_proto(o).ok()) << o.name();
  }
  EXPECT_TRUE(runtime && loop_nest && mask);
  ASSERT_GE(s.reward_space_size(), 1);

  r.set_env("nope-v0");
  grpc::Status st = shared().stub->GetSpaces(ctx().get(), r, &s);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_CONTAINS(st.error_message(), "unknown environment 'nope-v0'");
}

TEST(Service, ListDatasetsAndPagedBenchmarks) {
  proto::ListDatasetsResponse d;
  ASSERT_TRUE(shared().stub->ListDatasets(ctx().get(), {}, &d).ok());
  bool ops = false;
  for (const proto::DatasetInfo& i : d.dataset())
    if (i.name() == "benchmark://ops-v0") {
      ops = true;
      EXPECT_GT(i.size(), 10);
    }
  ASSERT_TRUE(ops);

  // Pages of 7 cover the dataset exactly once, in order.
  std::vector<std::string> paged;
  std::string token;
  int pages = 0;
  do {
    proto::ListBenchmarksRequest r;
    r.set_dataset("ops-v0");
    r.set_page_size(7);
    r.set_page_token(token);
    proto::ListBenchmarksResponse p;
    ASSERT_TRUE(shared().stub->ListBenchmarks(ctx().get(), r, &p).ok());
    EXPECT_LE(p.benchmark_size(), 7);
    for (const proto::BenchmarkInfo& b : p.benchmark()) paged.push_back(b.uri());
    token = p.next_page_token();
    ASSERT_LT(++pages, 1000);
  } while (!token.empty());
  proto::ListBenchmarksRequest all;
  all.set_dataset("benchmark://ops-v0");
  all.set_page_size(10000);
  proto::ListBenchmarksResponse p;
  ASSERT_TRUE(shared().stub->ListBenchmarks(ctx().get(), all, &p).ok());
  ASSERT_EQ(int(paged.size()), p.benchmark_size());
  for (size_t i = 0; i < paged.size(); ++i) EXPECT_EQ(paged[i], p.benchmark(int(i)).uri());
  EXPECT_TRUE(p.next_page_token().empty());

  all.set_offset(3);
  all.set_page_size(2);
  ASSERT_TRUE(shared().stub->ListBenchmarks(ctx().get(), all, &p).ok());
  ASSERT_EQ(p.benchmark_size(), 2);
  EXPECT_EQ(p.benchmark(0).uri(), paged[3]);

  // An unbounded generator always has a next page.
  proto::ListBenchmarksRequest gen;
  gen.set_dataset("random-ops-v0");
  gen.set_page_size(3);
  ASSERT_TRUE(shared().stub->ListBenchmarks(ctx().get(), gen, &p).ok());
  EXPECT_EQ(p.benchmark_size(), 3);
  EXPECT_FALSE(p.next_page_token().empty());

  gen.set_page_token("not-a-token");
  grpc::Status st = shared().stub->ListBenchmarks(ctx().get(), gen, &p);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_CONTAINS(st.error_message(), "page_token");
  proto::ListBenchmarksRequest missing;
  missing.set_dataset("nope-v0");
  st = shared().stub->ListBenchmarks(ctx().get(), missing, &p);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_CONTAINS(st.error_message(), "nope-v0");
}

TEST(Service, HealthCheckServes) {
  grpc::internal::RpcMethod method("/grpc.health.v1.Health/Check", grpc::internal::RpcMethod::NORMAL_RPC);
  grpc::Slice empty;
  grpc::ByteBuffer request(&empty, 1), response;
  grpc::Status st = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
      shared().channel.get(), method, ctx().get(), request, &response);
  ASSERT_TRUE(st.ok()) << st.error_message();
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(response.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  EXPECT_EQ(bytes, std::string("\x08\x01", 2));  // status: SERVING
}

// ---- benchmarks -------------------------------------------------------------------------

TEST(Service, AddBenchmarkThenStartOnIt) {
  proto::AddBenchmarkRequest r;
  r.set_name("svc_gemm");
  r.set_program("input A: f32[32, 16]\ninput B: f32[16, 8]\nC[i, j] += A[i, k] * B[k, j]\n");
  proto::AddBenchmarkResponse a;
  grpc::Status st = shared().stub->AddBenchmark(ctx().get(), r, &a);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(a.uri(), "benchmark://user-v0/svc_gemm");
  proto::StartSessionResponse s;
  start(*shared().stub, a.uri(), {"program"}, &s);
  ASSERT_EQ(s.observation_size(), 1);
  EXPECT_CONTAINS(s.observation(0).string_value(), "C[i, j] += A[i, k] * B[k, j]");
}

TEST(Service, MalformedProgramTextIsInvalidArgumentWithItsPosition) {
  proto::AddBenchmarkRequest r;
  r.set_name("broken");
  r.set_program("input A: f32[4, 4]\nC[i, j] += A[i, k] * ;\n");
  proto::AddBenchmarkResponse a;
  grpc::Status st = shared().stub->AddBenchmark(ctx().get(), r, &a);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_CONTAINS(st.error_message(), "benchmark://user-v0/broken:2:");
  r.set_name("bad name!");
  st = shared().stub->AddBenchmark(ctx().get(), r, &a);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // The server is fine.
  proto::GetVersionResponse v;
  EXPECT_TRUE(shared().stub->GetVersion(ctx().get(), {}, &v).ok());
}

// A program at the 4 GiB cap, and six 1 GiB cache stages that take its lowered
// buffers past max_total_bytes.
const char* kAtTheMemoryCap =
    "input A: f32[16384, 16384]\nB[i, j] = A[i, j] * 2.0\nC[i, j] = B[i, j] + 1.0\nD[i, j] = C[i, j] * 3.0\n";
const char* kCacheStagesPastTheCap[] = {"cache_read(A, B, A_r)", "cache_write(B, B_w)",   "cache_read(B, C, B_r)",
                                        "cache_write(C, C_w)",   "cache_read(C, D, C_r)", "cache_write(D, D_w)"};

std::string add_benchmark(const std::string& name, const std::string& program) {
  proto::AddBenchmarkRequest r;
  r.set_name(name);
  r.set_program(program);
  proto::AddBenchmarkResponse a;
  grpc::Status st = shared().stub->AddBenchmark(ctx().get(), r, &a);
  EXPECT_TRUE(st.ok()) << st.error_message();
  return a.uri();
}

// Refused before compiling, as its own class.
TEST(Service, AJobPastTheMemoryCapIsResourceExhausted) {
  const std::string uri = add_benchmark("cache_bomb", kAtTheMemoryCap);
  auto c = ctx(120);
  auto stream = shared().stub->Evaluate(c.get());
  proto::EvaluateResponse hello;
  ASSERT_TRUE(stream->Read(&hello));
  proto::EvaluateRequest request;
  proto::EvaluateJob* job = request.add_job();
  job->set_key("bomb");
  job->set_benchmark(uri);
  std::string actions;
  for (const char* a : kCacheStagesPastTheCap) actions += std::string(a) + "\n";
  job->set_actions(actions);
  job->add_observations("runtime");
  ASSERT_TRUE(stream->Write(request));
  stream->WritesDone();
  proto::EvaluateResponse answer;
  ASSERT_TRUE(stream->Read(&answer));
  ASSERT_EQ(answer.result_size(), 1);
  EXPECT_EQ(answer.result(0).error(), proto::JOB_RESOURCE_EXHAUSTED) << answer.result(0).error_message();
  EXPECT_CONTAINS(answer.result(0).error_message(), "max_total_bytes");
  while (stream->Read(&answer)) {
  }
  EXPECT_TRUE(stream->Finish().ok());
}

// A step whose measurement passes the cap fails with the gRPC code RESOURCE_EXHAUSTED.
TEST(Service, AStepPastTheMemoryCapIsResourceExhausted) {
  const std::string uri = add_benchmark("cache_bomb_step", kAtTheMemoryCap);
  const std::string session = start(*shared().stub, uri);
  std::vector<proto::Event> actions;
  for (const char* a : kCacheStagesPastTheCap) actions.push_back(text(a));
  proto::StepResponse response;
  grpc::Status st = step(*shared().stub, session, actions, {"runtime"}, {}, &response);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  EXPECT_CONTAINS(st.error_message(), "max_total_bytes");
}

// ---- sessions ----------------------------------------------------------------------------

TEST(Service, StartStepForkStateEnd) {
  TensorGym::Stub& stub = *shared().stub;
  proto::StartSessionResponse s;
  const std::string id = start(stub, "benchmark://ops-v0/gmm-4", {"schedule", "loop_nest"}, &s);  // has an expert schedule
  ASSERT_EQ(s.observation_size(), 2);
  EXPECT_EQ(s.observation(0).string_value(), "");

  // Several actions (text and index), several observations, several rewards.
  proto::StepResponse r;
  grpc::Status st = step(stub, id, {text("split(C.i, 32, io, ii)"), text("parallel(C.io)")},
                         {"schedule", "loop_nest", "action_mask"}, {"est_cycles", "est_cycles_norm_expert"}, &r);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(r.observation_size(), 3);
  EXPECT_EQ(r.observation(0).string_value(), "split(C.i, 32, io, ii)\nparallel(C.io)\n");
  EXPECT_CONTAINS(r.observation(1).string_value(), "parallel for C.io in 0..32");
  EXPECT_TRUE(r.observation(2).has_int64_tensor());
  ASSERT_EQ(r.reward_size(), 2);
  EXPECT_FALSE(r.action_had_no_effect());
  EXPECT_EQ(r.step_count(), 1u);

  // An index action: the first action the mask allows.
  int64_t allowed = -1;
  for (int i = 0; i < r.observation(2).int64_tensor().value_size() && allowed < 0; ++i)
    if (r.observation(2).int64_tensor().value(i) == 1) allowed = i;
  ASSERT_GE(allowed, 0);
  ASSERT_TRUE(step(stub, id, {index(allowed)}, {}, {}, &r, true).ok());

  proto::ForkSessionRequest f;
  f.set_session_id(id);
  proto::ForkSessionResponse fr;
  ASSERT_TRUE(stub.ForkSession(ctx().get(), f, &fr).ok());
  ASSERT_NE(fr.session_id(), id);
  ASSERT_TRUE(step(stub, fr.session_id(), {text("split(C.k, 4, ko, ki)")}, {}, {}, &r, true).ok());
  ASSERT_EQ(r.status().code(), 0) << r.status().message();

  uint64_t count = 0, fork_count = 0;
  proto::EpisodeState a = get_state(stub, id, &count);
  proto::EpisodeState b = get_state(stub, fr.session_id(), &fork_count);
  EXPECT_EQ(a.env(), "schedule-v0");
  EXPECT_EQ(a.benchmark(), "benchmark://ops-v0/gmm-4");
  EXPECT_EQ(b.actions_size(), a.actions_size() + 1);  // the fork is independent
  EXPECT_EQ(b.actions(b.actions_size() - 1), "split(C.k, 4, ko, ki)");
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(fork_count, 3u);
  EXPECT_EQ(a.reward_space(), "est_cycles_norm_expert");
  EXPECT_EQ(a.deterministic_rewards().size(), 2u);

  proto::EndSessionRequest e;
  e.set_session_id(fr.session_id());
  proto::EndSessionResponse er;
  ASSERT_TRUE(stub.EndSession(ctx().get(), e, &er).ok());
  grpc::Status gone = stub.EndSession(ctx().get(), e, &er);
  EXPECT_EQ(gone.error_code(), grpc::StatusCode::NOT_FOUND);
  proto::SessionNotFound detail;
  EXPECT_TRUE(rpc::unpack_detail(gone, &detail));
  EXPECT_EQ(detail.session_id(), fr.session_id());
}

// This process's threads whose CPU affinity is not the process's own (a thread pinned
// to some of its CPUs); threads that end while they are read are skipped.
int threads_with_another_affinity() {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0) return -1;
  int others = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    cpu_set_t theirs;
    CPU_ZERO(&theirs);
    if (sched_getaffinity(pid_t(std::stol(task.path().filename().string())), sizeof theirs, &theirs) != 0) continue;
    others += !CPU_EQUAL(&theirs, &mine);
  }
  return others;
}

// The service places no thread: gRPC's threads, the call executor's and the runner's
// stay where the kernel puts them, within the process's affinity.
TEST(Service, ServesWithoutPinningAnyThread) {
  TestServer server(test_options());
  ASSERT_TRUE(server.stub);
  // gRPC's threads take calls in turn: a few calls reach each of them.
  for (int i = 0; i < 8; ++i) {
    proto::GetVersionResponse v;
    ASSERT_TRUE(server.stub->GetVersion(ctx().get(), {}, &v).ok());
  }
  const std::string id = start(*server.stub);
  proto::StepResponse r;
  ASSERT_TRUE(step(*server.stub, id, {text("split(C.i, 32, io, ii)")}, {"loop_nest"}, {}, &r).ok());
  ASSERT_TRUE(step(*server.stub, id, {text("split(C.k, 4, ko, ki)")}, {"est_cycles_host"}, {}, &r).ok());
  EXPECT_EQ(threads_with_another_affinity(), 0);
}

TEST(Service, InvalidActionIdsGiveTheirCodeAndLeaveTheSession) {
  TensorGym::Stub& stub = *shared().stub;
  const std::string id = start(stub);
  proto::StepResponse r;
  ASSERT_TRUE(step(stub, id, {text("split(C.i, 32, io, ii)")}, {}, {}, &r).ok());
  // The conventional form: the step's error is the call's status.
  grpc::Status st = step(stub, id, {index(1 << 30)}, {"schedule"}, {}, &r);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_CONTAINS(st.error_message(), "out of range");
  st = step(stub, id, {text("split(C.nope, 2, a, b)")}, {}, {}, &r);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_CONTAINS(st.error_message(), "no loop 'nope'");
  st = step(stub, id, {text("this is not a primitive")}, {}, {}, &r);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // With error_in_response, the observations come along with the error.
  r.Clear();
  st = step(stub, id, {index(-1)}, {"schedule"}, {"est_cycles"}, &r, true);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(r.status().code(), int(grpc::StatusCode::INVALID_ARGUMENT));
  ASSERT_EQ(r.observation_size(), 1);
  EXPECT_EQ(r.observation(0).string_value(), "split(C.i, 32, io, ii)\n");
  // An action that is neither an index nor a text.
  proto::Event wrong;
  wrong.set_double_value(1.5);
  st = step(stub, id, {wrong}, {}, {}, &r);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_CONTAINS(st.error_message(), "neither an index");
  // The state is unchanged by every failure.
  proto::EpisodeState s = get_state(stub, id);
  ASSERT_EQ(s.actions_size(), 1);
  EXPECT_EQ(s.actions(0), "split(C.i, 32, io, ii)");
}

TEST(Service, BadStartsSayWhatWasWrong) {
  TensorGym::Stub& stub = *shared().stub;
  proto::StartSessionRequest r;
  r.set_env("schedule-v0");
  r.set_benchmark("benchmark://ops-v0/gmm-99");
  proto::StartSessionResponse s;
  grpc::Status st = stub.StartSession(ctx().get(), r, &s);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_CONTAINS(st.error_message(), "gmm-99");
  r.set_benchmark("benchmark://nope-v0/x");
  EXPECT_EQ(stub.StartSession(ctx().get(), r, &s).error_code(), grpc::StatusCode::NOT_FOUND);
  r.set_benchmark("::::");
  EXPECT_EQ(stub.StartSession(ctx().get(), r, &s).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  r.set_benchmark(kGemm);
  r.set_action_space("joystick");
  st = stub.StartSession(ctx().get(), r, &s);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_CONTAINS(st.error_message(), "joystick");
  r.set_action_space("");
  r.add_observation_space("colour");
  EXPECT_EQ(stub.StartSession(ctx().get(), r, &s).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  r.clear_observation_space();
  r.add_reward_space("happiness");
  st = stub.StartSession(ctx().get(), r, &s);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_CONTAINS(st.error_message(), "happiness");
  r.clear_reward_space();
  (*r.mutable_parameter())["runner.bogus"] = "1";
  EXPECT_EQ(stub.StartSession(ctx().get(), r, &s).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  r.clear_parameter();
  r.set_env("nope-v0");
  EXPECT_EQ(stub.StartSession(ctx().get(), r, &s).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST(Service, UnknownSessionsAreNotFoundEverywhere) {
  TensorGym::Stub& stub = *shared().stub;
  const std::string ghost = "0123456789abcdef0123456789abcdef";
  proto::StepResponse r;
  grpc::Status st = step(stub, ghost, {}, {}, {}, &r);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_CONTAINS(st.error_message(), "unknown session " + ghost);
  proto::ForkSessionRequest f;
  f.set_session_id(ghost);
  proto::ForkSessionResponse fr;
  EXPECT_EQ(stub.ForkSession(ctx().get(), f, &fr).error_code(), grpc::StatusCode::NOT_FOUND);
  proto::GetStateRequest g;
  g.set_session_id(ghost);
  proto::GetStateResponse gr;
  EXPECT_EQ(stub.GetState(ctx().get(), g, &gr).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(set_parameter(stub, ghost, "runner.repeat", "2").error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST(Service, SessionParameters) {
  TensorGym::Stub& stub = *shared().stub;
  const std::string id = start(stub);
  EXPECT_TRUE(set_parameter(stub, id, "runner.repeat", "3").ok());
  grpc::Status st = set_parameter(stub, id, "runner.bogus", "3");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_CONTAINS(st.error_message(), "runner.bogus");
  EXPECT_EQ(set_parameter(stub, id, "runner.repeat", "many").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(Service, ValidateReplaysAndChecks) {
  TensorGym::Stub& stub = *shared().stub;
  const std::string id = start(stub);
  proto::StepResponse r;
  ASSERT_TRUE(step(stub, id, {text("split(C.j, 16, jo, ji)"), text("vectorize(C.ji)")}, {}, {"est_cycles"}, &r).ok());
  proto::ValidateRequest v;
  *v.mutable_state() = get_state(stub, id);
  proto::ValidateResponse out;
  grpc::Status st = stub.Validate(ctx(120).get(), v, &out);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_TRUE(out.ok()) << out.error();
  EXPECT_EQ(out.replayed_reward().at("est_cycles"), v.state().deterministic_rewards().at("est_cycles"));

  (*v.mutable_state()->mutable_deterministic_rewards())["est_cycles"] += 1;
  ASSERT_TRUE(stub.Validate(ctx(120).get(), v, &out).ok());
  EXPECT_FALSE(out.ok());
  EXPECT_CONTAINS(out.error(), "deterministic reward est_cycles");

  v.mutable_state()->add_actions("split(C.zz, 2, a, b)");
  ASSERT_TRUE(stub.Validate(ctx(120).get(), v, &out).ok());
  EXPECT_FALSE(out.ok());
  EXPECT_CONTAINS(out.error(), "action 3");

  v.mutable_state()->clear_env();
  EXPECT_EQ(stub.Validate(ctx().get(), v, &out).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(Service, SessionStreamAnswersEveryStepInOrder) {
  TensorGym::Stub& stub = *shared().stub;
  const std::string id = start(stub);
  auto c = ctx();
  auto stream = stub.Session(c.get());
  const std::vector<std::string> actions = {"split(C.i, 32, io, ii)", "split(C.nope, 2, a, b)", "parallel(C.io)"};
  for (size_t i = 0; i < actions.size(); ++i) {
    proto::StepRequest r;
    r.set_session_id(id);
    *r.add_action() = text(actions[i]);
    r.add_observation_space("schedule");
    ASSERT_TRUE(stream->Write(r));
    proto::StepResponse out;
    ASSERT_TRUE(stream->Read(&out));
    if (i == 1) {
      EXPECT_EQ(out.status().code(), int(grpc::StatusCode::NOT_FOUND));  // the error, and the stream goes on
    } else {
      EXPECT_EQ(out.status().code(), 0) << out.status().message();
    }
    EXPECT_EQ(out.step_count(), i + 1);
  }
  proto::StepRequest ghost;
  ghost.set_session_id("4242");
  ASSERT_TRUE(stream->Write(ghost));
  proto::StepResponse out;
  ASSERT_TRUE(stream->Read(&out));
  EXPECT_EQ(out.status().code(), int(grpc::StatusCode::NOT_FOUND));
  EXPECT_EQ(out.status().details_size(), 1);
  ASSERT_TRUE(stream->WritesDone());
  EXPECT_TRUE(stream->Finish().ok());
  proto::EpisodeState s = get_state(stub, id);
  ASSERT_EQ(s.actions_size(), 2);
  EXPECT_EQ(s.actions(1), "parallel(C.io)");
}

// ---- caps --------------------------------------------------------------------------------

TEST(Service, CapsGiveResourceExhaustedOrInvalidArgument) {
  service::ServerOptions o = test_options();
  o.max_sessions = 2;
  o.max_message_bytes = 64 << 10;
  o.max_program_bytes = 1000;
  o.max_actions_per_step = 4;
  TestServer t(o);
  ASSERT_TRUE(t.stub);
  const std::string a = start(*t.stub);
  start(*t.stub);
  proto::StartSessionRequest r;
  r.set_env("schedule-v0");
  r.set_benchmark(kGemm);
  proto::StartSessionResponse s;
  grpc::Status st = t.stub->StartSession(ctx().get(), r, &s);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_CONTAINS(st.error_message(), "--max-sessions");
  proto::ForkSessionRequest f;
  f.set_session_id(a);
  proto::ForkSessionResponse fr;
  EXPECT_EQ(t.stub->ForkSession(ctx().get(), f, &fr).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);

  // A request past the message cap.
  proto::AddBenchmarkRequest big;
  big.set_name("big");
  big.set_program(std::string(100 << 10, ' '));
  proto::AddBenchmarkResponse ar;
  st = t.stub->AddBenchmark(ctx().get(), big, &ar);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  // A program past the program cap.
  big.set_program(std::string(2000, ' '));
  st = t.stub->AddBenchmark(ctx().get(), big, &ar);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_CONTAINS(st.error_message(), "--max-program-bytes");
  // Too many actions in one step.
  proto::StepResponse sr;
  st = step(*t.stub, a, std::vector<proto::Event>(5, text("parallel(C.i)")), {}, {}, &sr);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_CONTAINS(st.error_message(), "the cap is 4");
  // The server is alive and the session usable.
  EXPECT_TRUE(step(*t.stub, a, {text("parallel(C.i)")}, {}, {}, &sr).ok());
  proto::EndSessionRequest e;
  e.set_session_id(a);
  proto::EndSessionResponse er;
  ASSERT_TRUE(t.stub->EndSession(ctx().get(), e, &er).ok());
  EXPECT_EQ(er.remaining_sessions(), 1);
  EXPECT_TRUE(t.stub->StartSession(ctx().get(), r, &s).ok());
}

TEST(Service, IdleSessionsAreReaped) {
  service::ServerOptions o = test_options();
  // The idle timeout is ten times the busy session's pause, so that a loaded machine
  // that stalls a step does not make the busy session look idle.
  o.idle_timeout_s = 1.0;
  TestServer t(o);
  ASSERT_TRUE(t.stub);
  const std::string id = start(*t.stub);
  const std::string busy = start(*t.stub);
  proto::StepResponse r;
  for (int i = 0; i < 20; ++i) {  // one session keeps working, the other idles
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_TRUE(step(*t.stub, busy, {}, {}, {}, &r).ok());
  }
  EXPECT_EQ(step(*t.stub, id, {}, {}, {}, &r).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(t.server->service().sessions().size(), 1u);
}

// ---- auth --------------------------------------------------------------------------------

TEST(Service, BearerTokenIsCheckedOnEveryCall) {
  service::ServerOptions o = test_options();
  o.auth_token = "s3cret-token-012345678";
  TestServer t(o);
  ASSERT_TRUE(t.stub);
  proto::GetVersionResponse v;
  grpc::Status st = t.stub->GetVersion(ctx().get(), {}, &v);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_CONTAINS(st.error_message(), "bearer token");
  auto wrong = ctx();
  wrong->AddMetadata("authorization", "Bearer s3cret-token-01234567x");
  EXPECT_EQ(t.stub->GetVersion(wrong.get(), {}, &v).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  proto::StartSessionRequest r;
  r.set_env("schedule-v0");
  r.set_benchmark(kGemm);
  proto::StartSessionResponse s;
  EXPECT_EQ(t.stub->StartSession(ctx().get(), r, &s).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  auto c = ctx();
  auto stream = t.stub->Session(c.get());
  proto::StepResponse out;
  EXPECT_FALSE(stream->Read(&out));
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  auto right = ctx();
  right->AddMetadata("authorization", "Bearer s3cret-token-012345678");
  EXPECT_TRUE(t.stub->GetVersion(right.get(), {}, &v).ok());
  auto right2 = ctx();
  right2->AddMetadata("authorization", "Bearer s3cret-token-012345678");
  EXPECT_TRUE(t.stub->StartSession(right2.get(), r, &s).ok());
}

TEST(Service, OnlyLoopbackWithoutTlsOrToken) {
  EXPECT_TRUE(service::is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(service::is_loopback_host("127.3.2.1"));
  EXPECT_TRUE(service::is_loopback_host("::1"));
  EXPECT_TRUE(service::is_loopback_host("[::1]"));
  EXPECT_TRUE(service::is_loopback_host("localhost"));
  EXPECT_FALSE(service::is_loopback_host("0.0.0.0"));
  EXPECT_FALSE(service::is_loopback_host("::"));
  EXPECT_FALSE(service::is_loopback_host("10.1.2.3"));
  service::ServerOptions o = test_options();
  o.host = "0.0.0.0";
  Status st = service::check_bind_policy(o);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_CONTAINS(st.message(), "--auth-token-file");
  // Start refuses before binding anything.
  Expected<std::unique_ptr<service::Server>> s = service::Server::start(o);
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  o.auth_token_file = "/some/file";
  EXPECT_TRUE(service::check_bind_policy(o).ok());
  o.auth_token_file.clear();
  o.tls_cert_file = "cert.pem";
  EXPECT_EQ(service::check_bind_policy(o).code(), StatusCode::kInvalidArgument);  // no key
  o.tls_key_file = "key.pem";
  EXPECT_TRUE(service::check_bind_policy(o).ok());
}

// ---- errors quote what the caller sent, bounded ------------------------------------------

// An action of 6 KB, and ones of 8 MB, come back as their real error with a message of
// bounded size: quoted whole, a 6 KB action overflowed the client's metadata limit and
// the caller got RESOURCE_EXHAUSTED instead. (Not timed: an echo of megabytes that
// made the answer slow would also make the message long.)
TEST(Service, ALongActionGivesItsErrorInABoundedMessage) {
  TensorGym::Stub& stub = *shared().stub;
  const std::string id = start(stub);
  for (size_t bytes : {size_t(6) << 10, size_t(8) << 20}) {
    std::string primitives;  // one primitive after another: one action is one primitive
    while (primitives.size() < bytes) primitives += "split(C.i, 4, io, ii); ";
    const std::vector<std::string> actions = {
        std::string(bytes, 'y'),                               // a name that never ends
        "split(C.i, 4, " + std::string(bytes, 'x') + ", ii)",  // an argument too long for a name
        primitives,
    };
    for (const std::string& action : actions) {
      proto::StepResponse r;
      grpc::Status st = step(stub, id, {text(action)}, {}, {}, &r);
      EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message().substr(0, 400);
      EXPECT_LT(st.error_message().size(), 800u) << st.error_message().substr(0, 400);
      EXPECT_CONTAINS(st.error_message(), " bytes)");
      // In the response too, when asked for there.
      grpc::Status in_response = step(stub, id, {text(action)}, {}, {}, &r, /*error_in_response=*/true);
      ASSERT_TRUE(in_response.ok()) << in_response.error_message().substr(0, 400);
      EXPECT_EQ(r.status().code(), int(StatusCode::kInvalidArgument));
      EXPECT_LT(r.status().message().size(), 800u);
    }
  }
  // The session is unchanged.
  EXPECT_EQ(get_state(stub, id).actions_size(), 0);
}

// Whatever an error says, its message crosses the wire cut to a size every client
// accepts, with its code and a note of the whole length.
TEST(Service, StatusMessagesAreCutForTheWire) {
  const std::string long_message(100000, 'm');
  grpc::Status st = rpc::to_grpc(Status(StatusCode::kInvalidArgument, long_message));
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_LE(st.error_message().size(), rpc::kMaxStatusMessageBytes + 64);
  EXPECT_EQ(st.error_message().rfind(std::string(rpc::kMaxStatusMessageBytes, 'm'), 0), 0u);
  EXPECT_CONTAINS(st.error_message(), "... (message cut; it was 100000 bytes)");
  EXPECT_EQ(rpc::from_grpc(st).code(), StatusCode::kInvalidArgument);
  const std::string fits(rpc::kMaxStatusMessageBytes, 'f');
  EXPECT_EQ(rpc::to_grpc(Status(StatusCode::kNotFound, fits)).error_message(), fits);
  proto::RpcStatus in_response;
  service::status_to_proto(Status(StatusCode::kInvalidArgument, long_message), &in_response);
  EXPECT_EQ(in_response.message(), st.error_message());
}

// Names a caller sends are quoted bounded too: an environment, an observation, a page token.
TEST(Service, LongNamesAreQuotedBounded) {
  const std::string name(64 << 10, 'n');
  proto::GetSpacesRequest r;
  r.set_env(name);
  proto::GetSpacesResponse s;
  grpc::Status st = shared().stub->GetSpaces(ctx().get(), r, &s);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_LT(st.error_message().size(), 800u);
  EXPECT_CONTAINS(st.error_message(), "(65536 bytes)");
  const std::string id = start(*shared().stub);
  proto::StepResponse response;
  st = step(*shared().stub, id, {}, {name}, {}, &response);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_LT(st.error_message().size(), 800u);
  EXPECT_CONTAINS(st.error_message(), "(65536 bytes)");
}

// ---- deadlines ---------------------------------------------------------------------------

TEST(Service, DeadlineCancelsASlowMeasurementAndTheSessionGoesOn) {
  TensorGym::Stub& stub = *shared().stub;
  const std::string id = start(stub);
  proto::StepResponse r;
  ASSERT_TRUE(step(stub, id, {text("split(C.j, 16, jo, ji)")}, {}, {}, &r).ok());
  // One timed repeat lasts at least a minute: far past the deadline.
  ASSERT_TRUE(set_parameter(stub, id, "runner.min_repeat_ms", "60000").ok());
  const auto t0 = std::chrono::steady_clock::now();
  grpc::Status st = step(stub, id, {text("vectorize(C.ji)")}, {"runtime"}, {}, &r, false, 1.5);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_LT(elapsed, 10.0);
  // The session works, unchanged by the cancelled step.
  ASSERT_TRUE(step(stub, id, {}, {"schedule"}, {}, &r).ok());
  EXPECT_EQ(r.observation(0).string_value(), "split(C.j, 16, jo, ji)\n");
  uint64_t count = 0;
  get_state(stub, id, &count);
  EXPECT_EQ(count, 2u);  // the cancelled step was not applied
  // And the measurement workers are usable: a fast measurement now succeeds.
  ASSERT_TRUE(set_parameter(stub, id, "runner.min_repeat_ms", "1").ok());
  ASSERT_TRUE(set_parameter(stub, id, "runner.repeat", "1").ok());
  st = step(stub, id, {text("vectorize(C.ji)")}, {"runtime", "correct"}, {}, &r, false, 120);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_GT(r.observation(0).double_value(), 0.0);
  EXPECT_TRUE(r.observation(1).boolean_value());
  // The runner cancelled the job in its worker.
  EXPECT_GE(shared().server->context()->runner().stats().workers_lost, 1);
}

// --exclusive-measure: on by default (timed runs take turns across the workers); off,
// the runner lets them overlap, and measurements still work.
TEST(Service, ExclusiveMeasureSetsTheRunner) {
  EXPECT_TRUE(shared().server->context()->runner().options().serialize_runs);
  service::ServerOptions o = test_options();
  o.workers = 2;
  o.exclusive_measure = false;
  TestServer parallel(o);
  ASSERT_TRUE(parallel.server);
  EXPECT_FALSE(parallel.server->context()->runner().options().serialize_runs);
  EXPECT_EQ(parallel.server->context()->runner().options().num_workers, 2);
  TensorGym::Stub& stub = *parallel.stub;
  const std::string id = start(stub);
  ASSERT_TRUE(set_parameter(stub, id, "runner.repeat", "1").ok());
  proto::StepResponse r;
  grpc::Status st = step(stub, id, {text("split(C.j, 16, jo, ji)")}, {"runtime", "correct"}, {}, &r, false, 120);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_GT(r.observation(0).double_value(), 0.0);
  EXPECT_TRUE(r.observation(1).boolean_value());
}

// ---- load --------------------------------------------------------------------------------

// 64 sessions from 8 threads, 200 steps each, as an agent plays: each step observes
// the action mask, and the next action is (seeded) mostly one the mask allows, else
// any index (those mostly fail, which must leave the state alone). Every session's
// final state equals the in-process environment's after the same steps.
TEST(Service, SixtyFourSessionsFromEightThreads) {
  constexpr int kThreads = 8, kSessionsPerThread = 8, kSteps = 200;
  TensorGym::Stub& stub = *shared().stub;
  proto::GetSpacesRequest sr;
  sr.set_env("schedule-v0");
  proto::GetSpacesResponse spaces;
  ASSERT_TRUE(stub.GetSpaces(ctx().get(), sr, &spaces).ok());
  const int64_t n = spaces.action_space(0).discrete().n();
  const std::vector<std::string> benchmarks = {"benchmark://ops-v0/gmm-1", "benchmark://ops-v0/gmm-2",
                                               "benchmark://ops-v0/c1d-1", "benchmark://ops-v0/gmm-3"};
  struct Run {
    std::string id;
    std::string benchmark;
    std::vector<int64_t> actions;
  };
  std::vector<Run> runs(kThreads * kSessionsPerThread);
  std::atomic<int> failures{0};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(1234 + t);
      for (int k = 0; k < kSessionsPerThread; ++k) {
        Run& run = runs[size_t(t * kSessionsPerThread + k)];
        run.benchmark = benchmarks[size_t(k) % benchmarks.size()];
        run.id = start(stub, run.benchmark);
      }
      std::vector<std::vector<int64_t>> allowed(kSessionsPerThread);
      for (int s = 0; s < kSteps; ++s) {
        for (int k = 0; k < kSessionsPerThread; ++k) {
          Run& run = runs[size_t(t * kSessionsPerThread + k)];
          std::vector<int64_t>& mask = allowed[size_t(k)];
          const int64_t a = !mask.empty() && rng() % 4 != 0 ? mask[rng() % mask.size()] : int64_t(rng() % uint64_t(n));
          run.actions.push_back(a);
          proto::StepResponse r;
          grpc::Status st = step(stub, run.id, {index(a)}, {"action_mask"}, {}, &r, true);
          if (!st.ok() || r.observation_size() != 1) {
            ++failures;
            continue;
          }
          mask.clear();
          const proto::Int64Tensor& m = r.observation(0).int64_tensor();
          for (int i = 0; i < m.value_size(); ++i)
            if (m.value(i)) mask.push_back(i);
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(failures.load(), 0);
  RecordProperty("elapsed_s", std::to_string(elapsed));  // reported: speed is the benchmarks' business
  // The reference: the same steps in-process.
  auto context = std::make_shared<EnvContext>();
  size_t applied = 0;
  for (const Run& run : runs) {
    uint64_t count = 0;
    proto::EpisodeState remote = get_state(stub, run.id, &count);
    EXPECT_EQ(count, uint64_t(kSteps));
    Expected<std::unique_ptr<Env>> env = make_env("schedule-v0", context);
    ASSERT_TRUE(env.ok());
    ASSERT_TRUE((*env)->reset(run.benchmark, {}, {}).ok());
    for (int64_t a : run.actions) (void)(*env)->step({Event(a)}, {}, {});
    EpisodeState local = (*env)->state();
    ASSERT_EQ(remote.actions_size(), int(local.actions.size())) << run.benchmark;
    applied += local.actions.size();
    for (size_t i = 0; i < local.actions.size(); ++i) EXPECT_EQ(remote.actions(int(i)), local.actions[i]);
    proto::EndSessionRequest e;
    e.set_session_id(run.id);
    proto::EndSessionResponse er;
    EXPECT_TRUE(stub.EndSession(ctx().get(), e, &er).ok());
  }
  // Many of the actions apply (the states are far from the benchmarks' starts).
  EXPECT_GT(applied, runs.size() * 20);
  std::printf("%zu of %d actions applied\n", applied, kThreads * kSessionsPerThread * kSteps);
}

// ---- shutdown ----------------------------------------------------------------------------

TEST(Service, ShutdownLetsCallsInFlightFinish) {
  TestServer t;
  ASSERT_TRUE(t.stub);
  const std::string id = start(*t.stub);
  std::atomic<bool> ok{false};
  std::thread caller([&] {
    proto::StepResponse r;
    ok = step(*t.stub, id, {text("split(C.j, 16, jo, ji)")}, {"runtime"}, {}, &r, false, 60).ok();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  t.server->shutdown(std::chrono::seconds(60));
  caller.join();
  EXPECT_TRUE(ok.load());
  proto::GetVersionResponse v;
  EXPECT_EQ(t.stub->GetVersion(ctx(2).get(), {}, &v).error_code(), grpc::StatusCode::UNAVAILABLE);
}

service::ServerOptions long_grace_options() {
  service::ServerOptions o = test_options();
  o.shutdown_grace_s = 30;
  return o;
}

// A server with a 30 s shutdown grace, a session on it, and a Session stream that has
// sent the session one step. `stream` is null when the server did not start.
struct StreamWithStep {
  TestServer t{long_grace_options()};
  std::unique_ptr<grpc::ClientContext> context = ctx(60);
  std::unique_ptr<grpc::ClientReaderWriter<proto::StepRequest, proto::StepResponse>> stream;

  StreamWithStep(const std::string& action, const std::string& observation) {
    if (!t.stub) return;
    proto::StepRequest request;
    request.set_session_id(start(*t.stub));
    *request.add_action() = text(action);
    request.add_observation_space(observation);
    stream = t.stub->Session(context.get());
    EXPECT_TRUE(stream->Write(request));
  }
};

// Shuts t's server down with a 30 s grace: an idle `stream` must end at once
// (UNAVAILABLE), so the server stops well before the grace runs out.
template <class Answer, class Stream>
void expect_shutdown_ends_at_once(TestServer& t, Stream& stream) {
  const auto begin = std::chrono::steady_clock::now();
  t.server->shutdown(std::chrono::seconds(30));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  EXPECT_LT(took, 10.0);
  Answer more;
  EXPECT_FALSE(stream.Read(&more));
  EXPECT_EQ(stream.Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
}

// An Evaluate stream with nothing left to answer ends when shutdown begins, instead of
// holding the server until its grace runs out.
TEST(Service, ShutdownEndsAnIdleEvaluateStreamAtOnce) {
  TestServer t(long_grace_options());
  ASSERT_TRUE(t.stub);
  auto c = ctx(60);
  std::unique_ptr<grpc::ClientReaderWriter<proto::EvaluateRequest, proto::EvaluateResponse>> stream =
      t.stub->Evaluate(c.get());
  proto::EvaluateResponse hello;
  ASSERT_TRUE(stream->Read(&hello));  // the server's capacity, before any result
  EXPECT_GE(hello.concurrency(), 1);
  proto::EvaluateRequest request;
  proto::EvaluateJob* job = request.add_job();
  job->set_key("one");
  job->set_benchmark(kGemm);
  job->set_actions("split(C.i, 8, io, ii)");
  job->add_observations("est_cycles");
  ASSERT_TRUE(stream->Write(request));
  proto::EvaluateResponse answer;
  ASSERT_TRUE(stream->Read(&answer));
  ASSERT_EQ(answer.result_size(), 1);
  EXPECT_EQ(answer.result(0).error(), proto::JOB_OK) << answer.result(0).error_message();
  // The stream is open and idle: nothing queued, nothing running.
  expect_shutdown_ends_at_once<proto::EvaluateResponse>(t, *stream);
}

// Likewise a Session stream waiting for its next step: the client learns at once
// (UNAVAILABLE) and can go elsewhere, and the server does not wait out its grace.
TEST(Service, ShutdownEndsAnIdleSessionStreamAtOnce) {
  StreamWithStep s("split(C.i, 8, io, ii)", "loop_nest");
  ASSERT_TRUE(s.stream);
  proto::StepResponse answer;
  ASSERT_TRUE(s.stream->Read(&answer));
  EXPECT_EQ(answer.status().code(), 0) << answer.status().message();
  EXPECT_EQ(answer.observation_size(), 1);
  expect_shutdown_ends_at_once<proto::StepResponse>(s.t, *s.stream);
}

// A Session stream busy with a step (one that measures) when shutdown begins answers
// it, then ends.
TEST(Service, ShutdownLetsASessionStreamAnswerItsStep) {
  StreamWithStep s("split(C.j, 16, jo, ji)", "runtime");
  ASSERT_TRUE(s.stream);
  std::thread stopper([&] {
    // Shutdown begins once the step is in flight (queued or measuring), however slowly
    // the server picks it up (sanitizers, a loaded machine): bounded at 60 s.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (s.t.server->service().executor().in_flight() == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    s.t.server->shutdown(std::chrono::seconds(30));
  });
  proto::StepResponse answer;
  const bool answered = s.stream->Read(&answer);
  stopper.join();
  ASSERT_TRUE(answered);
  EXPECT_EQ(answer.status().code(), 0) << answer.status().message();
  ASSERT_EQ(answer.observation_size(), 1);
  EXPECT_GT(answer.observation(0).double_value(), 0);
  EXPECT_FALSE(s.stream->Read(&answer));
  EXPECT_EQ(s.stream->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
}

}  // namespace
}  // namespace tensorgym
