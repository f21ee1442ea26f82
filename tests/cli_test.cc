// The command line as a user meets it, through the real `tensorgym` binary, each run
// bounded by timeout(1): typos are named with the nearest name, observation and reward
// names are checked before any work and listed in --help, text output rounds figures
// while --json keeps them whole, run --json says when an episode terminated, validate
// shows progress and stops at --timeout, search explains its failed trials, serve on a
// port in use says one clean line, the README's commands use what they name, and
// memplan's exact planner reports a proven gap and writes a plan that verifies.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "codegen/backend/registry.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

using Json = nlohmann::json;

const std::string kBinary = std::string(TENSORGYM_BINARY_DIR) + "/bin/tensorgym";
const std::string kSource = TENSORGYM_SOURCE_DIR;

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/cli_test_" + std::to_string(getpid()) + "_" + name;
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

struct Result {
  int rc = -1;      // exit status; -1 when killed by a signal
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `tensorgym ARGS` (a shell fragment) for at most `seconds`.
Result run(const std::string& args, int seconds = 120) {
  const std::string out = temp_path("stdout"), err = temp_path("stderr");
  const std::string command =
      "timeout -k 5 " + std::to_string(seconds) + " " + kBinary + " " + args + " > " + out + " 2> " + err;
  const int status = std::system(command.c_str());
  Result r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read(out);
  r.err = read(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

Json parse(const std::string& text) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON: " << text;
  return j;
}

int count_lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

// ---- typos --------------------------------------------------------------------------

TEST(CliTest, AMisspelledOptionIsNamedWithTheNearestOption) {
  Result r = run("lower --programm " + kSource + "/datasets/ops/gemm_128.tg");
  EXPECT_NE(r.rc, 0);
  EXPECT_CONTAINS(r.err, "unknown option --programm");
  EXPECT_CONTAINS(r.err, "did you mean --program?");
  EXPECT_EQ(r.err.find("is required"), std::string::npos) << r.err;
  // Cut short, or with its value after '='.
  r = run("search --benchmark benchmark://ops-v0/gmm-1 --trails=4");
  EXPECT_NE(r.rc, 0);
  EXPECT_CONTAINS(r.err, "unknown option --trails");
  EXPECT_CONTAINS(r.err, "did you mean --trials?");
  // Nothing near: no guess.
  r = run("lower --program x.tg --zzzzzzzz");
  EXPECT_NE(r.rc, 0);
  EXPECT_CONTAINS(r.err, "unknown option --zzzzzzzz");
  EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;
}

TEST(CliTest, AMisspelledCommandIsNamedWithTheNearestCommand) {
  Result r = run("serv --port 0");
  EXPECT_NE(r.rc, 0);
  EXPECT_CONTAINS(r.err, "unknown command 'serv'; did you mean 'serve'?");
  EXPECT_EQ(r.err.find("A subcommand is required"), std::string::npos) << r.err;
  r = run("valdiate states.jsonl");
  EXPECT_CONTAINS(r.err, "did you mean 'validate'?");
  r = run("xyzzy");
  EXPECT_NE(r.rc, 0);
  EXPECT_CONTAINS(r.err, "unknown command 'xyzzy' (commands: ");
  EXPECT_CONTAINS(r.err, "search");
  // Still the parser's own message when nothing was misspelled.
  r = run("");
  EXPECT_NE(r.rc, 0);
  EXPECT_CONTAINS(r.err, "subcommand is required");
}

// ---- names of observations and rewards ----------------------------------------------

TEST(CliTest, RunChecksObservationAndRewardNamesBeforeAnyWork) {
  // The benchmark does not exist: a name check that came after the reset would
  // report that instead.
  Result r = run("run --benchmark benchmark://ops-v0/gmm-99 --observe schedule,gflop");
  EXPECT_NE(r.rc, 0);
  EXPECT_CONTAINS(r.err, "--observe: schedule-v0 has no observation 'gflop' (did you mean 'gflops'?)");
  EXPECT_CONTAINS(r.err, "est_cycles");  // the valid names are listed
  EXPECT_EQ(r.out.find("gflop: null"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("gmm-99"), std::string::npos) << r.err;
  r = run("run --benchmark benchmark://ops-v0/gmm-99 --reward est_cycle");
  EXPECT_NE(r.rc, 0);
  EXPECT_CONTAINS(r.err, "--reward: schedule-v0 has no reward 'est_cycle' (did you mean 'est_cycles'?)");
  EXPECT_CONTAINS(r.err, "runtime_norm_expert");
  r = run("run --benchmark benchmark://ops-v0/gmm-99 --step-observe colour");
  EXPECT_CONTAINS(r.err, "--step-observe: schedule-v0 has no observation 'colour'");
  // memory-v0 has names of its own.
  r = run("run --env memory-v0 --benchmark benchmark://graphs-v0/none --observe est_cycles");
  EXPECT_CONTAINS(r.err, "memory-v0 has no observation 'est_cycles'");
  EXPECT_CONTAINS(r.err, "arena_ratio");
}

TEST(CliTest, HelpListsTheObservationAndRewardNames) {
  for (const char* command : {"run --help", "batch --help"}) {
    Result r = run(command);
    EXPECT_EQ(r.rc, 0) << command;
    EXPECT_CONTAINS(r.out, "schedule-v0 observations: ");
    EXPECT_CONTAINS(r.out, "loop_nest");
    EXPECT_CONTAINS(r.out, "schedule-v0 rewards: ");
    EXPECT_CONTAINS(r.out, "gflops_norm_expert");
    EXPECT_CONTAINS(r.out, "memory-v0 observations: ");
  }
}

TEST(CliTest, MakeJobsRefusesUnknownNamesAndWritesNoJobs) {
  Result r = run("batch --make-jobs --suite ops-v0 --limit 2 --observe est_cycle");
  EXPECT_NE(r.rc, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_CONTAINS(r.err, "--observe: schedule-v0 has no observation 'est_cycle' (did you mean 'est_cycles'?)");
  EXPECT_CONTAINS(r.err, "loop_nest");
  r = run("batch --make-jobs --suite ops-v0 --limit 2 --observe est_cycles --rewards runtimes");
  EXPECT_NE(r.rc, 0);
  EXPECT_CONTAINS(r.err, "--rewards: schedule-v0 has no reward 'runtimes' (did you mean 'runtime'?)");
  r = run("batch --make-jobs --suite ops-v0 --limit 2 --observe est_cycles");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(count_lines(r.out), 2);
}

// ---- figures ----------------------------------------------------------------------------

// The number after `label` in a text line.
double number_after(const std::string& text, const std::string& label, std::string* digits) {
  const size_t at = text.find(label);
  EXPECT_NE(at, std::string::npos) << "no '" << label << "' in " << text;
  if (at == std::string::npos) return NAN;
  std::smatch m;
  const std::string rest = text.substr(at + label.size());
  EXPECT_TRUE(std::regex_search(rest, m, std::regex("^-?[0-9.eE+-]+"))) << rest;
  *digits = m.str();
  return std::atof(digits->c_str());
}

TEST(CliTest, TextRoundsFiguresAndJsonKeepsThemWhole) {
  const std::string args =
      "run --benchmark benchmark://ops-v0/gmm-1 --actions 'split(C.i, 32, io, ii); split(C.j, 16, jo, ji); "
      "reorder(C, io, jo, ii, ji); vectorize(C.ji)' --observe est_cycles,flops --reward est_cycles";
  Result text = run(args);
  Result json = run(args + " --json");
  ASSERT_EQ(text.rc, 0) << text.err;
  ASSERT_EQ(json.rc, 0) << json.err;
  Json j = parse(json.out);
  const double cycles = j["observations"]["est_cycles"].get<double>();
  const double reward = j["rewards"]["est_cycles"].get<double>();
  std::string cycles_text, reward_text;
  const double shown_cycles = number_after(text.out, "est_cycles: ", &cycles_text);
  const double shown_reward = number_after(text.out, "reward est_cycles (cumulative): ", &reward_text);
  // Rounded to four significant digits (whole numbers stay whole) ...
  EXPECT_NEAR(shown_cycles, cycles, std::max(0.5, std::fabs(cycles) * 5e-4)) << cycles_text;
  EXPECT_NEAR(shown_reward, reward, std::fabs(reward) * 5e-4) << reward_text;
  EXPECT_LE(reward_text.size(), 7u) << reward_text;
  EXPECT_EQ(cycles_text.find('.'), std::string::npos) << cycles_text;  // thousands of cycles: no decimals
  // ... and the JSON reads back to the very same doubles as the state it carries.
  EXPECT_EQ(reward, j["state"]["reward"].get<double>());
  EXPECT_NE(reward, std::round(reward * 1e4) / 1e4);  // a figure with more than four digits
}

TEST(CliTest, BenchmarksDatasetsAndInterpPrintJson) {
  Result r = run("benchmarks ops-v0 --offset 2 --limit 3 --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  Json j = parse(r.out);
  ASSERT_EQ(j["benchmarks"].size(), 3u);
  EXPECT_EQ(j["benchmarks"][0]["uri"].get<std::string>().rfind("benchmark://ops-v0/", 0), 0u);
  EXPECT_TRUE(j["benchmarks"][0]["shape"].is_string());
  // The same rows as the text listing.
  Result text = run("benchmarks ops-v0 --offset 2 --limit 3");
  EXPECT_CONTAINS(text.out, j["benchmarks"][2]["uri"].get<std::string>());

  r = run("datasets --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  j = parse(r.out);
  bool ops = false;
  for (const Json& d : j["datasets"]) ops |= d["name"] == "benchmark://ops-v0" && d["size"].get<int64_t>() > 0;
  EXPECT_TRUE(ops) << r.out;

  r = run("interp --program " + kSource + "/datasets/ops/gemm_128.tg --schedule-file " + kSource +
          "/datasets/ops/gemm_tiled.sched --seed 1 --json");
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  j = parse(r.out);
  EXPECT_TRUE(j["match"].get<bool>());
  EXPECT_EQ(j["seed"].get<int>(), 1);
  ASSERT_EQ(j["outputs"].size(), 1u);
  EXPECT_EQ(j["outputs"][0]["name"], "C");
  EXPECT_GT(j["outputs"][0]["checked"].get<int64_t>(), 0);
}

TEST(CliTest, SuitePrintsJson) {
  const std::string dir = temp_path("suite");
  std::filesystem::remove_all(dir);
  Result r = run("suite --suite graphs-v0 --graphs mobilenet_v2@96 --planners naive,greedy_by_size --time-limit 1 "
                 "--out " + dir + " --json",
                 300);
  ASSERT_EQ(r.rc, 0) << r.err;
  Json j = parse(r.out);  // stdout is the JSON alone; the running lines went to stderr
  EXPECT_EQ(j["suite"], "graphs-v0");
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["verified"], "yes");
  EXPECT_GE(j["rows"][0]["ratio"].get<double>(), 1.0);
  EXPECT_TRUE(j["rows"][0]["arena"].is_number_integer());
  EXPECT_TRUE(j["geomean_ratio"].contains("naive"));
  EXPECT_CONTAINS(r.err, "geomean");
  std::filesystem::remove_all(dir);
}

// ---- episodes -----------------------------------------------------------------------------

// An offset-only memory-v0 instance of two buffers: two placements finish it.
std::string two_buffers() {
  const std::string path = temp_path("two_buffers.csv");
  write(path, "id,lower,upper,size\n0,0,2,100\n1,1,3,50\n");
  return path;
}

TEST(CliTest, RunJsonSaysWhenTheEpisodeTerminated) {
  const std::string csv = two_buffers();
  const std::string args = "run --env memory-v0 --benchmark file://" + csv + " --action-space placement --json --actions ";
  Result done = run(args + "'best_fit; best_fit' --observe decision");
  ASSERT_EQ(done.rc, 0) << done.err << done.out;
  Json j = parse(done.out);
  EXPECT_EQ(j["observations"]["decision"], "done");
  EXPECT_TRUE(j["terminated"].get<bool>()) << done.out;
  Result open = run(args + "best_fit --observe decision");
  ASSERT_EQ(open.rc, 0) << open.err << open.out;
  j = parse(open.out);
  EXPECT_EQ(j["observations"]["decision"], "placement");
  EXPECT_FALSE(j["terminated"].get<bool>()) << open.out;
  // The text output says so too.
  Result text = run("run --env memory-v0 --benchmark file://" + csv +
                    " --action-space placement --actions 'best_fit; best_fit'");
  EXPECT_CONTAINS(text.out, "terminated");
  std::filesystem::remove(csv);
}

TEST(CliTest, ValidateShowsProgressAndTheDeadlinesItUses) {
  const std::string state = temp_path("progress.jsonl");
  std::filesystem::remove(state);
  Result r = run("run --benchmark benchmark://ops-v0/gmm-1 --actions 'split(C.i, 32, io, ii); parallel(C.io)' "
                 "--reward est_cycles --state-out " + state);
  ASSERT_EQ(r.rc, 0) << r.err;
  r = run("validate " + state);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_CONTAINS(r.out, "state 1 benchmark://ops-v0/gmm-1: ok");
  EXPECT_CONTAINS(r.err, "state 1/1 benchmark://ops-v0/gmm-1: replaying 2 actions");
  EXPECT_CONTAINS(r.err, "action 2/2");
  r = run("validate --quiet " + state);
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.err, "");
  // A measured state carries the deadlines it was measured under; validate keeps them.
  Json line = parse(read(state));
  line["provenance"] = Json{{"settings", {{"compile_timeout_s", 2}, {"run_timeout_s", 3}}}};
  write(state, line.dump() + "\n");
  r = run("validate " + state);
  EXPECT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_CONTAINS(r.err, "compile and run deadlines 3 s as recorded");
  std::filesystem::remove(state);
}

TEST(CliTest, ValidateStopsAtItsTimeout) {
  // A measured reward on a 512^3 GEMM: each of its measurements takes at least the
  // runner's five 100 ms repeats, far past the timeout.
  const std::string state = temp_path("timeout.jsonl");
  write(state, Json{{"env", "schedule-v0"},
                    {"benchmark", "benchmark://ops-v0/gmm-3"},
                    {"action_space", "primitives"},
                    {"actions", {"split(C.i, 32, io, ii)", "split(C.j, 32, jo, ji)"}},
                    {"reward_space", "runtime"},
                    {"reward", 0.5}}
                       .dump() +
                   "\n");
  Result r = run("validate --timeout 0.3 " + state, 60);
  EXPECT_EQ(r.rc, 124) << r.err << r.out;
  EXPECT_CONTAINS(r.err, "validate: --timeout 300 ms passed during state 1 of 1 (benchmark://ops-v0/gmm-3");
  EXPECT_CONTAINS(r.err, "0 states checked");
  std::filesystem::remove(state);
}

// ---- search -----------------------------------------------------------------------------

TEST(CliTest, SearchExplainsItsFailedTrials) {
  // Random schedules of a 1024^3 GEMM now and then ask for a buffer past the caps (an
  // rfactor of the whole reduction): those trials fail, and say why.
  const std::string search = "search --benchmark benchmark://ops-v0/gmm-4 --agent random --trials 60 "
                             "--episode-length 12 --reward est_cycles --quiet --seed ";
  Json j;
  int seed = 1;
  for (; seed <= 8; ++seed) {
    Result r = run(search + std::to_string(seed) + " --json");
    ASSERT_EQ(r.rc, 0) << r.err;
    j = parse(r.out);
    const int64_t failed = j["failed_trials"].get<int64_t>();
    ASSERT_EQ(int64_t(j["failed"].size()), failed) << r.out;
    int64_t by_class = 0;
    for (const Json& f : j["failures"]) {
      by_class += f["count"].get<int64_t>();
      EXPECT_FALSE(f["error"].get<std::string>().empty());
      EXPECT_FALSE(f["message"].get<std::string>().empty());
    }
    EXPECT_EQ(by_class, failed);
    if (failed > 0) break;
  }
  ASSERT_LE(seed, 8) << "no trial failed with seeds 1 to 8";
  const Json& first = j["failed"][0];
  EXPECT_EQ(j["failures"][0]["error"], "INSTANTIATION") << j.dump();
  EXPECT_CONTAINS(first["message"].get<std::string>(), "over the limit");
  EXPECT_FALSE(first["schedule"].get<std::string>().empty());
  // Text: a line per error class, and a hint; --verbose: each failed trial with its schedule.
  Result text = run(search + std::to_string(seed));
  EXPECT_CONTAINS(text.out, "x INSTANTIATION, first trial " + std::to_string(first["trial"].get<int64_t>()));
  EXPECT_CONTAINS(text.out, "--verbose");
  Result verbose = run(search + std::to_string(seed) + " --verbose");
  EXPECT_CONTAINS(verbose.out, "trial " + std::to_string(first["trial"].get<int64_t>()) + " failed: ");
  EXPECT_CONTAINS(verbose.out, "over the limit");
  EXPECT_CONTAINS(verbose.out, "  schedule: ");
}

// ---- serve --------------------------------------------------------------------------------

TEST(CliTest, ServeOnAPortInUseSaysOneCleanLine) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const int port = ntohs(a.sin_port);
  Result r = run("serve --port " + std::to_string(port), 60);
  ::close(fd);
  EXPECT_NE(r.rc, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_CONTAINS(r.err, "cannot listen on 127.0.0.1:" + std::to_string(port));
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
}

// ---- the README ---------------------------------------------------------------------------

TEST(CliTest, TheReadmeRunsEachScheduleOnTheBenchmarkItWasWrittenFor) {
  const std::string readme = read(kSource + "/README.md");
  // "gemm_1024" schedules go with the 1024^3 GEMM, gmm-4 (datasets/ops_suite.cc).
  std::smatch m;
  std::string rest = readme;
  int checked = 0;
  const std::regex run_line(R"(--benchmark benchmark://ops-v0/(gmm-[0-9]+)[^\n]*\n[^\n]*--actions-file [^ ]*gemm_(\d+))");
  while (std::regex_search(rest, m, run_line)) {
    EXPECT_EQ(m[2].str() == "1024", m[1].str() == "gmm-4") << m.str();
    ++checked;
    rest = m.suffix();
  }
  EXPECT_GT(checked, 0);
  Result r = run("benchmarks ops-v0 --json");
  Json j = parse(r.out);
  for (const Json& b : j["benchmarks"])
    if (b["uri"] == "benchmark://ops-v0/gmm-4") EXPECT_CONTAINS(b["shape"].get<std::string>(), "1024");
}

// ---- constant inputs -------------------------------------------------------------------

// A pack of a constant input at the root is constant work: lower names it, and eval
// checks and times the kernel over the packed weights (docs/program_language.md).
TEST(CliTest, ConstantWorkIsShownByLowerAndDoneOnceByEval) {
  const std::string program = temp_path("const.tg"), plain = temp_path("plain.tg");
  const std::string body =
      "P[c, h] = select(h >= 1 && h <= 30, X[c, h - 1], 0.0) where h in 0..32\n"
      "Y[f, y] += P[c, y + r] * W[f, c, r] where y in 0..30\n";
  write(program, "input X: f32[4, 30]\ninput W: f32[8, 4, 3] const\n" + body);
  write(plain, "input X: f32[4, 30]\ninput W: f32[8, 4, 3]\n" + body);
  const std::string schedule = " --schedule 'cache_read(W, Y, WP); reorder_storage(WP, ax1, ax2, ax0)'";
  Result r = run("lower --program " + program + schedule);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_CONTAINS(r.out, "input W: f32[8, 4, 3] const\n");
  EXPECT_CONTAINS(r.out, "# constant work, done once ahead of the runs (Executable::prepare): WP\n");
  r = run("lower --program " + plain + schedule);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.find("constant work"), std::string::npos) << r.out;
  r = run("eval --program " + program + schedule + " --repeat 1 --min-repeat-ms 0");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_CONTAINS(r.out, "correct    yes");
}

// ---- the cuda target ------------------------------------------------------------------

TEST(CliTest, TheCudaTargetLowersChecksAndInterpretsButDoesNotRun) {
  const std::string program = temp_path("gemm.tg"), schedule = temp_path("gemm.cuda.sched");
  write(program, "input A: f32[64, 48]\ninput B: f32[48, 40]\nC[i, j] += A[i, k] * B[k, j]\n");
  write(schedule,
        "split(C.i, 16, io, ii)\nsplit(C.j, 8, jo, ji)\nreorder(C, io, jo, ii, ji, k)\nbind(C.io, blockIdx.y)\n"
        "bind(C.jo, blockIdx.x)\nbind(C.ii, threadIdx.y)\nbind(C.ji, threadIdx.x)\n");
  const std::string args = "--program " + program + " --schedule-file " + schedule + " --target cuda";

  Result r = run("lower " + args);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_CONTAINS(r.out, "for C.io in 0..4 bound to blockIdx.y");
  EXPECT_CONTAINS(r.out, "for C.ji in 0..8 bound to threadIdx.x");
  r = run("lower " + args + " --after all");
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const char* pass : {"# after simplify", "# after check_gpu_loops", "# after check_gpu_kernels",
                           "# after check_gpu_stores"})
    EXPECT_CONTAINS(r.out, pass);
  // The CPU refuses the same schedule.
  r = run("lower --program " + program + " --schedule-file " + schedule);
  EXPECT_NE(r.rc, 0);
  EXPECT_CONTAINS(r.err, "does not support thread binding");

  r = run("interp " + args);
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("match (1 output", 0), 0u) << r.out;
  // Unbound, the program would run on one GPU thread: an error, not a result.
  r = run("interp --program " + program + " --target cuda");
  EXPECT_NE(r.rc, 0);
  EXPECT_CONTAINS(r.err, "stage C runs outside any GPU kernel");

  // eval compiles to PTX, shows each kernel, then says it cannot measure it here.
  if ((*find_backend("cuda"))->target().can_run) GTEST_SKIP() << "a GPU runs the kernels here";
  r = run("eval " + args);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_CONTAINS(r.out, "kernel     tg_kernel_0 (stage C): blocks 5 x 4 x 1, threads 8 x 16 x 1");
  EXPECT_CONTAINS(r.err, "the cuda target cannot be measured here (no GPU on this machine: ");
  EXPECT_CONTAINS(r.err, "): its code was generated (1 kernel) but nothing on this machine runs it");
  r = run("eval " + args + " --json");
  EXPECT_EQ(r.rc, 1);
  Json j = parse(r.out);
  EXPECT_EQ(j.value("error", ""), "UNIMPLEMENTED") << r.out;
  EXPECT_EQ(j.value("target", ""), "cuda");
  EXPECT_CONTAINS(j.value("ptx", ""), ".entry tg_kernel_0(");
  ASSERT_EQ(j["kernels"].size(), 1u) << r.out;
  EXPECT_EQ(j["kernels"][0]["threads"], Json({8, 16, 1}));
  EXPECT_TRUE(j.contains("ptxas_stats"));  // null where ptxas is not installed
  if (!j["ptxas_stats"].is_null()) {
    EXPECT_EQ(j["ptxas_stats"]["tg_kernel_0"]["spill_store_bytes"], 0);
  }
  // --emit ptx prints the PTX alone; the cpu has none.
  r = run("eval " + args + " --emit ptx");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.rfind("//", 0), 0u) << r.out;
  EXPECT_CONTAINS(r.out, ".target sm_90");
  EXPECT_CONTAINS(r.out, "%ctaid.y");
  r = run("eval --program " + program + " --emit ptx");
  EXPECT_NE(r.rc, 0);
  EXPECT_CONTAINS(r.err, "--emit ptx: the cpu target emits no PTX");
  std::filesystem::remove(program);
  std::filesystem::remove(schedule);
}

// The fpga target: eval runs a ResNet-18 layer on the simulator the user names, checked
// against the reference, with cycles, module utilization and instruction counts;
// --emit fpga prints the stream; the cpu refuses a simulator.
TEST(CliTest, EvalRunsAResNetLayerOnTheFpgaTargetsSimulators) {
  const std::string args = "--program " + kSource + "/datasets/fpga/resnet18_c9.tg --schedule-file " + kSource +
                           "/datasets/fpga/resnet18_c9.fpga.sched --target fpga";
  Result r = run("eval " + args);
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_CONTAINS(r.out, "correct    yes");
  EXPECT_CONTAINS(r.out, "simulated by fsim (deterministic)");
  EXPECT_CONTAINS(r.out, "cycles     ");
  EXPECT_CONTAINS(r.out, "instructions ");
  EXPECT_CONTAINS(r.out, "compute    busy ");
  r = run("eval " + args + " --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  Json j = parse(r.out);
  EXPECT_TRUE(j.value("correct", false));
  EXPECT_EQ(j["provenance"].value("clock", ""), "fsim");
  const int64_t cycles = j["simulated"].value("cycles", int64_t(0));
  EXPECT_GT(cycles, 0);
  EXPECT_DOUBLE_EQ(j["runtime_s"].value("median", 0.0), double(cycles) / 100e6);
  r = run("eval " + args + " --simulator rtl --json");
  if (r.out.find("Verilator model") == std::string::npos) {  // a build without Verilator says so
    ASSERT_EQ(r.rc, 0) << r.out << r.err;
    Json rtl = parse(r.out);
    EXPECT_EQ(rtl["provenance"].value("clock", ""), "rtl");
    EXPECT_EQ(rtl["simulated"].value("cycles", int64_t(0)), cycles);  // the RTL's cycles are fsim's
  }
  r = run("eval " + args + " --emit fpga");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.rfind("; zynq7020-1x16x16 on fsim", 0), 0u) << r.out;
  EXPECT_CONTAINS(r.out, "FINISH");
  r = run("eval --program " + kSource + "/datasets/ops/gemm_128.tg --simulator rtl");
  EXPECT_NE(r.rc, 0);
  EXPECT_CONTAINS(r.err, "the cpu target runs for real");
  // Batch jobs for the target: random legal tilings, each job naming it.
  r = run("batch --make-jobs --suite fpga-v0 --schedules random:2 --seed 3 --target fpga --rewards runtime");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(count_lines(r.out), 26);
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    Json job = parse(line);
    EXPECT_EQ(job.value("target", ""), "fpga");
    EXPECT_CONTAINS(job.value("actions", ""), "tensorize(C.b, gemm)");
  }
}

TEST(CliTest, InterpForTheCpuTargetChecksItsLoweringAndRunsTheTargetIndependentNest) {
  const std::string program = temp_path("vec.tg");
  write(program, "input A: f32[64, 48]\ninput B: f32[48, 40]\nC[i, j] += A[i, k] * B[k, j]\n");
  Result r = run("interp --program " + program + " --schedule 'split(C.j, 8, jo, ji); vectorize(C.ji)' --target cpu");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("match (1 output", 0), 0u) << r.out << r.err;
  r = run("interp --program " + program + " --schedule 'bind(C.i, blockIdx.x)' --target cpu");
  EXPECT_NE(r.rc, 0);
  EXPECT_CONTAINS(r.err, "does not support thread binding");
  std::filesystem::remove(program);
}

}  // namespace
}  // namespace tensorgym

namespace tensorgym {
namespace {

TEST(CliTest, MemplanExactProvesABoundAboveTheLiveBoundAndWritesAVerifiedPlan) {
  // At alignment 2 the three buffers live together at time 1 (7 bytes) cannot share
  // fewer than 9: x and y take 4 bytes each in a stack, z 1 more.
  const std::string csv = temp_path("gap.csv"), plan = temp_path("gap.plan.csv");
  write(csv, "id,lower,upper,size\nx,0,2,3\ny,1,3,3\nz,0,3,1\n");
  Result r = run("memplan --lifetimes " + csv + " --alignment 2 --planner exact --time-limit 5 --json --plan-out " +
                 plan);
  ASSERT_EQ(r.rc, 0) << r.err;
  const Json p = parse(r.out)["planners"][0];
  EXPECT_EQ(p["planner"], "exact");
  EXPECT_EQ(p["arena"], 9);
  EXPECT_EQ(p["lb_live"], 7);
  EXPECT_EQ(p["lower_bound"], 9);
  EXPECT_EQ(p["gap"], 0.0);
  EXPECT_EQ(p["proven_optimal"], true);
  Result v = run("memplan --verify " + plan + " --lifetimes " + csv);
  EXPECT_EQ(v.rc, 0) << v.err;
  EXPECT_CONTAINS(v.out, "valid: arena 9");
  // Text: the gap column; a greedy planner's gap is measured against the live bound.
  Result t = run("memplan --lifetimes " + csv + " --alignment 2 --planner naive");
  EXPECT_CONTAINS(t.out, "gap");
  // A bad line is named with its number, and nothing is planned.
  write(csv, "id,lower,upper,size\nx,0,2,3\ny,3,1,3\n");
  Result bad = run("memplan --lifetimes " + csv + " --planner exact");
  EXPECT_NE(bad.rc, 0);
  EXPECT_CONTAINS(bad.err, "gap.csv:3:");
  std::filesystem::remove(csv);
  std::filesystem::remove(plan);
}

TEST(CliTest, MemplanUnderAMemoryLimitRewritesTheGraphRunsItAndWritesAVerifiedPlan) {
  // The search takes 60% of the time limit; under a sanitizer's slowdown 3 s of it
  // ran out before the greedy search reached a fit.
  const std::string uri = "--benchmark benchmark://graphs-v0/mobilenet_v2@64 --planner best --time-limit 12";
  Result r = run("memplan " + uri + " --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const int64_t arena = parse(r.out)["planners"][0].value("arena", int64_t(0));
  const int64_t limit = arena * 3 / 5;
  const std::string plan = temp_path("limit.plan.csv"), buffers = temp_path("limit.buffers.csv");
  r = run("memplan " + uri + " --memory-limit " + std::to_string(limit) + " --json --plan-out " + plan +
          " --lifetimes-out " + buffers);
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  Json j = parse(r.out);
  EXPECT_EQ(j["planners"][0].value("feasible", true), false);  // best alone cannot
  const Json& rewritten = j["planners"][1];
  EXPECT_EQ(rewritten.value("planner", ""), "best+rewrites");
  EXPECT_LE(rewritten.value("arena", limit + 1), limit);
  const Json& u = j["under_limit"];
  ASSERT_FALSE(u["rewrites"].empty()) << r.out;
  EXPECT_CONTAINS(u["rewrites"][0].get<std::string>(), "tiles");
  EXPECT_GT(u.value("work_ratio", 0.0), 1.0);
  EXPECT_GT(u.value("runtime_s", 0.0), 0.0);
  EXPECT_GT(u.value("unlimited_runtime_s", 0.0), 0.0);
  EXPECT_EQ(u.value("unlimited_arena", int64_t(0)), arena);
  Result v = run("memplan --verify " + plan + " --lifetimes " + buffers);
  EXPECT_EQ(v.rc, 0) << v.out << v.err;
  EXPECT_CONTAINS(v.out, "valid: arena " + std::to_string(rewritten.value("arena", int64_t(0))));
  // Text names the rewrites and the measured cost.
  Result t = run("memplan " + uri + " --memory-limit " + std::to_string(limit));
  ASSERT_EQ(t.rc, 0) << t.err;
  EXPECT_CONTAINS(t.out, "best+rewrites");
  EXPECT_CONTAINS(t.out, "runtime in the arena");
  EXPECT_CONTAINS(t.out, "outputs match");
  // The greedy search alone fits, and so do recomputations without their cones;
  // a beam of no states and a depth past the most are refused.
  auto with = [&](const std::string& flag) {
    return run("memplan " + uri + " --memory-limit " + std::to_string(limit) + " " + flag);
  };
  for (const char* flag : {"--beam-width 1", "--recompute-depth 1"}) {
    Result fits = with(std::string(flag) + " --json");
    ASSERT_EQ(fits.rc, 0) << flag << fits.err;
    EXPECT_LE(parse(fits.out)["planners"][1].value("arena", limit + 1), limit) << flag;
  }
  for (const char* flag : {"--beam-width 0", "--recompute-depth 9"}) {
    Result refused = with(flag);
    EXPECT_NE(refused.rc, 0) << flag;
    EXPECT_CONTAINS(refused.err, std::string(flag).substr(0, std::string(flag).find(' ')));
  }
  // Without rewriting, or below what any rewrite reaches, it is infeasible (2).
  EXPECT_EQ(run("memplan " + uri + " --memory-limit " + std::to_string(limit) + " --no-rewrite").rc, 2);
  Result none = run("memplan " + uri + " --memory-limit 1000");
  EXPECT_EQ(none.rc, 2) << none.out << none.err;
  EXPECT_CONTAINS(none.out, "does not fit 1000 bytes");
  std::filesystem::remove(plan);
  std::filesystem::remove(buffers);
}

}  // namespace
}  // namespace tensorgym
