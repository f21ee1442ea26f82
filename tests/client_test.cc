// The C++ client library end to end: managed mode (real `tensorgym serve` children),
// remote mode (a server in this process on 127.0.0.1), the Env API against the
// in-process one, recovery after kill -9 and after a server restart, deadlines,
// auth, streaming steps, many sessions from many threads, the managed service's
// life tied to its client, and the CLI with --endpoint.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "client/connection.h"
#include "client/remote_env.h"
#include "datasets/registry.h"
#include "envs/env_context.h"
#include "service/server.h"
#include "tests/test_support.h"

extern char** environ;

namespace tensorgym {
namespace {

const std::string kBinary = std::string(TENSORGYM_BINARY_DIR) + "/bin/tensorgym";
const std::string kGemm = "benchmark://ops-v0/gmm-1";

client::ConnectionOptions managed_options() {
  client::ConnectionOptions o;
  o.server_binary = kBinary;
  o.server_args = {"--threads", "1"};
  o.call_timeout_s = 120;
  return o;
}

std::shared_ptr<client::Connection> open(client::ConnectionOptions o = managed_options()) {
  Expected<std::shared_ptr<client::Connection>> c = client::Connection::open(std::move(o));
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return c.ok() ? *c : nullptr;
}

// One managed service shared by the tests that do not stop it.
std::shared_ptr<client::Connection> shared() {
  static std::shared_ptr<client::Connection> c = open();
  return c;
}

std::unique_ptr<client::RemoteEnv> remote_env(const std::shared_ptr<client::Connection>& c) {
  Expected<std::unique_ptr<client::RemoteEnv>> e = c->make_env("schedule-v0");
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(*e) : nullptr;
}

std::unique_ptr<Env> local_env() {
  static auto context = [] {
    auto c = std::make_shared<EnvContext>();
    c->worker_binary = kBinary;
    c->threads = 1;
    return c;
  }();
  Expected<std::unique_ptr<Env>> e = make_env("schedule-v0", context);
  EXPECT_TRUE(e.ok());
  return std::move(*e);
}

service::ServerOptions server_options() {
  service::ServerOptions o;
  o.worker_binary = kBinary;
  o.threads = 1;
  o.log_level = service::LogLevel::kWarning;
  o.shutdown_grace_s = 1;
  return o;
}

bool process_gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  size_t paren = line.rfind(')');
  return paren == std::string::npos || (paren + 2 < line.size() && line[paren + 2] == 'Z');
}

bool wait_gone(pid_t pid, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (process_gone(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return process_gone(pid);
}

// Runs a command line, returns (exit status, stdout).
std::pair<int, std::string> run(const std::string& command) {
  std::string out;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p) return {-1, ""};
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// The episode both environments play: text actions, one per step, with cheap
// observations and a deterministic reward.
const std::vector<std::string> kActions = {"split(C.i, 32, io, ii)", "split(C.j, 16, jo, ji)",
                                           "reorder(C, io, jo, ii, ji)", "vectorize(C.ji)", "parallel(C.io)",
                                           "unroll(C.ii)"};
const std::vector<std::string> kObservations = {"schedule", "loop_nest", "action_mask", "features_flat", "est_cycles"};

void expect_same_step(const StepResult& a, const StepResult& b, const std::string& what) {
  ASSERT_EQ(a.observations.size(), b.observations.size()) << what;
  for (size_t i = 0; i < a.observations.size(); ++i)
    EXPECT_TRUE(a.observations[i] == b.observations[i]) << what << ": observation " << i;
  EXPECT_EQ(a.rewards, b.rewards) << what;
  EXPECT_EQ(a.terminated, b.terminated) << what;
  EXPECT_EQ(a.truncated, b.truncated) << what;
  EXPECT_EQ(a.action_had_no_effect, b.action_had_no_effect) << what;
  EXPECT_EQ(a.error.code(), b.error.code()) << what << ": " << a.error.to_string() << " vs " << b.error.to_string();
  EXPECT_EQ(a.error.message(), b.error.message()) << what;
}

// ---- the API --------------------------------------------------------------------------

TEST(Client, ManagedConnectionLists) {
  auto c = shared();
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->managed());
  EXPECT_GT(c->server_pid(), 0);
  Expected<std::string> v = c->version();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, TENSORGYM_VERSION);
  Expected<bool> serving = c->serving();
  ASSERT_TRUE(serving.ok()) << serving.status().to_string();
  EXPECT_TRUE(*serving);
  Expected<std::vector<client::DatasetInfo>> d = c->datasets();
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->empty());
  Expected<client::BenchmarkPage> p = c->benchmarks("ops-v0", 5);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->benchmarks.size(), 5u);
  EXPECT_FALSE(p->next_page_token.empty());
  Expected<client::BenchmarkPage> p2 = c->benchmarks("ops-v0", 5, p->next_page_token);
  ASSERT_TRUE(p2.ok());
  EXPECT_NE(p2->benchmarks[0].uri, p->benchmarks[0].uri);
  EXPECT_EQ(c->benchmarks("nope-v0").status().code(), StatusCode::kNotFound);
  Expected<client::EnvSpaces> s = c->spaces("schedule-v0");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->action[0].name(), "primitives");
  EXPECT_EQ(c->make_env("nope-v0").status().code(), StatusCode::kNotFound);
}

TEST(Client, EnvMatchesTheInProcessEnv) {
  auto c = shared();
  ASSERT_TRUE(c);
  auto remote = remote_env(c);
  auto local = local_env();
  ASSERT_TRUE(remote);
  EXPECT_EQ(remote->name(), local->name());
  EXPECT_EQ(remote->observation_spaces().size(), local->observation_spaces().size());
  Expected<std::vector<Event>> r0 = remote->reset(kGemm, {}, kObservations);
  Expected<std::vector<Event>> l0 = local->reset(kGemm, {}, kObservations);
  ASSERT_TRUE(r0.ok() && l0.ok());
  EXPECT_TRUE(*r0 == *l0);
  for (const std::string& a : kActions) {
    StepResult r = remote->step({Event(a)}, kObservations, {"est_cycles"});
    StepResult l = local->step({Event(a)}, kObservations, {"est_cycles"});
    expect_same_step(r, l, a);
  }
  // Errors are values, with the observations, as in-process.
  expect_same_step(remote->step({Event(int64_t(1) << 40)}, {"schedule"}, {"est_cycles"}),
                   local->step({Event(int64_t(1) << 40)}, {"schedule"}, {"est_cycles"}), "bad index");
  expect_same_step(remote->step({Event("split(C.nope, 2, a, b)")}, {"schedule"}, {}),
                   local->step({Event("split(C.nope, 2, a, b)")}, {"schedule"}, {}), "bad text");
  expect_same_step(remote->step({}, {"colour"}, {}), local->step({}, {"colour"}, {}), "bad observation");
  // Index actions.
  StepResult mask = local->step({}, {"action_mask"}, {});
  const Int64Tensor& m = mask.observations[0].as<Int64Tensor>();
  for (size_t i = 0, taken = 0; i < m.values.size() && taken < 3; ++i) {
    if (!m.values[i]) continue;
    ++taken;
    expect_same_step(remote->step({Event(int64_t(i))}, {"schedule"}, {"est_cycles"}),
                     local->step({Event(int64_t(i))}, {"schedule"}, {"est_cycles"}), "index");
  }
  EpisodeState rs = remote->state(), ls = local->state();
  EXPECT_EQ(rs.actions, ls.actions);
  EXPECT_EQ(rs.benchmark, ls.benchmark);
  EXPECT_EQ(rs.reward_space, ls.reward_space);
  EXPECT_EQ(rs.reward, ls.reward);
  EXPECT_EQ(rs.deterministic_rewards, ls.deterministic_rewards);

  // fork: independent, same state.
  Expected<std::unique_ptr<Env>> fork = remote->fork();
  ASSERT_TRUE(fork.ok());
  EXPECT_EQ((*fork)->state().actions, rs.actions);
  ASSERT_TRUE((*fork)->step({Event("split(C.k, 4, ko, ki)")}, {}, {}).error.ok());
  EXPECT_EQ((*fork)->state().actions.size(), rs.actions.size() + 1);
  EXPECT_EQ(remote->state().actions, rs.actions);

  // Parameters, and reset in the same environment.
  EXPECT_TRUE(remote->set_parameter("runner.repeat", "2").ok());
  EXPECT_EQ(remote->set_parameter("runner.bogus", "2").code(), StatusCode::kInvalidArgument);
  ResetOptions cursor;
  cursor.action_space = "cursor";
  cursor.max_episode_steps = 2;
  ASSERT_TRUE(remote->reset(kGemm, cursor, {}).ok());
  ASSERT_TRUE(local->reset(kGemm, cursor, {}).ok());
  for (int i = 0; i < 2; ++i)
    expect_same_step(remote->step({Event("loop_in")}, {"cursor"}, {}), local->step({Event("loop_in")}, {"cursor"}, {}),
                     "cursor");
  EXPECT_EQ(remote->state().action_space, "cursor");

  remote->close();
  StepResult closed = remote->step({}, {"schedule"}, {});
  EXPECT_TRUE(closed.terminated);
  EXPECT_EQ(closed.error.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(remote->reset("benchmark://ops-v0/gmm-99", {}, {}).status().code(), StatusCode::kNotFound);
}

// One episode, remote and in-process side by side from reset: every step's results,
// a bad action text and a bad index included, and the episode's actions at the end.
void expect_episode_matches_in_process(Env& remote, Env& local, const std::string& what) {
  ASSERT_TRUE(remote.reset(kGemm, {}, {}).ok());
  ASSERT_TRUE(local.reset(kGemm, {}, {}).ok());
  for (const std::string& a : kActions)
    expect_same_step(remote.step({Event(a)}, kObservations, {"est_cycles"}),
                     local.step({Event(a)}, kObservations, {"est_cycles"}), what + " " + a);
  expect_same_step(remote.step({Event("split(C.nope, 2, a, b)")}, {"schedule"}, {}),
                   local.step({Event("split(C.nope, 2, a, b)")}, {"schedule"}, {}), what + " bad text");
  expect_same_step(remote.step({Event(int64_t(1) << 40)}, {"schedule"}, {}),
                   local.step({Event(int64_t(1) << 40)}, {"schedule"}, {}), what + " bad index");
  EXPECT_EQ(remote.state().actions, local.state().actions);
}

// Steps sent unary or on the Session stream (set_streaming), their answers slept on or
// polled for (set_busy_poll), give what the in-process env gives, errors included; a
// budget too short to see the answer falls back to sleeping on it; switching the polling
// mid-episode reopens the stream the other way; a step that measures is sent as a
// blocking call.
TEST(Client, StreamedAndPolledStepsGiveTheSameResults) {
  auto c = shared();
  ASSERT_TRUE(c);
  for (bool streaming : {false, true}) {
    for (double busy_poll_us : {0.0, 1.0, 100000.0}) {
      auto remote = remote_env(c);
      remote->set_streaming(streaming);
      remote->set_busy_poll(busy_poll_us);
      expect_episode_matches_in_process(
          *remote, *local_env(), (streaming ? "stream" : "unary") + std::string(" polled ") + std::to_string(busy_poll_us));
      if (!streaming) continue;
      remote->set_busy_poll(busy_poll_us > 0 ? 0 : 1000);
      StepResult r = remote->step({Event("split(C.k, 4, ko, ki)")}, {"schedule"}, {});
      ASSERT_TRUE(r.error.ok()) << r.error.to_string();
      EXPECT_EQ(remote->state().actions.back(), "split(C.k, 4, ko, ki)");
    }
  }
  auto measured = remote_env(c);
  measured->set_busy_poll(100000);
  ASSERT_TRUE(measured->reset(kGemm, {}, {}).ok());
  StepResult r = measured->step({Event("split(C.j, 16, jo, ji)")}, {"runtime", "schedule"}, {});
  ASSERT_TRUE(r.error.ok()) << r.error.to_string();
  EXPECT_GT(r.observations[0].as<double>(), 0);
  EXPECT_EQ(r.observations[1].as<std::string>(), "split(C.j, 16, jo, ji)\n");
}

TEST(Client, UserBenchmarksAndValidate) {
  auto c = shared();
  ASSERT_TRUE(c);
  Expected<std::string> uri =
      c->add_benchmark("client_gemm", "input A: f32[64, 32]\ninput B: f32[32, 16]\nC[i, j] += A[i, k] * B[k, j]\n");
  ASSERT_TRUE(uri.ok()) << uri.status().to_string();
  EXPECT_EQ(*uri, "benchmark://user-v0/client_gemm");
  Expected<std::string> bad = c->add_benchmark("client_bad", "C[i] = ");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  auto env = remote_env(c);
  ASSERT_TRUE(env->reset(*uri, {}, {}).ok());
  ASSERT_TRUE(env->step({Event("split(C.j, 8, jo, ji)")}, {}, {"est_cycles"}).error.ok());
  Expected<client::ValidationResult> v = c->validate(env->state());
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_TRUE(v->ok) << v->error;
}

// ---- recovery -------------------------------------------------------------------------

// kill -9 of the managed service mid-episode: the next step restarts it, replays the
// episode (and its fork, and its user benchmark), and the observations equal those of
// an uninterrupted episode.
TEST(Client, RecoversFromKillNineOfTheManagedService) {
  auto c = open();
  ASSERT_TRUE(c);
  const std::string program = "input A: f32[64, 64]\ninput B: f32[64, 64]\nC[i, j] += A[i, k] * B[k, j]\n";
  Expected<std::string> uri = c->add_benchmark("kill_gemm", program);
  ASSERT_TRUE(uri.ok());
  ASSERT_TRUE(DatasetRegistry::global().add_user_benchmark("kill_gemm", program).ok());  // for the local env
  for (const std::string& benchmark : {kGemm, *uri}) {
    auto remote = remote_env(c);
    auto local = local_env();
    ASSERT_TRUE(remote->reset(benchmark, {}, {}).ok());
    ASSERT_TRUE(local->reset(benchmark, {}, {}).ok());
    for (size_t i = 0; i < 3; ++i)
      expect_same_step(remote->step({Event(kActions[i])}, {}, {"est_cycles"}),
                       local->step({Event(kActions[i])}, {}, {"est_cycles"}), "before");
    Expected<std::unique_ptr<Env>> fork = remote->fork();
    ASSERT_TRUE(fork.ok());
    const pid_t pid = c->server_pid();
    ASSERT_GT(pid, 0);
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    ASSERT_TRUE(wait_gone(pid, 10));
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 3; i < kActions.size(); ++i)
      expect_same_step(remote->step({Event(kActions[i])}, kObservations, {"est_cycles"}),
                       local->step({Event(kActions[i])}, kObservations, {"est_cycles"}), "after " + kActions[i]);
    // How long the restart and the replay take is the machine's business: reported. That
    // they happened, and gave the uninterrupted episode's steps, is asserted.
    const double recovery_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    RecordProperty(benchmark == kGemm ? "recovery_s" : "recovery_user_benchmark_s", std::to_string(recovery_s));
    EXPECT_NE(c->server_pid(), pid);
    EpisodeState rs = remote->state(), ls = local->state();
    EXPECT_EQ(rs.actions, ls.actions);
    EXPECT_EQ(rs.deterministic_rewards, ls.deterministic_rewards);
    // The fork was restored too, at its own state.
    EpisodeState fs = (*fork)->state();
    EXPECT_EQ(fs.actions, std::vector<std::string>(kActions.begin(), kActions.begin() + 3));
    StepResult f = (*fork)->step({}, {"schedule"}, {});
    EXPECT_TRUE(f.error.ok()) << f.error.to_string();
  }
  EXPECT_GE(c->stats().restarts, 2);
  EXPECT_GE(c->stats().replays, 4);
}

// kill -9 between the steps of an environment that streams its steps and polls for
// their answers: the broken stream is noticed, the service restarted, the episode
// replayed, and the steps after it equal the in-process ones.
TEST(Client, PolledStreamRecoversFromKillNine) {
  auto c = open();
  ASSERT_TRUE(c);
  auto remote = remote_env(c);
  auto local = local_env();
  remote->set_streaming(true);
  remote->set_busy_poll(100000);
  ASSERT_TRUE(remote->reset(kGemm, {}, {}).ok());
  ASSERT_TRUE(local->reset(kGemm, {}, {}).ok());
  for (size_t i = 0; i < 3; ++i)
    expect_same_step(remote->step({Event(kActions[i])}, {"loop_nest"}, {}),
                     local->step({Event(kActions[i])}, {"loop_nest"}, {}), "before");
  const pid_t pid = c->server_pid();
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  ASSERT_TRUE(wait_gone(pid, 10));
  for (size_t i = 3; i < kActions.size(); ++i)
    expect_same_step(remote->step({Event(kActions[i])}, kObservations, {}),
                     local->step({Event(kActions[i])}, kObservations, {}), "after " + kActions[i]);
  EXPECT_NE(c->server_pid(), pid);
  EXPECT_EQ(remote->state().actions, local->state().actions);
}

// kill -9 while a step that measures is in flight: the step is retried on the
// restarted service after the episode is replayed, and applies exactly once.
TEST(Client, RecoversFromKillNineDuringAStepInFlight) {
  auto c = open();
  ASSERT_TRUE(c);
  auto remote = remote_env(c);
  ASSERT_TRUE(remote->reset(kGemm, {}, {}).ok());
  ASSERT_TRUE(remote->set_parameter("runner.repeat", "1").ok());
  ASSERT_TRUE(remote->set_parameter("runner.min_repeat_ms", "1000").ok());  // a measurement lasts > 1 s
  ASSERT_TRUE(remote->step({Event("split(C.j, 16, jo, ji)")}, {}, {"est_cycles"}).error.ok());
  const pid_t pid = c->server_pid();
  std::atomic<bool> killed_in_flight{false};
  std::atomic<bool> done{false};
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    killed_in_flight = !done.load();
    ::kill(pid, SIGKILL);
  });
  StepResult r = remote->step({Event("vectorize(C.ji)")}, {"runtime", "schedule"}, {"est_cycles"});
  done = true;
  killer.join();
  EXPECT_TRUE(killed_in_flight.load());
  ASSERT_TRUE(r.error.ok()) << r.error.to_string();
  EXPECT_GT(r.observations[0].as<double>(), 0.0);
  EXPECT_EQ(r.observations[1].as<std::string>(), "split(C.j, 16, jo, ji)\nvectorize(C.ji)\n");
  EXPECT_EQ(remote->state().actions, (std::vector<std::string>{"split(C.j, 16, jo, ji)", "vectorize(C.ji)"}));
  EXPECT_NE(c->server_pid(), pid);
  EXPECT_EQ(c->stats().restarts, 1);
}

// A remote server that goes away and comes back on the same port (a new instance):
// the client reconnects and replays.
TEST(Client, ReconnectsToARestartedRemoteServer) {
  Expected<std::unique_ptr<service::Server>> first = service::Server::start(server_options());
  ASSERT_TRUE(first.ok());
  const int port = (*first)->port();
  client::ConnectionOptions o;
  o.endpoint = "127.0.0.1:" + std::to_string(port);
  o.reconnect_timeout_s = 20;
  auto c = open(o);
  ASSERT_TRUE(c);
  auto remote = remote_env(c);
  auto local = local_env();
  ASSERT_TRUE(remote->reset(kGemm, {}, {}).ok());
  ASSERT_TRUE(local->reset(kGemm, {}, {}).ok());
  for (size_t i = 0; i < 2; ++i)
    expect_same_step(remote->step({Event(kActions[i])}, {"schedule"}, {"est_cycles"}),
                     local->step({Event(kActions[i])}, {"schedule"}, {"est_cycles"}), "before");
  first->reset();  // the server goes away
  std::unique_ptr<service::Server> second;
  std::thread restart([port, &second] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    service::ServerOptions so = server_options();
    so.port = port;
    Expected<std::unique_ptr<service::Server>> s = service::Server::start(so);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    if (s.ok()) second = std::move(*s);
  });
  StepResult r = remote->step({Event(kActions[2])}, kObservations, {"est_cycles"});
  restart.join();
  expect_same_step(r, local->step({Event(kActions[2])}, kObservations, {"est_cycles"}), "after restart");
  EXPECT_EQ(remote->state().actions, local->state().actions);
  EXPECT_GE(c->stats().replays, 1);
}

TEST(Client, StepNeverThrowsWhenTheServiceIsGone) {
  Expected<std::unique_ptr<service::Server>> server = service::Server::start(server_options());
  ASSERT_TRUE(server.ok());
  client::ConnectionOptions o;
  o.endpoint = "127.0.0.1:" + std::to_string((*server)->port());
  o.reconnect_timeout_s = 0.5;
  auto c = open(o);
  ASSERT_TRUE(c);
  auto remote = remote_env(c);
  ASSERT_TRUE(remote->reset(kGemm, {}, {}).ok());
  server->reset();
  StepResult r = remote->step({Event(kActions[0])}, {"schedule", "est_cycles"}, {"est_cycles"});
  EXPECT_TRUE(r.terminated);
  EXPECT_EQ(r.error.code(), StatusCode::kUnavailable);
  ASSERT_EQ(r.observations.size(), 2u);
  EXPECT_TRUE(r.observations[0] == Event(std::string()));  // the spaces' defaults
  EXPECT_TRUE(r.observations[1] == Event(-1.0));
  ASSERT_EQ(r.rewards.size(), 1u);
  EXPECT_EQ(r.rewards[0], -1.0);
  EpisodeState s = remote->state();  // what the client knows
  EXPECT_EQ(s.benchmark, kGemm);
}

TEST(Client, DeadlineExceededDuringASlowMeasurementKeepsTheEpisode) {
  auto c = shared();
  ASSERT_TRUE(c);
  auto remote = remote_env(c);
  ASSERT_TRUE(remote->reset(kGemm, {}, {}).ok());
  ASSERT_TRUE(remote->step({Event("split(C.j, 16, jo, ji)")}, {}, {}).error.ok());
  ASSERT_TRUE(remote->set_parameter("runner.min_repeat_ms", "60000").ok());
  remote->set_timeout(1.5);
  const auto t0 = std::chrono::steady_clock::now();
  StepResult r = remote->step({Event("vectorize(C.ji)")}, {"runtime"}, {});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  EXPECT_EQ(r.error.code(), StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(r.terminated);
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_TRUE(r.observations[0] == Event(-1.0));
  // The episode goes on without the step.
  remote->set_timeout(0);
  StepResult next = remote->step({}, {"schedule"}, {});
  ASSERT_TRUE(next.error.ok()) << next.error.to_string();
  EXPECT_EQ(next.observations[0].as<std::string>(), "split(C.j, 16, jo, ji)\n");
  EXPECT_EQ(remote->state().actions, std::vector<std::string>{"split(C.j, 16, jo, ji)"});
}

// ---- remote mode ------------------------------------------------------------------------

TEST(Client, RemoteModeWithTokenAndDnsName) {
  service::ServerOptions so = server_options();
  so.auth_token = "tok-123-0123456789";
  Expected<std::unique_ptr<service::Server>> server = service::Server::start(so);
  ASSERT_TRUE(server.ok());
  const std::string port = std::to_string((*server)->port());
  client::ConnectionOptions o;
  o.endpoint = "127.0.0.1:" + port;
  o.startup_timeout_s = 2;
  Expected<std::shared_ptr<client::Connection>> denied = client::Connection::open(o);
  EXPECT_EQ(denied.status().code(), StatusCode::kUnauthenticated);
  o.auth_token = "tok-123-0123456789";
  auto c = open(o);
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->managed());
  auto env = remote_env(c);
  ASSERT_TRUE(env->reset(kGemm, {}, {"schedule"}).ok());
  EXPECT_TRUE(env->step({Event(kActions[0])}, {}, {}).error.ok());
  // dns:///localhost may resolve to ::1 too, where nothing listens: sessions go to
  // the address that answers.
  o.endpoint = "dns:///localhost:" + port;
  auto d = open(o);
  ASSERT_TRUE(d);
  for (int i = 0; i < 3; ++i) {
    auto e = remote_env(d);
    ASSERT_TRUE(e->reset(kGemm, {}, {}).ok());
    StepResult r = e->step({Event(kActions[0])}, {"schedule"}, {});
    EXPECT_TRUE(r.error.ok()) << r.error.to_string();
  }
  EXPECT_EQ(client::Connection::open({.endpoint = "dns:///no-such-host.invalid:1"}).status().code(),
            StatusCode::kUnavailable);
}

// ---- load -------------------------------------------------------------------------------

// 64 sessions from 8 threads through the client library, 200 steps each, mostly
// actions the observed mask allows; every final state equals the in-process
// environment's after the same steps.
TEST(Client, SixtyFourEnvsFromEightThreads) {
  constexpr int kThreads = 8, kEnvsPerThread = 8, kSteps = 200;
  auto c = shared();
  ASSERT_TRUE(c);
  const int64_t n = c->spaces("schedule-v0")->action[0].n();
  struct Run {
    std::unique_ptr<client::RemoteEnv> env;
    std::vector<int64_t> actions;
  };
  std::vector<Run> runs(kThreads * kEnvsPerThread);
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(99 + t);
      for (int k = 0; k < kEnvsPerThread; ++k) {
        Run& run = runs[size_t(t * kEnvsPerThread + k)];
        run.env = remote_env(c);
        if (!run.env || !run.env->reset(k % 2 ? kGemm : "benchmark://ops-v0/gmm-2", {}, {}).ok()) ++errors;
      }
      std::vector<std::vector<int64_t>> allowed(kEnvsPerThread);
      for (int s = 0; s < kSteps; ++s)
        for (int k = 0; k < kEnvsPerThread; ++k) {
          Run& run = runs[size_t(t * kEnvsPerThread + k)];
          std::vector<int64_t>& mask = allowed[size_t(k)];
          const int64_t a = !mask.empty() && rng() % 4 != 0 ? mask[rng() % mask.size()] : int64_t(rng() % uint64_t(n));
          run.actions.push_back(a);
          StepResult r = run.env->step({Event(a)}, {"action_mask"}, {});
          if (r.terminated || r.observations.size() != 1) {
            ++errors;
            continue;
          }
          mask.clear();
          const Int64Tensor& m = r.observations[0].as<Int64Tensor>();
          for (size_t i = 0; i < m.values.size(); ++i)
            if (m.values[i]) mask.push_back(int64_t(i));
        }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  for (size_t i = 0; i < runs.size(); ++i) {
    auto local = local_env();
    ASSERT_TRUE(local->reset((i % kEnvsPerThread) % 2 ? kGemm : "benchmark://ops-v0/gmm-2", {}, {}).ok());
    for (int64_t a : runs[i].actions) (void)local->step({Event(a)}, {}, {});
    EXPECT_EQ(runs[i].env->state().actions, local->state().actions) << i;
  }
}

// ---- the managed service's life ---------------------------------------------------------

// A helper process (this test binary) opens a managed connection and waits; killing
// it with SIGKILL must take its service with it.
TEST(Client, ManagedServiceDoesNotOutliveAKilledClient) {
  if (std::getenv("TENSORGYM_CLIENT_TEST_HELPER")) {  // the helper
    auto c = open();
    if (!c) std::_Exit(3);
    std::printf("server %d\n", int(c->server_pid()));
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::seconds(60));
    std::_Exit(0);
  }
  char self[4096];
  ssize_t len = ::readlink("/proc/self/exe", self, sizeof self - 1);
  ASSERT_GT(len, 0);
  self[len] = '\0';
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], 1);
  posix_spawn_file_actions_addclose(&actions, pipefd[0]);
  std::string filter = "--gtest_filter=Client.ManagedServiceDoesNotOutliveAKilledClient";
  char* argv[] = {self, filter.data(), nullptr};
  std::vector<std::string> env_strings = {"TENSORGYM_CLIENT_TEST_HELPER=1"};
  for (char** e = environ; *e; ++e) env_strings.push_back(*e);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  pid_t helper = -1;
  ASSERT_EQ(posix_spawn(&helper, self, &actions, nullptr, argv, envp.data()), 0);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipefd[1]);
  FILE* out = ::fdopen(pipefd[0], "r");
  int server = 0;
  char line[512];
  while (server == 0 && std::fgets(line, sizeof line, out)) std::sscanf(line, "server %d", &server);
  std::fclose(out);
  ASSERT_GT(server, 0) << "the helper did not report its service";
  EXPECT_FALSE(process_gone(server));
  ASSERT_EQ(::kill(helper, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(helper, &status, 0), helper);
  EXPECT_TRUE(wait_gone(server, 10)) << "tensorgym serve " << server << " outlived its client";
}

// ---- the CLI ----------------------------------------------------------------------------

TEST(Client, CliCommandsWithEndpointMatchInProcess) {
  auto c = open();  // a fresh service: no user benchmarks yet, like the in-process registry
  ASSERT_TRUE(c);
  const std::string endpoint = " --endpoint " + c->address();
  const std::string state = ::testing::TempDir() + "client_test_state.jsonl";
  std::remove(state.c_str());
  const std::string run_args = " run --benchmark " + kGemm +
                               " --actions 'split(C.i, 32, io, ii); parallel(C.io)' --observe schedule,loop_nest "
                               "--reward est_cycles --json";
  auto local = run(kBinary + run_args);
  auto remote = run(kBinary + run_args + endpoint + " --state-out " + state);
  ASSERT_EQ(local.first, 0) << local.second;
  ASSERT_EQ(remote.first, 0) << remote.second;
  // Equal but for the walltime.
  auto strip = [](std::string s) {
    size_t w = s.find("\"walltime\":");
    if (w != std::string::npos) s.erase(w, s.find_first_of(",}", w) - w);
    return s;
  };
  EXPECT_EQ(strip(remote.second), strip(local.second));
  for (const std::string args : {" datasets", " benchmarks ops-v0 --offset 2 --limit 5", " benchmarks random-ops-v0"}) {
    auto l = run(kBinary + args);
    auto r = run(kBinary + args + endpoint);
    EXPECT_EQ(l.first, 0);
    EXPECT_EQ(r.second, l.second) << args;
  }
  auto replay = run(kBinary + " replay " + state + endpoint);
  EXPECT_EQ(replay.first, 0) << replay.second;
  EXPECT_CONTAINS(replay.second, "parallel(C.io)");
  auto validate = run(kBinary + " validate " + state + endpoint);
  EXPECT_EQ(validate.first, 0) << validate.second;
  EXPECT_CONTAINS(validate.second, ": ok");
  auto bad = run(kBinary + " run --benchmark benchmark://ops-v0/gmm-99 --endpoint " + c->address());
  EXPECT_NE(bad.first, 0);
  EXPECT_CONTAINS(bad.second, "gmm-99");
}

TEST(Client, ServeWritesItsPortAndExitsZeroOnSigterm) {
  const std::string dir = ::testing::TempDir();
  const std::string port_file = dir + "client_test_port";
  std::remove(port_file.c_str());
  pid_t pid = -1;
  std::vector<std::string> args = {kBinary, "serve", "--port", "0", "--port-file", port_file, "--log-level", "warning"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ASSERT_EQ(posix_spawn(&pid, kBinary.c_str(), nullptr, nullptr, argv.data(), environ), 0);
  int port = 0;
  for (int i = 0; i < 1000 && port == 0; ++i) {
    std::ifstream in(port_file);
    if (!(in >> port)) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(port, 0);
  client::ConnectionOptions o;
  o.endpoint = "127.0.0.1:" + std::to_string(port);
  auto c = open(o);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->version().ok());
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // Not loopback and no TLS or token: it refuses, and says why.
  auto refused = run(kBinary + " serve --host 0.0.0.0 --port 0");
  EXPECT_EQ(refused.first, 1);
  EXPECT_CONTAINS(refused.second, "refusing to serve on 0.0.0.0");
}

}  // namespace
}  // namespace tensorgym
