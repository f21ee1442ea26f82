// `tensorgym suite`: the output of an ops-v0 run validates (every state replays, every
// row says so), a run cut short (--limit, or killed) and run again completes without
// redoing finished benchmarks, settings that differ from the directory's are refused,
// user errors say what is wrong, and graphs-v0 plans every graph with every planner.
// Small benchmarks, est_cycles-guided searches and a few trials keep it fast; the
// side-by-side timing is real but never asserted on.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "envs/episode_state.h"
#include "proto/episode_state_io.h"

namespace tensorgym {
namespace {

const std::string kBinary = std::string(TENSORGYM_BINARY_DIR) + "/bin/tensorgym";

std::string temp_dir(const std::string& name) {
  std::string d = ::testing::TempDir() + "/suite_test_" + std::to_string(getpid()) + "_" + name;
  std::filesystem::remove_all(d);
  return d;
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs a command line, its output into `log`; returns the exit status.
int run(const std::string& args, const std::string& log) {
  const int rc = std::system((kBinary + " " + args + " > " + log + " 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// results.csv's data rows, keyed by their first column; counts repeated keys.
std::map<std::string, std::string> rows_by_key(const std::string& csv, int* repeated) {
  std::map<std::string, std::string> rows;
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);  // header
  *repeated = 0;
  while (std::getline(in, line)) {
    const std::string key = line.substr(0, line.find(','));
    *repeated += rows.count(key) ? 1 : 0;
    rows[key] = line;
  }
  return rows;
}

const std::string kOps =
    "suite --suite ops-v0 --agent random --trials 6 --reward est_cycles --threads 1 --rounds 1 --seed 5 --quiet";

TEST(SuiteTest, OpsSuiteValidatesAndResumesWithoutRepeating) {
  const std::string out = temp_dir("ops"), log = out + ".log";
  // The first run stops after one benchmark, as an interrupted run would.
  ASSERT_EQ(run(kOps + " --benchmarks gmm-1,nrm-1 --limit 1 --out " + out, log), 0) << read(log);
  EXPECT_NE(read(log).find("1 left"), std::string::npos) << read(log);
  int repeated = 0;
  std::map<std::string, std::string> first = rows_by_key(read(out + "/results.csv"), &repeated);
  ASSERT_EQ(first.size(), 1u);
  const std::string gmm_row = first["benchmark://ops-v0/gmm-1"];
  ASSERT_FALSE(gmm_row.empty());
  EXPECT_NE(gmm_row.find(",yes,"), std::string::npos) << gmm_row;
  // A matmul has vendor kernels, measured side by side.
  EXPECT_TRUE(gmm_row.find(",OpenBLAS,") != std::string::npos || gmm_row.find(",oneDNN,") != std::string::npos)
      << gmm_row;

  // Run again: gmm-1 is skipped, nrm-1 runs.
  ASSERT_EQ(run(kOps + " --benchmarks gmm-1,nrm-1 --out " + out, log), 0) << read(log);
  const std::string second_log = read(log);
  EXPECT_NE(second_log.find("gmm-1: finished earlier, skipped"), std::string::npos) << second_log;
  EXPECT_NE(second_log.find("geomean"), std::string::npos) << second_log;
  std::map<std::string, std::string> all = rows_by_key(read(out + "/results.csv"), &repeated);
  EXPECT_EQ(repeated, 0);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all["benchmark://ops-v0/gmm-1"], gmm_row);  // not measured again
  EXPECT_NE(all["benchmark://ops-v0/nrm-1"].find(",yes,"), std::string::npos);

  // One state per benchmark, and `tensorgym validate` accepts them.
  Expected<std::vector<EpisodeState>> states = read_episode_states(out + "/states.jsonl");
  ASSERT_TRUE(states.ok()) << states.status().to_string();
  ASSERT_EQ(states->size(), 2u);
  EXPECT_EQ((*states)[0].benchmark, "benchmark://ops-v0/gmm-1");
  EXPECT_EQ((*states)[1].benchmark, "benchmark://ops-v0/nrm-1");
  EXPECT_EQ(run("validate " + out + "/states.jsonl", log), 0) << read(log);

  // Other settings in the same directory are refused, naming what differs.
  EXPECT_NE(run("suite --suite ops-v0 --agent beam --trials 6 --reward est_cycles --threads 1 --rounds 1 --seed 5"
                " --benchmarks gmm-1 --out " + out, log),
            0);
  EXPECT_NE(read(log).find("agent: random there, beam here"), std::string::npos) << read(log);
  std::filesystem::remove_all(out);
  std::filesystem::remove(log);
}

// The held-out shapes run as a suite of their own: their URIs in the rows and states,
// the suite's name in the settings.
TEST(SuiteTest, HeldOutSuiteRunsItsOwnBenchmarks) {
  const std::string out = temp_dir("heldout"), log = out + ".log";
  ASSERT_EQ(run("suite --suite ops-heldout-v0 --agent random --trials 4 --reward est_cycles --threads 1 --rounds 1 "
                "--seed 5 --quiet --benchmarks nrm-h1 --out " + out,
                log),
            0)
      << read(log);
  int repeated = 0;
  std::map<std::string, std::string> rows = rows_by_key(read(out + "/results.csv"), &repeated);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NE(rows["benchmark://ops-heldout-v0/nrm-h1"].find(",yes,"), std::string::npos) << read(out + "/results.csv");
  EXPECT_NE(read(out + "/suite.cfg").find("suite=ops-heldout-v0"), std::string::npos) << read(out + "/suite.cfg");
  Expected<std::vector<EpisodeState>> states = read_episode_states(out + "/states.jsonl");
  ASSERT_TRUE(states.ok()) << states.status().to_string();
  ASSERT_EQ(states->size(), 1u);
  EXPECT_EQ((*states)[0].benchmark, "benchmark://ops-heldout-v0/nrm-h1");
  std::filesystem::remove_all(out);
  std::filesystem::remove(log);
}

// A run killed while it works, run again, finishes every benchmark exactly once and
// keeps the rows finished before the kill. (If the machine is fast enough that the
// first run ends before the kill, the second run must simply skip everything.)
TEST(SuiteTest, KilledSuiteResumesWithoutRepeating) {
  const std::string out = temp_dir("killed"), log = out + ".log";
  const std::string benchmarks = "gmm-1,nrm-1,gmm-2";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string cmd = "exec " + kBinary + " " + kOps + " --benchmarks " + benchmarks + " --out " + out +
                            " > /dev/null 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Kill it as soon as the first row is down.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(50);
  int repeated = 0;
  bool exited = false;
  while (std::chrono::steady_clock::now() < deadline) {
    if (rows_by_key(read(out + "/results.csv"), &repeated).size() >= 1) break;
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  std::map<std::string, std::string> before = rows_by_key(read(out + "/results.csv"), &repeated);
  ASSERT_GE(before.size(), 1u);

  ASSERT_EQ(run(kOps + " --benchmarks " + benchmarks + " --out " + out, log), 0) << read(log);
  const std::string second_log = read(log);
  std::map<std::string, std::string> after = rows_by_key(read(out + "/results.csv"), &repeated);
  EXPECT_EQ(repeated, 0);
  EXPECT_EQ(after.size(), 3u);
  for (const auto& [uri, row] : before) {
    EXPECT_EQ(after[uri], row) << uri << " was measured again";
    const std::string name = uri.substr(uri.rfind('/') + 1);
    EXPECT_NE(second_log.find(name + ": finished earlier, skipped"), std::string::npos) << second_log;
  }
  Expected<std::vector<EpisodeState>> states = read_episode_states(out + "/states.jsonl");
  ASSERT_TRUE(states.ok()) << states.status().to_string();
  EXPECT_EQ(states->size(), 3u);
  EXPECT_EQ(run("validate " + out + "/states.jsonl", log), 0) << read(log);
  std::filesystem::remove_all(out);
  std::filesystem::remove(log);
}

TEST(SuiteTest, UserErrorsSayWhatIsWrong) {
  const std::string out = temp_dir("errors"), log = out + ".log";
  // --metaschedule: a directory without tune.py's tvm.json, one naming libraries that
  // are gone, and one with gmm-1's kernel but not nrm-1's (the libraries exist: any
  // file will do, nothing is loaded before every kernel is there).
  const std::string ms_empty = temp_dir("ms_empty"), ms_gone = temp_dir("ms_gone"), ms = temp_dir("ms");
  const std::string ms_pack = temp_dir("ms_pack");
  for (const std::string& d : {ms_empty, ms_gone, ms, ms_pack}) std::filesystem::create_directories(d);
  std::ofstream(ms_gone + "/tvm.json") << R"({"libtvm_ffi": "/nonexistent/libtvm_ffi.so", "libtvm_runtime": "/nonexistent/libtvm_runtime.so"})";
  std::ofstream(ms + "/tvm.json") << R"({"libtvm_ffi": ")" << kBinary << R"(", "libtvm_runtime": ")" << kBinary << R"("})";
  std::ofstream(ms + "/gmm-1.so") << "not loaded";
  std::ofstream(ms + "/gmm-1.json") << R"({"trials": 8, "search_s": 1.5, "trials_to_90": 3, "tuned_gflops": 50})";
  // A prepack record must name an input and the packed shape.
  std::filesystem::copy_file(ms + "/tvm.json", ms_pack + "/tvm.json");
  std::filesystem::copy_file(ms + "/gmm-1.so", ms_pack + "/c2d-4.so");
  std::ofstream(ms_pack + "/c2d-4.json")
      << R"({"trials": 8, "search_s": 1.5, "trials_to_90": 3, "tuned_gflops": 50, "prepack": {"input": -1, "shape": [4]}})";
  std::filesystem::copy_file(ms + "/gmm-1.so", ms_pack + "/c2d-3.so");
  std::ofstream(ms_pack + "/c2d-3.json")
      << R"({"trials": 8, "search_s": 1.5, "trials_to_90": 3, "tuned_gflops": 50, "prepack": {"input": 1}})";
  struct Case {
    std::string args, message;
  };
  const Case cases[] = {
      {"suite --suite ops-v0", "--out DIR is required"},
      {"suite --suite nope-v0 --out " + out, "no suite 'nope-v0'"},
      {"suite --suite ops-v0 --families gmm,xyz --out " + out, "no family 'xyz'"},
      {"suite --suite ops-v0 --benchmarks gmm-9 --out " + out, "no benchmark 'gmm-9'"},
      {"suite --suite ops-v0 --agent nope --out " + out, "no agent 'nope'"},
      {"suite --suite ops-v0 --reward speed --benchmarks gmm-1 --out " + out, "speed"},
      {"suite --suite graphs-v0 --planners nope --out " + out, "no planner 'nope'"},
      {"suite --suite ops-v0 --benchmarks gmm-1 --metaschedule " + ms_empty + " --out " + out, "no tvm.json there"},
      {"suite --suite ops-v0 --benchmarks gmm-1 --metaschedule " + ms_gone + " --out " + out, "does not exist"},
      {"suite --suite ops-v0 --benchmarks gmm-1,nrm-1 --metaschedule " + ms + " --out " + out,
       "no tuned kernel for nrm-1; tune them with benchmarks/metaschedule/tune.py --benchmarks nrm-1"},
      {"suite --suite ops-v0 --benchmarks c2d-4 --metaschedule " + ms_pack + " --out " + out,
       "c2d-4.json: prepack's input is negative"},
      {"suite --suite ops-v0 --benchmarks c2d-3 --metaschedule " + ms_pack + " --out " + out, "c2d-3.json"},
      {"suite --suite graphs-v0 --graphs nope --out " + out, "nope"},
      // The held-out suite: its own names, and its own tune.py command.
      {"suite --suite ops-heldout-v0 --benchmarks gmm-1 --out " + out, "ops-heldout-v0 has no benchmark 'gmm-1'"},
      {"suite --suite ops-heldout-v0 --benchmarks gmm-h1 --metaschedule " + ms + " --out " + out,
       "tune.py --suite ops-heldout-v0 --benchmarks gmm-h1"},
  };
  for (const Case& c : cases) {
    EXPECT_NE(run(c.args, log), 0) << c.args;
    EXPECT_NE(read(log).find(c.message), std::string::npos) << c.args << "\n" << read(log);
  }
  for (const std::string& d : {out, ms_empty, ms_gone, ms, ms_pack}) std::filesystem::remove_all(d);
  std::filesystem::remove(log);
}

TEST(SuiteTest, GraphsSuitePlansEveryGraphWithEveryPlanner) {
  const std::string out = temp_dir("graphs"), log = out + ".log";
  const std::string args = "suite --suite graphs-v0 --graphs mobilenet_v2@96,resnet50@64 --planners "
                           "naive,greedy_by_size,best_fit_best --time-limit 1 --out " + out;
  ASSERT_EQ(run(args, log), 0) << read(log);
  EXPECT_NE(read(log).find("geomean"), std::string::npos) << read(log);
  const std::string csv = read(out + "/results.csv");
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "graph,planner,arena,lb_live,ratio,seconds,order,inplace,verified");
  int rows = 0;
  while (std::getline(in, line)) {
    ++rows;
    EXPECT_NE(line.find(",yes"), std::string::npos) << line;
    // arena / lower bound is at least 1.
    std::vector<std::string> f;
    std::istringstream fields(line);
    std::string x;
    while (std::getline(fields, x, ',')) f.push_back(x);
    ASSERT_EQ(f.size(), 9u) << line;
    EXPECT_GE(std::atof(f[4].c_str()), 1.0) << line;
  }
  EXPECT_EQ(rows, 6);
  // Again: both graphs are skipped, nothing is added.
  ASSERT_EQ(run(args, log), 0) << read(log);
  EXPECT_NE(read(log).find("resnet50@64: finished earlier, skipped"), std::string::npos) << read(log);
  EXPECT_EQ(read(out + "/results.csv"), csv);
  std::filesystem::remove_all(out);
  std::filesystem::remove(log);
}

}  // namespace
}  // namespace tensorgym
