// The defects a probe of the served system found, each reproduced as it was found,
// against a real server on loopback: reading the server's files through file://
// URIs, using another client's session, filling benchmark://user-v0 from batch
// jobs, short tokens and token files others can read, a token sent without TLS.
// docs/security.md states the threat model these hold up.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "datasets/inline_programs.h"
#include "datasets/registry.h"
#include "datasets/user_dataset.h"
#include "envs/env_context.h"
#include "proto/tensorgym.grpc.pb.h"
#include "service/auth.h"
#include "service/evaluate.h"
#include "service/server.h"
#include "service/session_table.h"
#include "support/credential_files.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

using proto::TensorGym;

const std::string kBinary = std::string(TENSORGYM_BINARY_DIR) + "/bin/tensorgym";
const std::string kGemm = "benchmark://ops-v0/gmm-1";
const std::string kProgram = "input A: f32[8, 8]\nB[i, j] = A[i, j] + 1.0\n";
const std::string kAliceToken = "alice-token-0123456789abcdef";
const std::string kBobToken = "bob-token-0123456789abcdef";

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

std::string temp_dir() {
  static std::string dir = [] {
    std::string d = std::string(::testing::TempDir()) + "/security_test_" + std::to_string(::getpid());
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

void write_file(const std::string& path, const std::string& text, mode_t mode = 0600) {
  std::ofstream(path) << text;
  ASSERT_EQ(::chmod(path.c_str(), mode), 0) << path;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

service::ServerOptions options() {
  service::ServerOptions o;
  o.host = "127.0.0.1";
  o.worker_binary = kBinary;
  o.threads = 1;
  o.log_level = service::LogLevel::kError;
  o.shutdown_grace_s = 1;
  return o;
}

// Alice and Bob, each with a token of their own.
std::string two_clients_token_file() {
  const std::string path = temp_dir() + "/tokens";
  write_file(path, "# one client a line\nalice " + kAliceToken + "\nbob " + kBobToken + "\n");
  return path;
}

struct TestServer {
  std::unique_ptr<service::Server> server;
  std::unique_ptr<TensorGym::Stub> stub;
  explicit TestServer(const service::ServerOptions& o) {
    Expected<std::unique_ptr<service::Server>> s = service::Server::start(o);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    if (!s.ok()) return;
    server = std::move(*s);
    stub = TensorGym::NewStub(grpc::CreateChannel(server->address(), grpc::InsecureChannelCredentials()));
  }
};

std::unique_ptr<grpc::ClientContext> ctx(const std::string& token = "") {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  if (!token.empty()) c->AddMetadata("authorization", "Bearer " + token);
  return c;
}

grpc::Status start(TensorGym::Stub& stub, const std::string& benchmark, std::string* id = nullptr,
                   const std::string& token = "", const std::string& env = "schedule-v0") {
  proto::StartSessionRequest r;
  r.set_env(env);
  r.set_benchmark(benchmark);
  proto::StartSessionResponse s;
  grpc::Status st = stub.StartSession(ctx(token).get(), r, &s);
  if (id) *id = s.session_id();
  return st;
}

grpc::Status step(TensorGym::Stub& stub, const std::string& id, const std::string& token = "") {
  proto::StepRequest r;
  r.set_session_id(id);
  r.add_observation_space("loop_nest");
  proto::StepResponse out;
  return stub.Step(ctx(token).get(), r, &out);
}

bool is_hex_handle(const std::string& id) {
  if (id.size() != 32) return false;
  for (char c : id)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// ---- 1. file:// reads ---------------------------------------------------------------------

// The probe: StartSession with file:///etc/machine-id returned the file's content in the
// parse error; /proc/self/maps gave the server's code addresses; /etc/shadow was opened;
// error codes said which files exist.
TEST(Security, ServedFileUrisAreOffByDefaultAndSayNothingOfTheFiles) {
  TestServer t(options());
  ASSERT_TRUE(t.stub);
  const std::string secret = read_file("/etc/machine-id");
  std::set<std::string> messages;
  for (const std::string& path : std::vector<std::string>{"/etc/machine-id", "/proc/self/maps", "/etc/shadow", "/etc/no-such-file.tg",
                                 "/tmp/../etc/machine-id"}) {
    grpc::Status st = start(*t.stub, "file://" + path);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED) << path << ": " << st.error_message();
    EXPECT_CONTAINS(st.error_message(), "--allow-files");
    if (secret.size() > 4) {
      EXPECT_EQ(st.error_message().find(secret.substr(0, 8)), std::string::npos);
    }
    messages.insert(st.error_message());
    // The same through memory-v0's graph files and through Validate.
    st = start(*t.stub, "file://" + path + ".csv", nullptr, "", "memory-v0");
    EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED) << st.error_message();
  }
  EXPECT_EQ(messages.size(), 1u) << "the answer must not depend on whether the file exists";
  proto::ValidateRequest v;
  v.mutable_state()->set_env("schedule-v0");
  v.mutable_state()->set_benchmark("file:///etc/machine-id");
  proto::ValidateResponse vr;
  grpc::Status st = t.stub->Validate(ctx().get(), v, &vr);
  const std::string said = st.error_message() + vr.error();
  EXPECT_CONTAINS(said, "--allow-files");
  if (secret.size() > 4) {
    EXPECT_EQ(said.find(secret.substr(0, 8)), std::string::npos);
  }
}

TEST(Security, AllowFilesServesOnlyFilesBelowItsDirectories) {
  const std::string dir = temp_dir() + "/allowed";
  const std::string outside = temp_dir() + "/outside";
  std::filesystem::create_directories(dir + "/sub");
  std::filesystem::create_directories(outside);
  write_file(dir + "/prog.tg", kProgram, 0644);
  write_file(outside + "/prog.tg", kProgram, 0644);  // a valid program, but not below the directory
  std::filesystem::remove(dir + "/link.tg");
  std::filesystem::create_symlink(outside + "/prog.tg", dir + "/link.tg");
  std::filesystem::remove(dir + "/etc");
  std::filesystem::create_directory_symlink("/etc", dir + "/etc");

  service::ServerOptions o = options();
  o.allow_files = {dir};
  TestServer t(o);
  ASSERT_TRUE(t.stub);
  std::string id;
  grpc::Status st = start(*t.stub, "file://" + dir + "/prog.tg", &id);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_TRUE(step(*t.stub, id).ok());
  EXPECT_TRUE(start(*t.stub, "file://" + dir + "/sub/../prog.tg").ok());
  // Below the directory, a missing file may be said to be missing.
  EXPECT_EQ(start(*t.stub, "file://" + dir + "/none.tg").error_code(), grpc::StatusCode::NOT_FOUND);
  // Leaving it by a path, a link to a file or a link to a directory is refused, whatever is there.
  for (const std::string& uri : std::vector<std::string>{"file://" + outside + "/prog.tg", "file://" + dir + "/../outside/prog.tg",
       "file://" + dir + "/link.tg", "file://" + dir + "/etc/machine-id", "file://" + outside + "/none.tg",
       "file://relative/prog.tg"}) {
    st = start(*t.stub, uri);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED) << uri << ": " << st.error_message();
    EXPECT_CONTAINS(st.error_message(), "is not below a directory this server reads benchmarks from");
  }
  // A directory that does not exist is refused at start.
  o.allow_files = {temp_dir() + "/no-such-dir"};
  EXPECT_EQ(service::Server::start(o).status().code(), StatusCode::kInvalidArgument);
}

// ---- 2. sessions ---------------------------------------------------------------------------

// The probe: ids were sequential and bound to no caller; another client could GetState,
// Step and EndSession someone else's session.
TEST(Security, SessionHandlesAreUnguessableAndBoundToTheClientThatMadeThem) {
  service::ServerOptions o = options();
  o.auth_token_file = two_clients_token_file();
  TestServer t(o);
  ASSERT_TRUE(t.stub);
  std::string alice, alice2;
  ASSERT_TRUE(start(*t.stub, kGemm, &alice, kAliceToken).ok());
  ASSERT_TRUE(start(*t.stub, kGemm, &alice2, kAliceToken).ok());
  EXPECT_TRUE(is_hex_handle(alice)) << alice;
  EXPECT_NE(alice, alice2);
  // 128 random bits: the two handles share no long run of digits.
  EXPECT_NE(alice.substr(0, 16), alice2.substr(0, 16));

  // Bob knows Alice's handle, and gets nothing from it: every call says it does not exist.
  EXPECT_EQ(step(*t.stub, alice, kBobToken).error_code(), grpc::StatusCode::NOT_FOUND);
  proto::GetStateRequest g;
  g.set_session_id(alice);
  proto::GetStateResponse gr;
  EXPECT_EQ(t.stub->GetState(ctx(kBobToken).get(), g, &gr).error_code(), grpc::StatusCode::NOT_FOUND);
  proto::ForkSessionRequest f;
  f.set_session_id(alice);
  proto::ForkSessionResponse fr;
  EXPECT_EQ(t.stub->ForkSession(ctx(kBobToken).get(), f, &fr).error_code(), grpc::StatusCode::NOT_FOUND);
  proto::SendSessionParameterRequest p;
  p.set_session_id(alice);
  p.set_key("runner.repeat");
  p.set_value("2");
  proto::SendSessionParameterResponse pr;
  EXPECT_EQ(t.stub->SendSessionParameter(ctx(kBobToken).get(), p, &pr).error_code(), grpc::StatusCode::NOT_FOUND);
  proto::EndSessionRequest e;
  e.set_session_id(alice);
  proto::EndSessionResponse er;
  EXPECT_EQ(t.stub->EndSession(ctx(kBobToken).get(), e, &er).error_code(), grpc::StatusCode::NOT_FOUND);
  {  // nor on a Session stream
    auto c = ctx(kBobToken);
    auto stream = t.stub->Session(c.get());
    proto::StepRequest r;
    r.set_session_id(alice);
    ASSERT_TRUE(stream->Write(r));
    proto::StepResponse out;
    ASSERT_TRUE(stream->Read(&out));
    EXPECT_EQ(out.status().code(), int(grpc::StatusCode::NOT_FOUND));
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
  }
  // Alice's session is as she left it, and hers to use and end.
  ASSERT_TRUE(t.stub->GetState(ctx(kAliceToken).get(), g, &gr).ok());
  EXPECT_EQ(gr.step_count(), 0u);
  EXPECT_TRUE(step(*t.stub, alice, kAliceToken).ok());
  EXPECT_TRUE(t.stub->EndSession(ctx(kAliceToken).get(), e, &er).ok());
  // A handle that is not one the server gives is not quoted back.
  grpc::Status st = step(*t.stub, std::string(5000, 'x'), kAliceToken);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_LT(st.error_message().size(), 200u);
}

TEST(Security, OneClientCannotTakeEverySession) {
  service::ServerOptions o = options();
  o.auth_token_file = two_clients_token_file();
  o.max_sessions_per_client = 2;
  TestServer t(o);
  ASSERT_TRUE(t.stub);
  std::string a1, a2;
  ASSERT_TRUE(start(*t.stub, kGemm, &a1, kAliceToken).ok());
  ASSERT_TRUE(start(*t.stub, kGemm, &a2, kAliceToken).ok());
  grpc::Status st = start(*t.stub, kGemm, nullptr, kAliceToken);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_CONTAINS(st.error_message(), "--max-sessions-per-client");
  proto::ForkSessionRequest f;  // a fork is a session too
  f.set_session_id(a1);
  proto::ForkSessionResponse fr;
  EXPECT_EQ(t.stub->ForkSession(ctx(kAliceToken).get(), f, &fr).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(start(*t.stub, kGemm, nullptr, kBobToken).ok());  // Bob is not held back by Alice
  proto::EndSessionRequest e;
  e.set_session_id(a1);
  proto::EndSessionResponse er;
  ASSERT_TRUE(t.stub->EndSession(ctx(kAliceToken).get(), e, &er).ok());
  EXPECT_TRUE(start(*t.stub, kGemm, nullptr, kAliceToken).ok());  // her ended session freed its place
}

TEST(Security, SessionTableCountsEachClientAndFreesWhatItEnds) {
  service::SessionTable table(3, 2);
  auto make = [] {
    Expected<std::unique_ptr<Env>> env = make_env("schedule-v0", std::make_shared<EnvContext>());
    return std::move(*env);
  };
  Expected<std::shared_ptr<service::Session>> a = table.add(make(), "", "peer:a");
  Expected<std::shared_ptr<service::Session>> b = table.add(make(), "", "peer:a");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(table.add(make(), "", "peer:a").status().code(), StatusCode::kResourceExhausted);
  ASSERT_TRUE(table.add(make(), "", "peer:b").ok());
  EXPECT_EQ(table.add(make(), "", "peer:c").status().code(), StatusCode::kResourceExhausted);  // the server's cap
  EXPECT_FALSE(table.remove((*a)->id, "token:someone"));  // not the owner's
  EXPECT_TRUE(table.remove((*a)->id, ""));
  EXPECT_TRUE(table.add(make(), "", "peer:a").ok());
  EXPECT_EQ(table.reap_idle(std::chrono::nanoseconds(0)).size(), 3u);
  EXPECT_TRUE(table.add(make(), "", "peer:a").ok());
}

// ---- 3. user benchmarks --------------------------------------------------------------------

// The probe: every distinct program sent in an Evaluate job took one of user-v0's 4,096
// slots forever; past them every program job failed MALFORMED.
TEST(Security, ProgramsInJobsNeverFillUserV0) {
  auto context = std::make_shared<EnvContext>();
  auto registry = std::make_shared<DatasetRegistry>();
  context->datasets = registry.get();
  context->datasets_owner = registry;
  service::EvaluateLimits limits;
  const int jobs = int(UserDataset::kMaxBenchmarks) + 100;
  for (int i = 0; i < jobs; ++i) {
    proto::EvaluateJob job;
    job.set_key("k" + std::to_string(i));
    job.set_program("input A: f32[16]\nB[i] = A[i] + " + std::to_string(i) + ".0\n");
    job.set_actions("split(B.i, 4, io, ii)");
    proto::JobResult r = service::run_evaluate_job(job, context, limits);
    ASSERT_EQ(r.error(), proto::JOB_OK) << i << ": " << r.error_message();
  }
  EXPECT_EQ(registry->user_benchmarks().size(), 0);
  EXPECT_LE(registry->inline_programs().bytes(), InlinePrograms::kDefaultBudgetBytes);
  EXPECT_EQ(registry->inline_programs().entries(), jobs);  // tiny programs: all fit the budget
}

TEST(Security, InlineProgramsEvictTheOldestUnheldAndSayRetryWhenAllAreHeld) {
  const std::string a = kProgram, b = "input A: f32[4]\nB[i] = A[i] * 2.0\n", c = "input A: f32[4]\nB[i] = A[i]\n";
  InlinePrograms cache(2 * InlinePrograms::charge(a) + 8);  // room for two
  Expected<InlinePrograms::Pin> pa = cache.add(a);
  ASSERT_TRUE(pa.ok());
  EXPECT_EQ(pa->uri.rfind("benchmark://inline-v0/", 0), 0u);
  ASSERT_TRUE(cache.get(pa->uri.substr(std::string("benchmark://inline-v0/").size())).ok());
  Expected<InlinePrograms::Pin> pb = cache.add(b);
  ASSERT_TRUE(pb.ok());
  // Both held: a third does not fit, and that is a condition to retry.
  Expected<InlinePrograms::Pin> pc = cache.add(c);
  EXPECT_EQ(pc.status().code(), StatusCode::kUnavailable);
  EXPECT_CONTAINS(pc.status().message(), "retry");
  // Once a job lets go of its program, the oldest unheld one makes room.
  const std::string a_name = pa->uri.substr(std::string("benchmark://inline-v0/").size());
  *pa = InlinePrograms::Pin{};
  ASSERT_TRUE(cache.add(c).ok());
  EXPECT_EQ(cache.get(a_name).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(cache.entries(), 2);
  EXPECT_TRUE(cache.list(0, -1).empty());  // nothing to enumerate
  EXPECT_EQ(cache.add("input A: f32[").status().code(), StatusCode::kInvalidArgument);
}

TEST(Security, EachClientHasItsOwnRoomInUserV0AndUnusedProgramsExpire) {
  UserDataset user;
  for (size_t i = 0; i < UserDataset::kMaxPerOwner; ++i)
    ASSERT_TRUE(user.add("p" + std::to_string(i), kProgram, "token:alice").ok()) << i;
  Expected<std::string> over = user.add("one-more", kProgram, "token:alice");
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  EXPECT_CONTAINS(over.status().message(), "this client holds");
  EXPECT_TRUE(user.add("bobs", kProgram, "token:bob").ok());
  EXPECT_EQ(user.expire_unused(std::chrono::hours(1)).size(), 0u);
  Expected<Benchmark> kept = user.get("p0");  // what did not expire is whole
  ASSERT_TRUE(kept.ok());
  EXPECT_TRUE(kept->program);
  EXPECT_EQ(kept->program_text, kProgram);
  EXPECT_EQ(user.expire_unused(std::chrono::nanoseconds(0)).size(), UserDataset::kMaxPerOwner + 1);
  EXPECT_EQ(user.size(), 0);
  EXPECT_TRUE(user.add("one-more", kProgram, "token:alice").ok());
  EXPECT_TRUE(user.get("one-more").ok());
}

// ---- 6. tokens -----------------------------------------------------------------------------

// The probe: a one-character token in a world-readable file was accepted.
TEST(Security, ShortTokensAndTokenFilesOthersCanReadAreRefused) {
  service::ServerOptions o = options();
  o.auth_token = "x";
  Expected<std::unique_ptr<service::Server>> s = service::Server::start(o);
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(s.status().message(), "at least 16");
  o.auth_token.clear();
  const std::string file = temp_dir() + "/token";
  write_file(file, "x\n", 0600);
  o.auth_token_file = file;
  EXPECT_CONTAINS(service::Server::start(o).status().message(), "at least 16");
  write_file(file, kAliceToken + "\n", 0644);
  s = service::Server::start(o);
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(s.status().message(), "chmod 600");
  EXPECT_EQ(read_token_file(file).status().code(), StatusCode::kInvalidArgument);  // clients read it the same way
  write_file(file, kAliceToken + "\n", 0620);  // others of its group may not change it
  EXPECT_EQ(read_token_file(file).status().code(), StatusCode::kInvalidArgument);
  write_file(file, kAliceToken + "\n", 0640);
  EXPECT_EQ(*read_token_file(file), kAliceToken);
  s = service::Server::start(o);
  EXPECT_TRUE(s.ok()) << s.status().to_string();

  write_file(file, "alice " + kAliceToken + "\n" + kBobToken + "\n", 0600);
  Expected<std::vector<NamedToken>> tokens = read_token_list_file(file);
  ASSERT_TRUE(tokens.ok()) << tokens.status().to_string();
  ASSERT_EQ(tokens->size(), 2u);
  EXPECT_EQ((*tokens)[0].name, "alice");
  EXPECT_EQ((*tokens)[1].name, "token-2");
  write_file(file, "alice " + kAliceToken + "\nalice " + kBobToken + "\n", 0600);
  EXPECT_CONTAINS(read_token_list_file(file).status().message(), "is taken");
  write_file(file, "alice " + kAliceToken + "\nbob " + kAliceToken + "\n", 0600);
  EXPECT_CONTAINS(read_token_list_file(file).status().message(), "given twice");
}

TEST(Security, ATokenWithoutTlsIsWarnedAboutAtStart) {
  const std::string dir = temp_dir() + "/warn";
  std::filesystem::create_directories(dir);
  const std::string tokens = dir + "/tokens", port = dir + "/port", log = dir + "/log", pid = dir + "/pid";
  write_file(tokens, kAliceToken + "\n");
  std::filesystem::remove(port);
  const std::string cmd = "( " + kBinary + " serve --port 0 --port-file " + port + " --auth-token-file " + tokens +
                          " > " + log + " 2>&1 & echo $! > " + pid + " )";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  for (int i = 0; i < 300 && !std::filesystem::exists(port); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::string server_pid = read_file(pid);
  std::system(("kill " + server_pid + " 2>/dev/null").c_str());
  ASSERT_TRUE(std::filesystem::exists(port)) << read_file(log);
  for (int i = 0; i < 100 && ::kill(std::stoi(server_pid), 0) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::string said = read_file(log);
  EXPECT_CONTAINS(said, "WARNING: bearer tokens without TLS travel in plain text");
  EXPECT_CONTAINS(said, "file:// benchmarks: off");
}

// ---- 5. an unauthenticated flood ------------------------------------------------------------

// Peak resident memory of a process, in bytes (VmHWM).
int64_t peak_rss(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return -1;
}

// A `tensorgym serve` of its own, so that its memory is its own.
struct ServeProcess {
  int pid = -1;
  std::string address, log;
  ServeProcess(const std::string& name, const std::string& flags) {
    const std::string dir = temp_dir() + "/" + name;
    std::filesystem::create_directories(dir);
    const std::string port = dir + "/port", pidf = dir + "/pid";
    log = dir + "/log";
    std::filesystem::remove(port);
    const std::string cmd = "( " + kBinary + " serve --port 0 --port-file " + port + " " + flags + " > " + log +
                            " 2>&1 & echo $! > " + pidf + " )";
    if (std::system(cmd.c_str()) != 0) return;
    for (int i = 0; i < 300 && !std::filesystem::exists(port); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    pid = std::stoi(read_file(pidf));
    if (std::filesystem::exists(port)) address = "127.0.0.1:" + read_file(port);
  }
  ~ServeProcess() {
    if (pid > 0) ::kill(pid, SIGKILL);
  }
};

// Eight clients without a token, each sending two requests of 62 MB at once (the probe
// took the server from 72 MiB to 551 MiB before refusing them); how much the server's
// peak resident memory grew.
// The channel arguments of the tests' clients: a connection of their own, any request size,
// and with TLS the name the server's certificate holds (the tests dial an IP address, so
// that no resolver runs).
grpc::ChannelArguments client_args(int client, const std::string& tls_name) {
  grpc::ChannelArguments args;
  args.SetInt("tensorgym.test.client", client);
  args.SetMaxSendMessageSize(-1);
  if (!tls_name.empty()) args.SetSslTargetNameOverride(tls_name);
  return args;
}

int64_t flood(const ServeProcess& serve, const std::shared_ptr<grpc::ChannelCredentials>& credentials,
              const std::string& tls_name, std::atomic<int>* refused) {
  const int64_t before = peak_rss(serve.pid);
  const std::string big(62 << 20, 'x');
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&, c] {
      auto stub =
          TensorGym::NewStub(grpc::CreateCustomChannel(serve.address, credentials, client_args(c, tls_name)));
      for (int i = 0; i < 2; ++i) {
        proto::StartSessionRequest r;
        r.set_env("schedule-v0");
        r.set_benchmark(big);
        proto::StartSessionResponse s;
        // Refused for its token; without TLS, also by the memory cap before it was read
        // whole (RESOURCE_EXHAUSTED), or its connection closed under memory pressure.
        if (!stub->StartSession(ctx().get(), r, &s).ok()) ++*refused;
      }
    });
  }
  for (std::thread& t : clients) t.join();
  return peak_rss(serve.pid) - before;
}

// With TLS the token is checked as a call's metadata arrives, before its body is read:
// the flood costs the server no request memory.
TEST(Security, AnUnauthenticatedFloodIsRefusedBeforeItsBodiesAreRead) {
  const std::string dir = temp_dir() + "/tls";
  std::filesystem::create_directories(dir);
  const std::string cert = dir + "/cert.pem", key = dir + "/key.pem", tokens = dir + "/tokens";
  const std::string openssl = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
                              "-addext subjectAltName=DNS:localhost -keyout " + key + " -out " + cert +
                              " > /dev/null 2>&1";
  if (std::system(openssl.c_str()) != 0) GTEST_SKIP() << "openssl cannot make a test certificate here";
  write_file(tokens, kAliceToken + "\n");
  ServeProcess serve("flood-tls", "--tls-cert " + cert + " --tls-key " + key + " --auth-token-file " + tokens);
  ASSERT_FALSE(serve.address.empty()) << read_file(serve.log);
  grpc::SslCredentialsOptions tls;
  tls.pem_root_certs = read_file(cert);
  std::atomic<int> refused{0};
  const int64_t grown = flood(serve, grpc::SslCredentials(tls), "localhost", &refused);
  EXPECT_EQ(refused.load(), 16);
  std::printf("TLS: peak RSS grew by %lld MiB for 16 refused requests of 62 MB\n", (long long)(grown >> 20));
  // Reading the bodies would take 16 x 62 MB. A sanitizer build's allocator keeps freed
  // memory in quarantine and shadows what it maps, so there the bound is looser.
  EXPECT_LT(grown, (kSanitized ? 8 : 1) * (int64_t(62) << 20)) << "a refused request's body was read";
  // The server still serves a client with the token.
  auto stub =
      TensorGym::NewStub(grpc::CreateCustomChannel(serve.address, grpc::SslCredentials(tls), client_args(0, "localhost")));
  proto::GetVersionResponse v;
  EXPECT_TRUE(stub->GetVersion(ctx(kAliceToken).get(), {}, &v).ok());
}

// Without TLS gRPC reads a unary call's body before any check can run; the requests in
// flight are bounded by --max-memory-in-flight (gRPC's resource quota, a soft bound), and
// every call is still refused. The growth is printed, not asserted: the quota is gRPC's.
TEST(Security, WithoutTlsAnUnauthenticatedFloodIsStillRefused) {
  const std::string tokens = temp_dir() + "/flood-tokens";
  write_file(tokens, kAliceToken + "\n");
  ServeProcess serve("flood", "--auth-token-file " + tokens + " --max-memory-in-flight " + std::to_string(128 << 20));
  ASSERT_FALSE(serve.address.empty()) << read_file(serve.log);
  std::atomic<int> refused{0};
  const int64_t grown = flood(serve, grpc::InsecureChannelCredentials(), "", &refused);
  EXPECT_EQ(refused.load(), 16);
  std::printf("plain text: peak RSS grew by %lld MiB for 16 refused requests of 62 MB\n", (long long)(grown >> 20));
  auto stub = TensorGym::NewStub(grpc::CreateChannel(serve.address, grpc::InsecureChannelCredentials()));
  proto::GetVersionResponse v;
  EXPECT_TRUE(stub->GetVersion(ctx(kAliceToken).get(), {}, &v).ok());
}

}  // namespace
}  // namespace tensorgym
