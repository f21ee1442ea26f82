// Batch evaluation end to end with real processes on loopback: job files and the
// journal; the BatchEvaluator across three local services while one service and a
// measurement worker of another are killed with SIGKILL; a service stopped with
// SIGTERM; one whose workers keep dying (quarantine); the `tensorgym batch` CLI killed
// mid-run and resumed; bad jobs; a torn journal line; deadlines and queues; a wrong
// token; services that cannot start; dns:/// endpoints; --make-jobs. The checks are on
// the journal: each job exactly one result, none lost, and deterministic observations
// equal to those of an in-process run without faults. Speed is never asserted.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "client/batch_evaluator.h"
#include "client/journal.h"
#include "client/managed_server.h"
#include "envs/env_context.h"
#include "proto/jobs.h"
#include "proto/tensorgym.pb.h"
#include "service/evaluate.h"

extern char** environ;

namespace tensorgym {
namespace {

#define EXPECT_CONTAINS(text, part)                                                                           \
  do {                                                                                                        \
    const std::string tg_text_ = (text);                                                                      \
    EXPECT_NE(tg_text_.find(part), std::string::npos) << "\"" << tg_text_ << "\" lacks \"" << (part) << "\""; \
  } while (0)

using Clock = std::chrono::steady_clock;

const std::string kBinary = std::string(TENSORGYM_BINARY_DIR) + "/bin/tensorgym";
// Services of the tests: one compile thread, few slots (the machine may have two cores).
const std::vector<std::string> kServeArgs = {"--workers", "1", "--concurrency", "2", "--threads", "1"};

// Files of this test process, removed when it exits (each test case runs as a
// process of its own under ctest).
struct TempFiles {
  std::mutex mu;
  std::set<std::string> paths;
  ~TempFiles() {
    for (const std::string& p : paths) std::remove(p.c_str());
  }
};
TempFiles g_temp_files;

std::string temp_path(const std::string& name) {
  const std::string p = ::testing::TempDir() + "batch_test_" + std::to_string(::getpid()) + "_" + name;
  std::remove(p.c_str());
  std::lock_guard<std::mutex> lock(g_temp_files.mu);
  g_temp_files.paths.insert(p);
  return p;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}

// Runs a command through the shell; (exit status, stdout and stderr).
std::pair<int, std::string> run(const std::string& command) {
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Starts `tensorgym args...` with stdout and stderr going to `log`.
pid_t spawn_cli(std::vector<std::string> args, const std::string& log) {
  args.insert(args.begin(), kBinary);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, kBinary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// The state letter of /proc/PID/stat (R running, S sleeping, ...); 0 when gone.
char process_state(pid_t pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? 0 : stat[paren + 2];
}

// The live children of `parent` whose command line contains `word`.
std::vector<pid_t> children_running(pid_t parent, const std::string& word) {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  if (!proc) return out;
  while (dirent* d = ::readdir(proc)) {
    const pid_t pid = pid_t(std::atoi(d->d_name));
    if (pid <= 0) continue;
    std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + paren + 1, " %c %d", &state, &ppid) != 2 || ppid != parent || state == 'Z') continue;
    std::string cmdline = read_file("/proc/" + std::to_string(pid) + "/cmdline");
    for (char& c : cmdline)
      if (c == '\0') c = ' ';
    if (cmdline.find(word) != std::string::npos) out.push_back(pid);
  }
  ::closedir(proc);
  return out;
}

// `n` jobs with random legal schedules over the small benchmarks of ops-v0, made by
// `tensorgym batch --make-jobs` (so that the tests use what users use).
std::vector<client::BatchJob> make_jobs(int per_benchmark, uint64_t seed, const std::string& observe,
                                        const std::string& path) {
  auto made = run(kBinary + " batch --make-jobs --suite ops-v0 --limit 8 --schedules random:" +
                  std::to_string(per_benchmark) + " --seed " + std::to_string(seed) + " --observe " + observe + " > " +
                  path);
  EXPECT_EQ(made.first, 0) << made.second;
  Expected<std::vector<client::JobLine>> lines = client::read_job_file(path);
  EXPECT_TRUE(lines.ok()) << lines.status().to_string();
  std::vector<client::BatchJob> jobs;
  if (!lines.ok()) return jobs;
  for (client::JobLine& l : *lines) {
    EXPECT_TRUE(l.error.ok()) << l.error.to_string();
    jobs.push_back(std::move(l.job));
  }
  return jobs;
}

std::string values_of(const client::ResultLine& r) {
  return r.error + " " + r.observations_json + " " + r.rewards_json;
}

// `n` distinct jobs that measure gmm-1 (compile and time it in a worker), each timed
// run lasting at least min_repeat_ms.
std::vector<client::BatchJob> measuring_jobs(int n, std::vector<std::string> observations, int min_repeat_ms) {
  std::vector<client::BatchJob> jobs;
  for (int i = 0; i < n; ++i) {
    client::BatchJob m;
    m.benchmark = "benchmark://ops-v0/gmm-1";
    m.actions = "split(C.i, " + std::to_string(2 << (i % 4)) + ", io, ii)\nsplit(C.j, " + std::to_string(2 << (i / 4)) +
                ", jo, ji)\n";
    m.observations = observations;
    m.parameters = {{"runner.repeat", "1"}, {"runner.min_repeat_ms", std::to_string(min_repeat_ms)}};
    m.key = client::job_content_key(m);
    jobs.push_back(std::move(m));
  }
  return jobs;
}

// The observations and rewards of each job, computed in this process without faults
// (canonical JSON, as the journal's lines read back).
std::map<std::string, std::string> reference_values(const std::vector<client::BatchJob>& jobs) {
  auto context = std::make_shared<EnvContext>();
  std::map<std::string, std::string> out;
  for (const client::BatchJob& job : jobs) {
    proto::EvaluateJob wire;
    client::job_to_proto(job, &wire);
    proto::JobResult r = service::run_evaluate_job(wire, context, service::EvaluateLimits());
    EXPECT_EQ(r.error(), proto::JOB_OK) << job.key << ": " << r.error_message();
    Expected<client::ResultLine> line =
        client::parse_result_line(client::result_to_json(client::result_from_proto(wire, r)));
    EXPECT_TRUE(line.ok());
    if (line.ok()) out[job.key] = values_of(*line);
  }
  return out;
}

// Reads a journal: the result lines by key, failing on a line that repeats a key.
std::map<std::string, client::ResultLine> read_journal(const std::string& path) {
  std::map<std::string, client::ResultLine> out;
  int n = 0;
  for (const std::string& line : lines_of(read_file(path))) {
    ++n;
    Expected<client::ResultLine> r = client::parse_result_line(line);
    EXPECT_TRUE(r.ok()) << path << ":" << n << ": " << line;
    if (!r.ok()) continue;
    EXPECT_TRUE(out.emplace(r->key, *r).second) << "a second result for " << r->key << " at " << path << ":" << n;
  }
  return out;
}

// Each job has exactly one result, OK, with the reference's values.
void expect_complete(const std::map<std::string, client::ResultLine>& journal, const std::vector<client::BatchJob>& jobs,
                     const std::map<std::string, std::string>& reference) {
  EXPECT_EQ(journal.size(), jobs.size());
  int missing = 0, wrong = 0;
  for (const client::BatchJob& job : jobs) {
    auto it = journal.find(job.key);
    if (it == journal.end()) {
      if (++missing <= 3) ADD_FAILURE() << "no result for " << job.key;
      continue;
    }
    EXPECT_EQ(it->second.error, "OK") << job.key << ": " << it->second.message;
    auto ref = reference.find(job.key);
    if (ref != reference.end() && values_of(it->second) != ref->second)
      if (++wrong <= 3) ADD_FAILURE() << job.key << ": " << values_of(it->second) << " != reference " << ref->second;
  }
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(wrong, 0);
}

size_t lines_in(const std::string& path) {
  const std::string text = read_file(path);
  return size_t(std::count(text.begin(), text.end(), '\n'));
}

// ---- job files and the journal, in-process ------------------------------------------

// The key is a hash of the job's fields in a fixed encoding: journals written by an
// earlier build resume under the same keys.
TEST(Batch, JobContentKeyIsStableAcrossBuilds) {
  client::BatchJob job;
  job.benchmark = "benchmark://ops-v0/gmm-1";
  job.actions = "split 0 1 4";
  job.observations = {"flops"};
  job.parameters = {{"seed", "7"}};
  job.timeout_s = 2.5;
  EXPECT_EQ(client::job_content_key(job), "eebd60ae076d30b09d14c7b489dc7144");
}

TEST(Batch, ResultLinesAreJsonInFieldOrder) {
  client::BatchResult r;
  r.key = "k\"1";
  r.error = "RUNTIME_CRASH";
  r.message = std::string("bad byte \xff, tab\t");
  r.benchmark = "benchmark://ops-v0/gmm-1";
  r.observations = {{"est_cycles", Event(12.5)}, {"mask", Event(Int64Tensor{{2, 2}, {1, 0, 0, 1}})}};
  r.rewards = {{"runtime", std::nan("")}, {"gflops", 3.0}};
  r.queue_ms = 1.25;
  r.compile_ms = std::numeric_limits<double>::infinity();
  r.slot = 2;
  r.worker_pid = 4242;
  r.attempts = 3;
  r.provenance_json = "{\"workerPid\": 4242, \"host\": \"h\"}";
  const std::string line = client::result_to_json(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(line);  // valid JSON, even with the bad byte
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"key", "error", "message", "benchmark", "observations", "rewards",
                                            "queue_ms", "compile_ms", "run_ms", "endpoint", "instance", "slot",
                                            "worker_pid", "attempts", "provenance"}));
  EXPECT_EQ(j["key"], "k\"1");
  EXPECT_EQ(j["observations"]["est_cycles"], 12.5);
  EXPECT_EQ(j["observations"]["mask"], nlohmann::ordered_json::parse("[[1, 0], [0, 1]]"));
  EXPECT_TRUE(j["rewards"]["runtime"].is_null());  // JSON has no NaN
  EXPECT_EQ(j["rewards"]["gflops"], 3.0);
  EXPECT_EQ(j["queue_ms"], 1.25);
  EXPECT_TRUE(j["compile_ms"].is_null());
  EXPECT_EQ(j["worker_pid"], 4242);
  EXPECT_EQ(j["provenance"]["workerPid"], 4242);  // nested as an object, not as a string

  Expected<client::ResultLine> back = client::parse_result_line(line);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->key, "k\"1");
  EXPECT_EQ(back->error, "RUNTIME_CRASH");
  EXPECT_EQ(back->attempts, 3);
  // Canonical: keys sorted, so the same values print the same whatever their order.
  EXPECT_EQ(back->rewards_json, "{\"gflops\":3.0,\"runtime\":null}");
  EXPECT_FALSE(client::parse_result_line("[1, 2]").ok());
  EXPECT_FALSE(client::parse_result_line("{\"key\": 3}").ok());
  EXPECT_FALSE(client::parse_result_line("{\"key\": \"a\"").ok());
}

TEST(Batch, JobLinesAreKeyedByContentAndBadLinesSayWhere) {
  client::BatchJob a;
  a.benchmark = "benchmark://ops-v0/gmm-1";
  a.actions = "split(C.i, 4, io, ii)\n";
  a.observations = {"est_cycles"};
  client::BatchJob b = a;
  b.actions = "split(C.i, 8, io, ii)\n";
  EXPECT_EQ(client::job_content_key(a), client::job_content_key(a));
  EXPECT_NE(client::job_content_key(a), client::job_content_key(b));
  EXPECT_EQ(client::job_content_key(a).size(), 32u);

  const std::string path = temp_path("keys.jsonl");
  write_file(path, client::job_to_json(a) + "\n\n{\"benchmark\": 3}\n{\"key\": \"mine\", \"benchmark\": \"x\"}\n"
                                            "{\"observations\": [\"flops\"]}\n{\"bogus\": 1, \"benchmark\": \"x\"}\n");
  Expected<std::vector<client::JobLine>> lines = client::read_job_file(path);
  ASSERT_TRUE(lines.ok());
  ASSERT_EQ(lines->size(), 5u);  // the blank line is skipped
  EXPECT_TRUE((*lines)[0].error.ok());
  EXPECT_EQ((*lines)[0].job.key, client::job_content_key(a));
  EXPECT_EQ((*lines)[1].line, 3);
  EXPECT_CONTAINS((*lines)[1].error.message(), path + ":3: not a job");
  EXPECT_EQ((*lines)[1].job.key.size(), 32u);  // still keyed, for its error result
  EXPECT_EQ((*lines)[2].job.key, "mine");
  EXPECT_CONTAINS((*lines)[3].error.message(), "needs \"benchmark\"");
  EXPECT_CONTAINS((*lines)[4].error.message(), "bogus");
  EXPECT_FALSE(client::read_job_file(temp_path("none.jsonl")).ok());
}

TEST(Batch, JournalRefusesToOverwriteCutsATornLineAndRejectsBadMiddleLines) {
  const std::string path = temp_path("journal.jsonl");
  {
    auto j = client::Journal::open(path, false);
    ASSERT_TRUE(j.ok()) << j.status().to_string();
    for (const char* key : {"a", "b", "c"}) {
      client::BatchResult r;
      r.key = key;
      (*j)->append(client::result_to_json(r));
    }
    ASSERT_TRUE((*j)->close().ok());
    EXPECT_EQ((*j)->durable(), 3);
  }
  auto again = client::Journal::open(path, false);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  EXPECT_CONTAINS(again.status().message(), "--resume");

  const std::string good = read_file(path);
  write_file(path, good + "{\"key\": \"d\", \"error\": \"O");  // a write cut short
  {
    auto j = client::Journal::open(path, true);
    ASSERT_TRUE(j.ok()) << j.status().to_string();
    EXPECT_EQ((*j)->keys(), (std::unordered_set<std::string>{"a", "b", "c"}));
    EXPECT_EQ((*j)->torn_line(), "{\"key\": \"d\", \"error\": \"O");
    client::BatchResult r;
    r.key = "d";
    (*j)->append(client::result_to_json(r));
    ASSERT_TRUE((*j)->close().ok());
  }
  std::map<std::string, client::ResultLine> lines = read_journal(path);
  EXPECT_EQ(lines.size(), 4u);

  auto nowhere = client::Journal::open(temp_path("no-such-dir") + "/journal.jsonl", false);
  ASSERT_FALSE(nowhere.ok());
  EXPECT_EQ(nowhere.status().code(), StatusCode::kNotFound);
  auto a_dir = client::Journal::open(::testing::TempDir(), false);
  ASSERT_FALSE(a_dir.ok());
  EXPECT_EQ(a_dir.status().code(), StatusCode::kInvalidArgument);

  write_file(path, "{\"key\": \"a\"}\nnot json\n{\"key\": \"b\"}\n");
  auto bad = client::Journal::open(path, true);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  EXPECT_CONTAINS(bad.status().message(), path + ":2");
}

// ---- faults ---------------------------------------------------------------------------

// Jobs across three local services; one service is killed with SIGKILL mid-batch and a
// measurement worker of another too. Every job ends with exactly one result in the
// journal, and the deterministic values equal a run without faults.
TEST(Batch, SurvivesAKilledServiceAndAKilledWorker) {
  std::vector<client::BatchJob> jobs = make_jobs(59, 1, "est_cycles,flops", temp_path("many.jobs"));
  ASSERT_EQ(jobs.size(), 472u);
  // Some jobs that measure, so that a worker has work to lose.
  const std::vector<client::BatchJob> measured = measuring_jobs(28, {"est_cycles", "runtime"}, 200);
  for (size_t i = 0; i < measured.size(); ++i)
    jobs.insert(jobs.begin() + std::ptrdiff_t(std::min(jobs.size(), 15 * i + 20)), measured[i]);
  const std::map<std::string, std::string> reference = [&] {
    std::vector<client::BatchJob> deterministic;
    for (const client::BatchJob& j : jobs)
      if (!client::job_measures(j)) deterministic.push_back(j);
    return reference_values(deterministic);
  }();

  client::BatchOptions o;
  o.local_instances = 3;
  o.server_binary = kBinary;
  o.server_args = kServeArgs;
  o.max_in_flight = 4;  // few in flight each: a killed service leaves jobs to re-route
  Expected<std::unique_ptr<client::BatchEvaluator>> made = client::BatchEvaluator::create(o);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  client::BatchEvaluator& batch = **made;
  ASSERT_TRUE(batch.wait_ready(3, 60));
  const std::vector<pid_t> pids = batch.local_pids();
  ASSERT_EQ(pids.size(), 3u);

  const std::string journal_path = temp_path("many.jsonl");
  auto journal = client::Journal::open(journal_path, false);
  ASSERT_TRUE(journal.ok());
  std::atomic<int64_t> results{0};
  std::atomic<bool> second_measured{false};  // the second service's worker is up and measuring
  const std::string second = batch.endpoints()[1].name;
  client::BatchSummary summary;
  std::thread runner([&] {
    summary = batch.run(jobs, [&](const client::BatchResult& r) {
      (*journal)->append(client::result_to_json(r));
      if (r.endpoint == second && r.ok() && r.observation("runtime")) second_measured = true;
      ++results;
    });
  });
  auto wait_for = [&](int64_t n) {
    const auto until = Clock::now() + std::chrono::seconds(60);
    while (results.load() < n && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  };
  wait_for(int64_t(jobs.size()) / 4);
  ASSERT_EQ(::kill(pids[0], SIGKILL), 0);
  // The worker is killed while it measures (running, not waiting for a job), so that a
  // job is lost with it.
  pid_t busy_worker = 0;
  for (const auto until = Clock::now() + std::chrono::seconds(30); !busy_worker && Clock::now() < until;) {
    for (pid_t w : second_measured ? children_running(pids[1], "worker") : std::vector<pid_t>())
      if (process_state(w) == 'R') busy_worker = w;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  ASSERT_GT(busy_worker, 0) << "no measurement worker of service " << pids[1] << " was seen working";
  ASSERT_EQ(::kill(busy_worker, SIGKILL), 0);
  runner.join();
  ASSERT_TRUE((*journal)->close().ok());

  EXPECT_EQ(summary.results, int64_t(jobs.size()));
  EXPECT_TRUE(summary.unfinished.empty());
  EXPECT_GT(summary.retried, 0);  // the killed service had jobs in flight
  std::map<std::string, client::ResultLine> lines = read_journal(journal_path);
  ASSERT_EQ(jobs.size(), 500u);
  expect_complete(lines, jobs, reference);
  int measured_again = 0;  // jobs that lost their worker, and were measured elsewhere
  for (const client::BatchJob& j : jobs) {
    if (client::job_measures(j) && lines.count(j.key)) {
      EXPECT_EQ(lines[j.key].error, "OK") << lines[j.key].message;
      measured_again += lines[j.key].attempts > 1;
    }
  }
  EXPECT_GE(measured_again, 1);
  const std::vector<client::EndpointReport> reports = batch.endpoints();
  EXPECT_GE(reports[0].streams_lost, 1);
  EXPECT_GE(reports[0].restarts, 1);  // local services that die are started again
}

// A service stopped with SIGTERM mid-batch (a rolling update, a drained node) answers
// its queued jobs UNAVAILABLE and exits; they run on the other service, each once.
TEST(Batch, AServiceStoppedGracefullyHandsItsJobsOver) {
  std::vector<std::unique_ptr<client::ManagedServer>> servers;
  client::BatchOptions o;
  for (int i = 0; i < 2; ++i) {
    Expected<std::unique_ptr<client::ManagedServer>> s = client::ManagedServer::start(kBinary, kServeArgs, 60);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    o.endpoints.push_back((*s)->address());
    servers.push_back(std::move(*s));
  }
  o.max_in_flight = 64;  // many queued on each, so that the stopped one has some to hand over
  Expected<std::unique_ptr<client::BatchEvaluator>> made = client::BatchEvaluator::create(o);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  client::BatchEvaluator& batch = **made;
  ASSERT_TRUE(batch.wait_ready(2, 60));
  std::vector<client::BatchJob> jobs = make_jobs(40, 8, "est_cycles", temp_path("sigterm.jobs"));
  const std::map<std::string, std::string> reference = reference_values(jobs);
  // Jobs that measure, spread over the first ones: each keeps a slot busy for tens of
  // milliseconds, so the stopped service still has jobs waiting when the signal lands
  // (est_cycles jobs alone can all be answered before it does).
  const std::vector<client::BatchJob> measured = measuring_jobs(16, {"est_cycles", "runtime"}, 30);
  for (size_t i = 0; i < measured.size(); ++i) jobs.insert(jobs.begin() + std::ptrdiff_t(8 * i), measured[i]);
  const std::string journal_path = temp_path("sigterm.jsonl");
  auto journal = client::Journal::open(journal_path, false);
  ASSERT_TRUE(journal.ok());
  std::atomic<int64_t> results{0};
  client::BatchSummary summary;
  std::thread runner([&] {
    summary = batch.run(jobs, [&](const client::BatchResult& r) {
      (*journal)->append(client::result_to_json(r));
      ++results;
    });
  });
  const auto until = Clock::now() + std::chrono::seconds(60);
  while (results.load() < int64_t(jobs.size()) / 5 && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  ASSERT_EQ(::kill(servers[0]->pid(), SIGTERM), 0);
  runner.join();
  ASSERT_TRUE((*journal)->close().ok());
  EXPECT_EQ(summary.results, int64_t(jobs.size()));
  EXPECT_GT(summary.retried, 0);  // it had queued jobs, answered UNAVAILABLE, run elsewhere
  expect_complete(read_journal(journal_path), jobs, reference);
  // It ended our stream once its jobs were answered, so it did not wait out its grace.
  const auto exit_by = Clock::now() + std::chrono::seconds(5);
  while (servers[0]->alive() && Clock::now() < exit_by) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(servers[0]->alive());
  const std::vector<client::EndpointReport> reports = batch.endpoints();
  EXPECT_NE(reports[0].state, "ready");
  EXPECT_EQ(reports[0].quarantines, 0);  // going away is not being sick
  EXPECT_EQ(reports[1].state, "ready");
}

// A service whose measurement workers keep dying is quarantined (no new jobs), and the
// jobs it failed run elsewhere.
TEST(Batch, QuarantinesAServiceWhoseWorkersKeepDying) {
  const std::vector<client::BatchJob> jobs = measuring_jobs(12, {"runtime"}, 20);
  client::BatchOptions o;
  o.local_instances = 2;
  o.server_binary = kBinary;
  o.server_args = kServeArgs;
  o.quarantine_s = 30;  // stays out for the rest of the test
  Expected<std::unique_ptr<client::BatchEvaluator>> made = client::BatchEvaluator::create(o);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  client::BatchEvaluator& batch = **made;
  ASSERT_TRUE(batch.wait_ready(2, 60));
  const pid_t sick = batch.local_pids()[1];
  std::atomic<bool> done{false};
  std::thread killer([&] {  // every worker the sick service starts dies at once
    while (!done) {
      for (pid_t w : children_running(sick, "worker")) ::kill(w, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  client::BatchSummary summary;
  std::vector<client::BatchResult> results = batch.evaluate(jobs, &summary);
  done = true;
  killer.join();
  for (const client::BatchResult& r : results) {
    EXPECT_TRUE(r.ok()) << r.error << ": " << r.message;
    EXPECT_NE(r.endpoint, summary.endpoints[1].name);
  }
  EXPECT_GE(summary.endpoints[1].quarantines, 1);
  EXPECT_EQ(summary.endpoints[1].state, "quarantined");
  EXPECT_CONTAINS(summary.endpoints[1].last_error, "WORKER_LOST");
  EXPECT_EQ(summary.endpoints[0].quarantines, 0);
}

// The CLI killed with SIGKILL mid-run, then run again with --resume: every job once.
TEST(Batch, KilledCliResumesWithoutLossOrDuplicates) {
  const std::string jobs_path = temp_path("resume.jobs");
  std::vector<client::BatchJob> jobs = make_jobs(60, 2, "est_cycles", jobs_path);
  ASSERT_EQ(jobs.size(), 480u);
  const std::map<std::string, std::string> reference = reference_values(jobs);
  const std::string out = temp_path("resume.jsonl");
  const std::string log = temp_path("resume.log");
  pid_t cli = spawn_cli({"batch", "--jobs", jobs_path, "--out", out, "--local", "2", "--concurrency", "1"}, log);
  ASSERT_GT(cli, 0);
  const auto until = Clock::now() + std::chrono::seconds(60);
  // Killed as soon as results reach the journal: jobs are fast, the batch is not long.
  while (lines_in(out) < 20 && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const std::vector<pid_t> services = children_running(cli, "serve");
  EXPECT_EQ(services.size(), 2u);
  ASSERT_EQ(::kill(cli, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(cli, &status, 0), cli);
  const size_t before = lines_in(out);
  // Its local services die with it (they are not our children: poll /proc).
  for (pid_t s : services) {
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (process_state(s) != 0 && process_state(s) != 'Z' && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_TRUE(process_state(s) == 0 || process_state(s) == 'Z') << "service " << s << " outlived the batch";
  }
  ASSERT_LT(before, jobs.size()) << "the batch finished before it could be killed";

  auto again = run(kBinary + " batch --jobs " + jobs_path + " --out " + out + " --local 2");
  EXPECT_EQ(again.first, 1) << again.second;  // the journal holds results: --resume or remove it
  EXPECT_CONTAINS(again.second, "--resume");
  auto resumed = run(kBinary + " batch --jobs " + jobs_path + " --out " + out + " --local 2 --resume");
  ASSERT_EQ(resumed.first, 0) << resumed.second;
  EXPECT_CONTAINS(resumed.second, "already in the journal");
  expect_complete(read_journal(out), jobs, reference);
}

// Malformed lines, unknown benchmarks and invalid actions get clear per-job errors; the
// rest complete.
TEST(Batch, BadJobsGetClearErrorsAndTheRestComplete) {
  const std::string jobs_path = temp_path("bad.jobs");
  std::vector<client::BatchJob> good = make_jobs(3, 3, "est_cycles,loop_nest", jobs_path);
  std::string text = read_file(jobs_path);
  text += "{\"key\": \"not-json\", \"benchmark\": \n";
  text += "{\"key\": \"unknown-field\", \"benchmark\": \"benchmark://ops-v0/gmm-1\", \"observation\": [\"flops\"]}\n";
  text += "{\"key\": \"no-benchmark\", \"observations\": [\"flops\"]}\n";
  text += "{\"key\": \"unknown-benchmark\", \"benchmark\": \"benchmark://ops-v0/gmm-99\", \"observations\": [\"flops\"]}\n";
  text += "{\"key\": \"unknown-dataset\", \"benchmark\": \"benchmark://nope-v0/x\", \"observations\": [\"flops\"]}\n";
  text += "{\"key\": \"bad-action\", \"benchmark\": \"benchmark://ops-v0/gmm-1\", \"actions\": \"split(C.q, 4, a, b)\", "
          "\"observations\": [\"flops\"]}\n";
  text += "{\"key\": \"unparsable-action\", \"benchmark\": \"benchmark://ops-v0/gmm-1\", \"actions\": \"split(((\", "
          "\"observations\": [\"flops\"]}\n";
  text += "{\"key\": \"unknown-observation\", \"benchmark\": \"benchmark://ops-v0/gmm-1\", \"observations\": [\"nope\"]}\n";
  write_file(jobs_path, text);
  const std::string out = temp_path("bad.jsonl");
  auto r = run(kBinary + " batch --jobs " + jobs_path + " --out " + out + " --local 1");
  ASSERT_EQ(r.first, 0) << r.second;
  EXPECT_CONTAINS(r.second, "MALFORMED: ");
  EXPECT_CONTAINS(r.second, "NOT_FOUND: 2");
  EXPECT_CONTAINS(r.second, "INVALID_ACTION: 2");

  std::map<std::string, client::ResultLine> lines = read_journal(out);
  EXPECT_EQ(lines.size(), good.size() + 8);
  for (const client::BatchJob& j : good) EXPECT_EQ(lines[j.key].error, "OK") << lines[j.key].message;
  // A line that is not JSON is keyed by its text.
  int malformed_lines = 0;
  for (const auto& [key, line] : lines)
    if (line.message.find(jobs_path + ":" + std::to_string(good.size() + 1) + ": not a job") != std::string::npos)
      ++malformed_lines;
  EXPECT_EQ(malformed_lines, 1);
  EXPECT_EQ(lines["unknown-field"].error, "MALFORMED");
  EXPECT_CONTAINS(lines["unknown-field"].message, "observation");
  EXPECT_CONTAINS(lines["no-benchmark"].message, "needs \"benchmark\"");
  EXPECT_EQ(lines["unknown-benchmark"].error, "NOT_FOUND");
  EXPECT_CONTAINS(lines["unknown-benchmark"].message, "gmm-99");
  EXPECT_EQ(lines["unknown-dataset"].error, "NOT_FOUND");
  EXPECT_CONTAINS(lines["unknown-dataset"].message, "nope-v0");
  EXPECT_EQ(lines["bad-action"].error, "INVALID_ACTION");
  EXPECT_CONTAINS(lines["bad-action"].message, "split(C.q, 4, a, b)");
  EXPECT_EQ(lines["unparsable-action"].error, "INVALID_ACTION");
  EXPECT_EQ(lines["unknown-observation"].error, "MALFORMED");
  EXPECT_CONTAINS(lines["unknown-observation"].message, "unknown observation 'nope'");
}

// A job names its target as a reset does: on cuda the GPU model rewards it and its PTX
// is an observation; a target the service does not have is MALFORMED. Keys of jobs
// without a target are as before (JobContentKeyIsStableAcrossBuilds).
TEST(Batch, JobsNameTheirTarget) {
  client::BatchJob gpu;
  gpu.benchmark = "benchmark://ops-v0/gmm-1";
  gpu.actions = "split(C.i, 16, io, ii)\nsplit(C.j, 32, jo, ji)\nreorder(C, io, jo, ii, ji, k)\n"
                "bind(C.io, blockIdx.y)\nbind(C.jo, blockIdx.x)\nbind(C.ii, threadIdx.y)\nbind(C.ji, threadIdx.x)\n";
  gpu.observations = {"est_gpu_time", "ptx"};
  gpu.rewards = {"est_gpu_time"};
  gpu.target = "cuda";
  client::BatchJob cpu = gpu;
  cpu.target.clear();
  EXPECT_NE(client::job_content_key(gpu), client::job_content_key(cpu));
  gpu.key = "gpu";
  cpu.key = "cpu-binds";
  client::BatchJob tpu = gpu;
  tpu.key = "tpu";
  tpu.target = "tpu";
  const std::string jobs_path = temp_path("targets.jobs");
  write_file(jobs_path, client::job_to_json(gpu) + "\n" + client::job_to_json(cpu) + "\n" + client::job_to_json(tpu) +
                            "\n");
  const std::string out = temp_path("targets.jsonl");
  auto r = run(kBinary + " batch --jobs " + jobs_path + " --out " + out + " --local 1");
  ASSERT_EQ(r.first, 0) << r.second;
  std::map<std::string, client::ResultLine> lines = read_journal(out);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines["gpu"].error, "OK") << lines["gpu"].message;
  EXPECT_CONTAINS(lines["gpu"].observations_json, ".entry");
  EXPECT_CONTAINS(lines["gpu"].rewards_json, "est_gpu_time");
  EXPECT_EQ(lines["cpu-binds"].error, "INVALID_ACTION");
  EXPECT_CONTAINS(lines["cpu-binds"].message, "bind is a primitive of gpu and accelerator schedules");
  EXPECT_EQ(lines["tpu"].error, "MALFORMED");
  EXPECT_CONTAINS(lines["tpu"].message, "unknown target 'tpu'");
}

// A torn last line in the journal (a crash mid-write) is cut off on --resume, and its
// job runs again.
TEST(Batch, ResumeIgnoresATornLastLine) {
  const std::string jobs_path = temp_path("torn.jobs");
  std::vector<client::BatchJob> jobs = make_jobs(2, 4, "est_cycles", jobs_path);
  const std::string out = temp_path("torn.jsonl");
  auto first = run(kBinary + " batch --jobs " + jobs_path + " --out " + out + " --local 1");
  ASSERT_EQ(first.first, 0) << first.second;
  std::vector<std::string> lines = lines_of(read_file(out));
  ASSERT_EQ(lines.size(), jobs.size());
  // The last two results were lost in a crash, the last one halfway through its line.
  std::string text;
  for (size_t i = 0; i + 2 < lines.size(); ++i) text += lines[i] + "\n";
  text += lines.back().substr(0, lines.back().size() / 2);
  write_file(out, text);
  auto resumed = run(kBinary + " batch --jobs " + jobs_path + " --out " + out + " --local 1 --resume");
  ASSERT_EQ(resumed.first, 0) << resumed.second;
  EXPECT_CONTAINS(resumed.second, "torn last line");
  EXPECT_CONTAINS(resumed.second, std::to_string(jobs.size() - 2) + " already in the journal");
  expect_complete(read_journal(out), jobs, {});
}

// Jobs waiting for the one measurement worker wait longer than their deadline, and
// still succeed: time in a queue never counts. Each result reports its times.
TEST(Batch, QueueTimeDoesNotCountAgainstTheDeadline) {
  Expected<std::unique_ptr<client::ManagedServer>> server = client::ManagedServer::start(kBinary, kServeArgs, 60);
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  client::BatchOptions o;
  o.endpoints = {(*server)->address()};
  o.max_in_flight = 64;  // all at once: they queue on the server
  Expected<std::unique_ptr<client::BatchEvaluator>> batch = client::BatchEvaluator::create(o);
  ASSERT_TRUE(batch.ok()) << batch.status().to_string();
  std::vector<client::BatchJob> jobs = measuring_jobs(8, {"runtime"}, 300);
  for (client::BatchJob& j : jobs) {
    j.timeout_s = 2;
    j.key = client::job_content_key(j);
  }
  std::vector<client::BatchResult> results = (*batch)->evaluate(jobs);
  double longest_queue_ms = 0;
  for (const client::BatchResult& r : results) {
    EXPECT_TRUE(r.ok()) << r.error << ": " << r.message;
    EXPECT_GT(r.compile_ms, 0);
    EXPECT_GE(r.run_ms, 300);  // the timed run's minimum, at least
    EXPECT_EQ(r.attempts, 1);
    longest_queue_ms = std::max(longest_queue_ms, r.queue_ms);
  }
  EXPECT_GT(longest_queue_ms, 2000) << "no job waited longer than its deadline; the test proves nothing";
}

// A job whose run passes its deadline fails alone, as TIMEOUT, and is not sent again
// (its worker is replaced); the jobs around it are unaffected.
TEST(Batch, ATimedOutJobFailsAloneAndIsNotSentAgain) {
  Expected<std::unique_ptr<client::ManagedServer>> server = client::ManagedServer::start(kBinary, kServeArgs, 60);
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  client::BatchOptions o;
  o.endpoints = {(*server)->address()};
  Expected<std::unique_ptr<client::BatchEvaluator>> batch = client::BatchEvaluator::create(o);
  ASSERT_TRUE(batch.ok()) << batch.status().to_string();
  std::vector<client::BatchJob> jobs = measuring_jobs(5, {"runtime"}, 20);
  jobs[2].parameters["runner.min_repeat_ms"] = "5000";  // a timed run of 5 s, against a 1 s deadline
  jobs[2].timeout_s = 1;
  jobs[2].key = client::job_content_key(jobs[2]);
  client::BatchSummary summary;
  std::vector<client::BatchResult> results = (*batch)->evaluate(jobs, &summary);
  ASSERT_EQ(results.size(), jobs.size());
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(results[i].attempts, 1) << i;
    if (i == 2) {
      EXPECT_EQ(results[i].error, "TIMEOUT") << results[i].message;
    } else {
      EXPECT_TRUE(results[i].ok()) << i << ": " << results[i].error << ": " << results[i].message;
    }
  }
  EXPECT_EQ(summary.by_error["TIMEOUT"], 1);
  EXPECT_EQ(summary.retried, 0);
}

// A service that queues few jobs per stream is never sent more than it takes, so no
// job is refused and sent again.
TEST(Batch, SendsNoMoreThanTheServiceQueues) {
  std::vector<std::string> args = kServeArgs;
  args.insert(args.end(), {"--max-queued-jobs", "3"});
  Expected<std::unique_ptr<client::ManagedServer>> server = client::ManagedServer::start(kBinary, args, 60);
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  client::BatchOptions o;
  o.endpoints = {(*server)->address()};
  o.max_in_flight = 64;
  Expected<std::unique_ptr<client::BatchEvaluator>> batch = client::BatchEvaluator::create(o);
  ASSERT_TRUE(batch.ok()) << batch.status().to_string();
  const std::vector<client::BatchJob> jobs = make_jobs(10, 6, "est_cycles", temp_path("small_queue.jobs"));
  client::BatchSummary summary;
  std::vector<client::BatchResult> results = (*batch)->evaluate(jobs, &summary);
  EXPECT_EQ(summary.ok, int64_t(jobs.size()));
  EXPECT_EQ(summary.retried, 0);
}

// A service that does not accept the client's token refuses the batch at once, and says
// why, instead of being retried until the evaluator gives up.
TEST(Batch, AWrongTokenFailsFastAndSaysWhy) {
  const std::string token = temp_path("token");
  write_file(token, "right-token-0123456789\n");
  ASSERT_EQ(::chmod(token.c_str(), 0600), 0);  // a token file others can read is refused
  std::vector<std::string> args = kServeArgs;
  args.insert(args.end(), {"--auth-token-file", token});
  Expected<std::unique_ptr<client::ManagedServer>> server = client::ManagedServer::start(kBinary, args, 60);
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  const std::string jobs = temp_path("token.jobs");
  make_jobs(1, 7, "est_cycles", jobs);
  const std::string cmd = kBinary + " batch --jobs " + jobs + " --endpoints " + (*server)->address() + " --quiet";
  const auto start = Clock::now();
  auto refused = run(cmd + " --out " + temp_path("token_refused.jsonl"));
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 30);  // not the 120 s give-up
  EXPECT_EQ(refused.first, 1) << refused.second;
  EXPECT_CONTAINS(refused.second, "every endpoint refused the batch");
  EXPECT_CONTAINS(refused.second, "bearer token");
  EXPECT_CONTAINS(refused.second, "[UNAUTHENTICATED]");
  auto accepted = run(cmd + " --out " + temp_path("token_ok.jsonl") + " --auth-token-file " + token);
  EXPECT_EQ(accepted.first, 0) << accepted.second;
  EXPECT_CONTAINS(accepted.second, "8 ok");
}

// Local services that exit at start (bad flags) are given up after a few tries, and the
// batch stops at once instead of waiting for give_up_s.
TEST(Batch, LocalServicesThatCannotStartAreGivenUp) {
  client::BatchOptions o;
  o.local_instances = 2;
  o.server_binary = kBinary;
  o.server_args = {"--no-such-flag"};
  o.startup_timeout_s = 30;
  Expected<std::unique_ptr<client::BatchEvaluator>> batch = client::BatchEvaluator::create(o);
  ASSERT_TRUE(batch.ok()) << batch.status().to_string();
  const auto start = Clock::now();
  client::BatchSummary summary;
  std::vector<client::BatchResult> results = (*batch)->evaluate(measuring_jobs(2, {"flops"}, 1), &summary);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 30);  // not the 120 s give-up
  EXPECT_EQ(summary.unfinished.size(), 2u);
  for (const client::BatchResult& r : results) {
    EXPECT_EQ(r.error, "UNAVAILABLE");
    EXPECT_CONTAINS(r.message, "before it was ready");
  }
  for (const client::EndpointReport& e : summary.endpoints) {
    EXPECT_EQ(e.state, "refused");
    EXPECT_CONTAINS(e.last_error, "before it was ready");
    EXPECT_CONTAINS(e.last_error, "check server_args");
  }
}

// ---- endpoints and job files ----------------------------------------------------------

// A dns:/// endpoint resolves to one endpoint per address; a name that does not resolve
// is UNAVAILABLE and a malformed endpoint INVALID_ARGUMENT, before anything runs.
TEST(Batch, DnsEndpointsAndBadEndpoints) {
  Expected<std::unique_ptr<client::ManagedServer>> server = client::ManagedServer::start(kBinary, kServeArgs, 60);
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  client::BatchOptions o;
  // The same address twice, and the name resolved again every 10 ms: still one endpoint.
  o.endpoints = {"dns:///127.0.0.1:" + std::to_string((*server)->port()), (*server)->address()};
  o.resolve_period_s = 0.01;
  Expected<std::unique_ptr<client::BatchEvaluator>> batch = client::BatchEvaluator::create(o);
  ASSERT_TRUE(batch.ok()) << batch.status().to_string();
  std::vector<client::BatchJob> jobs(3);
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].benchmark = "benchmark://ops-v0/gmm-1";
    jobs[i].actions = "split(C.i, " + std::to_string(2 << i) + ", io, ii)";
    jobs[i].observations = {"est_cycles"};
  }
  client::BatchSummary summary;
  std::vector<client::BatchResult> results = (*batch)->evaluate(jobs, &summary);
  ASSERT_EQ(results.size(), 3u);
  for (const client::BatchResult& r : results) {
    EXPECT_TRUE(r.ok()) << r.error << ": " << r.message;
    EXPECT_EQ(r.endpoint, (*server)->address());
    EXPECT_NE(r.observation("est_cycles"), nullptr);
  }
  EXPECT_EQ(summary.ok, 3);
  EXPECT_EQ((*batch)->endpoints().size(), 1u);
  // Keys of the evaluator's own health checks are refused, not lost.
  client::BatchJob reserved = jobs[0];
  reserved.key = "__preflight__/1";
  std::vector<client::BatchResult> refused = (*batch)->evaluate({reserved});
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].error, "MALFORMED");
  EXPECT_CONTAINS(refused[0].message, "reserved");

  o.endpoints = {"dns:///no-such-host.invalid:50051"};
  auto unresolved = client::BatchEvaluator::create(o);
  ASSERT_FALSE(unresolved.ok());
  EXPECT_EQ(unresolved.status().code(), StatusCode::kUnavailable);
  o.endpoints = {"127.0.0.1"};
  auto malformed = client::BatchEvaluator::create(o);
  ASSERT_FALSE(malformed.ok());
  EXPECT_EQ(malformed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(malformed.status().message(), "host:port");
}

TEST(Batch, MakeJobsIsReproducibleAndSaysWhatIsWrong) {
  const std::string cmd = kBinary + " batch --make-jobs --suite ops-v0 --limit 3 --schedules random:4 --observe est_cycles";
  auto a = run(cmd + " --seed 7");
  auto b = run(cmd + " --seed 7");
  auto c = run(cmd + " --seed 8");
  ASSERT_EQ(a.first, 0) << a.second;
  EXPECT_EQ(a.second, b.second);
  EXPECT_NE(a.second, c.second);
  std::vector<std::string> lines = lines_of(a.second);
  ASSERT_EQ(lines.size(), 12u);
  std::set<std::string> benchmarks;
  for (const std::string& l : lines) {
    Expected<client::BatchJob> job = client::parse_job_line(l);
    ASSERT_TRUE(job.ok()) << l;
    EXPECT_EQ(job->key, client::job_content_key(*job));  // the key is the content hash
    benchmarks.insert(job->benchmark);
  }
  EXPECT_EQ(benchmarks.size(), 3u);

  auto bad_spec = run(kBinary + " batch --make-jobs --suite ops-v0 --schedules grid:3 --observe est_cycles");
  EXPECT_NE(bad_spec.first, 0);
  EXPECT_CONTAINS(bad_spec.second, "random:N");
  auto bad_suite = run(kBinary + " batch --make-jobs --suite nope-v0 --observe est_cycles");
  EXPECT_NE(bad_suite.first, 0);
  EXPECT_CONTAINS(bad_suite.second, "nope-v0");
  auto no_target = run(kBinary + " batch --jobs x --out y");
  EXPECT_NE(no_target.first, 0);
  EXPECT_CONTAINS(no_target.second, "--local");
}

}  // namespace
}  // namespace tensorgym
