// tensorgym search --benchmark URI --agent NAME [--trials N] [--reward runtime|est_cycles|est_gpu_time]
//                  [--threads N] [--workers N] [--seed S] [--time-limit S] [--early-stopping N]
//                  [--state-out FILE] [--plot FILE.svg] [--checkpoint FILE] [--resume FILE]
//                  [--cost-model-out FILE] [--cost-model-in FILE] [--json] [--verbose]
// Searches for a fast schedule with one of the agents of agents/ (random, greedy, beam,
// evolutionary): each trial is one candidate evaluated by the runner's sandboxed
// workers (runtime) or the analytical cost model (est_cycles). Shows a progress bar
// with the best-so-far GFLOP/s on a terminal (plain lines otherwise), prints the best
// schedule, and appends it as an EpisodeState that `tensorgym validate` accepts.
// Failed trials are counted by error class with an example; --verbose lists each, and
// --json carries them all.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>

#include "agents/search.h"
#include "benchmarks/baselines/kernel_comparison.h"
#include "cli/cli_common.h"
#include "cli/env_runner.h"
#include "cli/figures.h"
#include "cli/json_text.h"
#include "cli/remote_evaluator.h"
#include "cli/search_progress.h"
#include "plot/curve_svg.h"
#include "proto/episode_state_io.h"
#include "spaces/event.h"

namespace tensorgym::cli {
namespace {

struct SearchCliOptions {
  std::string benchmark;
  std::string agent = "evolutionary";
  int64_t trials = 1000;
  double time_limit = 0;
  int64_t early_stopping = 0;
  int finalists = 4;
  std::string reward = "runtime";
  std::string target;  // empty: the reward's (cuda for est_gpu_time, else the cpu)
  int threads = 0;
  int workers = 1;
  std::vector<std::string> endpoints;
  std::string auth_token_file;
  bool tls = false;
  std::string tls_ca_file;
  double connect_timeout = 30;
  uint64_t seed = 0;
  std::string state_out;
  std::string plot;
  std::string checkpoint;
  std::string resume;
  std::string cost_model_out;
  std::string cost_model_in;
  bool json = false;
  bool quiet = false;
  bool verbose = false;
  bool vs_vendor = false;
  int rounds = 3;
  AgentOptions agent_options;
};

Expected<std::string> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A failed trial's error class: the runner's (COMPILE, WRONG_ANSWER, TIMEOUT, ...) where
// the message starts with one, else the status code's name (a schedule that does not
// apply or lower).
std::string failure_class_name(const Status& status) {
  const std::string& m = status.message();
  size_t end = 0;
  while (end < m.size() && (std::isupper(static_cast<unsigned char>(m[end])) || m[end] == '_')) ++end;
  if (end >= 3 && end < m.size() && m[end] == ':') return m.substr(0, end);
  return status_code_name(status.code());
}

struct FailureClass {
  std::string name;
  int64_t count = 0;
  int64_t first_trial = 0;
  std::string first_message;
};

// The failed trials by error class, most frequent first.
std::vector<FailureClass> failure_classes(const std::vector<TrialRecord>& records) {
  std::vector<FailureClass> out;
  for (const TrialRecord& r : records) {
    if (r.eval.ok()) continue;
    const std::string name = failure_class_name(r.eval.status);
    auto it = std::find_if(out.begin(), out.end(), [&](const FailureClass& f) { return f.name == name; });
    if (it == out.end()) {
      out.push_back({name, 0, r.trial, r.eval.status.message()});
      it = out.end() - 1;
    }
    ++it->count;
  }
  std::stable_sort(out.begin(), out.end(), [](const FailureClass& a, const FailureClass& b) { return a.count > b.count; });
  return out;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// A trace on one line: its primitives joined by "; ".
std::string one_line(const std::string& trace) {
  std::string out;
  std::istringstream in(trace);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out += (out.empty() ? "" : "; ") + line;
  return out;
}

// est_cycles as a rounded count; a runtime or est_gpu_time as a duration.
std::string cost_text(double cost, const std::string& metric) {
  return metric == "est_cycles" ? figure(cost) : seconds_text(cost);
}

Status write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) return failed_precondition("cannot write " + path);
  return Status();
}

int run_search(const SearchCliOptions& o) {
  if (o.benchmark.empty() && o.resume.empty()) return report_error(invalid_argument("--benchmark URI is required"));
  if (!o.endpoints.empty() && o.reward != "runtime")
    return report_error(invalid_argument("--endpoints measures runtimes; " + o.reward +
                                         " is a model and needs no endpoint (drop one of them)"));

  if (!o.endpoints.empty() && !o.target.empty() && o.target != "cpu")
    return report_error(unimplemented("--endpoints measures on the services' cpu; a " + o.target +
                                      " search measures on local workers (drop --endpoints)"));

  // Local sandboxed workers, the analytical model, or the services at --endpoints.
  Expected<std::unique_ptr<Evaluator>> evaluator =
      o.endpoints.empty()
          ? make_search_evaluator(o.reward, o.workers, o.threads, "", o.target)
          : make_remote_evaluator({.endpoints = o.endpoints, .threads = o.threads,
                                   .auth_token_file = o.auth_token_file, .tls = o.tls, .tls_ca_file = o.tls_ca_file,
                                   .connect_timeout_s = o.connect_timeout});
  if (!evaluator.ok()) return report_error(evaluator.status());

  SearchSetup setup;
  setup.benchmark = o.benchmark;
  setup.agent = o.agent;
  setup.seed = o.seed;
  setup.budget.max_trials = o.trials;
  setup.budget.max_seconds = o.time_limit;
  setup.budget.early_stopping = o.early_stopping;
  setup.finalists = o.finalists;
  setup.options = o.agent_options;
  setup.evaluator = evaluator->get();
  // Remote: a whole batch at once, spread over the endpoints.
  setup.eval_chunk = o.endpoints.empty() ? std::max(1, o.workers) : 0;
  setup.env_context = cli_env_context(o.threads);
  if (!o.cost_model_in.empty()) {
    Expected<std::string> bytes = read_bytes(o.cost_model_in);
    if (!bytes.ok()) return report_error(bytes.status());
    setup.initial_cost_model = *bytes;
  }
  Expected<std::unique_ptr<Search>> search =
      o.resume.empty() ? Search::create(setup) : Search::resume(o.resume, setup);
  if (!search.ok()) return report_error(search.status());
  Search& s = **search;

  if (!o.quiet && !o.json) {
    std::cerr << fmt::format("search {} with {}, reward {}, seed {}{}\n", s.benchmark().uri, s.agent().name(),
                             s.metric(), s.setup().seed,
                             o.resume.empty() ? "" : fmt::format(", resumed at trial {}", s.trials()));
  }
  ProgressDisplay display(s.metric(), o.quiet || o.json, "", o.time_limit);
  Status st = s.run([&](const SearchProgress& p) { display.update(p); });
  display.finish();
  if (!o.checkpoint.empty()) {
    Status cs = s.save_checkpoint(o.checkpoint);
    if (!cs.ok()) return report_error(cs);
  }
  if (!st.ok()) return report_error(st);

  if (!o.cost_model_out.empty()) {
    std::string model = s.agent().cost_model();
    if (model.empty()) return report_error(failed_precondition("agent " + s.agent().name() + " has no trained cost model"));
    Status ws = write_bytes(o.cost_model_out, model);
    if (!ws.ok()) return report_error(ws);
  }
  if (!o.plot.empty()) {
    std::string svg = best_so_far_svg({{s.agent().name(), s.best_gflops_curve()}},
                                      s.benchmark().uri + ": " + s.agent().name() + ", reward " + s.metric(),
                                      s.metric() == "runtime" ? "best GFLOP/s" : "best est. GFLOP/s");
    Status ws = write_bytes(o.plot, svg);
    if (!ws.ok()) return report_error(ws);
  }

  const TrialRecord* best = s.best();
  // The best episode (for a measured search this measures the unscheduled program and
  // the best schedule once more, in the environment, as `validate` will).
  Status state_status;
  if (best && !o.state_out.empty()) {
    Expected<EpisodeState> state = s.best_episode_state();
    state_status = state.ok() ? append_episode_state(o.state_out, *state) : state.status();
  }

  // The best schedule against the vendor libraries and the expert schedule, timed
  // side by side in this process.
  Expected<KernelComparison> cmp = failed_precondition("not measured");
  if (best && o.vs_vendor) {
    if (!o.quiet && !o.json) std::cerr << "measuring the best schedule side by side with the vendor libraries\n";
    CompareOptions co;
    co.threads = o.threads;
    co.timing.rounds = o.rounds;
    cmp = compare_kernels(s.benchmark(), best->trace, co);
    if (!cmp.ok()) return report_error(cmp.status());
  }

  std::map<std::string, std::string> report = s.agent().report();
  SearchProgress p = s.progress();
  const std::vector<FailureClass> failures = failure_classes(s.records());
  if (o.json) {
    Json j = Json::object();
    j["benchmark"] = s.benchmark().uri;
    j["agent"] = s.agent().name();
    j["reward"] = s.metric();
    j["seed"] = s.setup().seed;
    j["trials"] = p.trials;
    j["failed_trials"] = p.failed_trials;
    j["elapsed_s"] = p.elapsed_s;
    j["stop_reason"] = stop_reason_name(s.stop_reason());
    if (best) {
      const Evaluation e = s.best_evaluation();
      j["best"] = Json{{"trial", best->trial}, {"cost", e.cost}, {"gflops", e.gflops}, {"schedule", best->trace}};
    } else {
      j["best"] = nullptr;
    }
    // Why trials failed: each error class with its count and first example, and
    // every failed trial.
    Json classes = Json::array();
    for (const FailureClass& f : failures)
      classes.push_back(Json{{"error", f.name}, {"count", f.count}, {"first_trial", f.first_trial},
                             {"message", f.first_message}});
    j["failures"] = std::move(classes);
    Json failed = Json::array();
    for (const TrialRecord& r : s.records())
      if (!r.eval.ok())
        failed.push_back(Json{{"trial", r.trial},
                              {"error", failure_class_name(r.eval.status)},
                              {"message", r.eval.status.message()},
                              {"schedule", r.trace}});
    j["failed"] = std::move(failed);
    // The finalists measured again, and what each measured.
    Json finalists = Json::array();
    for (const FinalistRecord& f : s.finalists())
      finalists.push_back(Json{{"trial", f.trial},
                               {"trial_cost", s.records()[size_t(f.trial - 1)].eval.cost},
                               {"costs", f.costs},
                               {"median_cost", f.median_cost}});
    j["finalists"] = std::move(finalists);
    if (cmp.ok()) {
      Json others = Json::array();
      for (const ComparedKernel& k : cmp->others)
        others.push_back(Json{{"name", k.name}, {"gflops", k.gflops}, {"ours_over_it", k.speedup}});
      j["side_by_side"] = Json{{"threads", cmp->threads}, {"rounds", cmp->rounds}, {"gflops", cmp->ours_gflops},
                               {"others", std::move(others)}};
    }
    Json report_json = Json::object();
    for (const auto& [k, v] : report) report_json[k] = v;
    j["report"] = std::move(report_json);
    std::cout << json_text(j) << "\n";
  } else {
    std::cout << fmt::format("stopped: {} after {} trials ({} failed), {}\n", stop_reason_name(s.stop_reason()),
                             p.trials, p.failed_trials, seconds_text(p.elapsed_s));
    for (const FailureClass& f : failures) {
      std::cout << fmt::format("failed: {} x {}, first trial {}: {}\n", f.count, f.name, f.first_trial,
                               first_line(f.first_message));
    }
    if (o.verbose) {
      for (const TrialRecord& r : s.records()) {
        if (r.eval.ok()) continue;
        std::cout << fmt::format("trial {} failed: {}\n  schedule: {}\n", r.trial, r.eval.status.to_string(),
                                 one_line(r.trace));
      }
    } else if (!failures.empty()) {
      std::cout << "(--verbose lists every failed trial with its schedule)\n";
    }
    if (best) {
      const Evaluation e = s.best_evaluation();
      const std::string of =
          s.finalists().empty() ? "" : fmt::format(" (the median of {} finalists' measurements)", s.finalists().size());
      if (e.gflops > 0 || e.flops > 0) {
        std::cout << fmt::format("best: trial {}, {}, {} {}{}\n", best->trial, gflops_text(e.gflops, s.metric()),
                                 s.metric(), cost_text(e.cost, s.metric()), of);
      } else {
        std::cout << fmt::format("best: trial {}, {} {}{}\n", best->trial, s.metric(), cost_text(e.cost, s.metric()),
                                 of);
      }
      std::cout << "schedule:\n" << best->trace;
    } else {
      std::cout << "no valid schedule found\n";
    }
    for (const auto& [k, v] : report) std::cout << k << ": " << v << "\n";
    if (cmp.ok()) {
      std::string line = fmt::format("side by side ({} thread{}, {} rounds): ours {:.1f} GFLOP/s", cmp->threads,
                                     cmp->threads == 1 ? "" : "s", cmp->rounds, cmp->ours_gflops);
      for (const ComparedKernel& k : cmp->others)
        line += fmt::format("; {} {:.1f} GFLOP/s (ours {:.2f}x)", k.name, k.gflops, k.speedup);
      if (cmp->others.empty()) line += "; no vendor library computes this operator";
      std::cout << line << "\n";
    }
    if (best && !o.state_out.empty() && state_status.ok()) std::cout << "state: " << o.state_out << "\n";
    if (!o.checkpoint.empty()) std::cout << "checkpoint: " << o.checkpoint << "\n";
    if (!o.plot.empty()) std::cout << "plot: " << o.plot << "\n";
  }
  if (!state_status.ok()) return report_error(state_status);
  return best ? 0 : 1;
}

}  // namespace

void add_search_command(CLI::App& app) {
  auto o = std::make_shared<SearchCliOptions>();
  CLI::App* cmd = app.add_subcommand("search", "Search for a fast schedule with an agent (random, greedy, beam, evolutionary)");
  cmd->add_option("--benchmark", o->benchmark, "Benchmark URI, e.g. benchmark://ops-v0/gmm-4");
  cmd->add_option("--agent", o->agent, "random, greedy, beam or evolutionary")->default_val("evolutionary");
  cmd->add_option("--trials", o->trials, "Trial budget: candidates evaluated (0: no limit; then give --time-limit)")->default_val(1000);
  cmd->add_option("--time-limit", o->time_limit, "Wall-clock budget in seconds (0: none)");
  cmd->add_option("--early-stopping", o->early_stopping, "Stop when the best has not improved for N trials (0: off)");
  cmd->add_option("--finalists", o->finalists, kFinalistsHelp)->default_val(4)->check(CLI::Range(0, 1000));
  cmd->add_option("--target", o->target,
                  "What the schedules are for: cpu, cuda or fpga (default: the reward's; runtime on cuda measures on "
                  "the GPU where one is, est_gpu_time is cuda's model; on fpga runtime is simulated cycles, the "
                  "agents choose tilings)")
      ->check(CLI::IsMember({"cpu", "cuda", "fpga"}));
  cmd->add_option("--reward", o->reward,
                  "runtime (measured), est_cycles (the analytical model) or est_gpu_time (the cuda target's GPU "
                  "model: schedules for the GPU; agents random, greedy, beam)")
      ->default_val("runtime");
  cmd->add_option("--threads", o->threads, "Threads of the compiled kernels (0: every core)");
  cmd->add_option("--workers", o->workers, "Sandboxed measurement workers (est_cycles: estimating threads)")->default_val(1);
  cmd->add_option("--endpoints", o->endpoints,
                  "Measure candidates on these services (host:port or dns:///name:port) through the batch evaluator")
      ->delimiter(',');
  cmd->add_option("--auth-token-file", o->auth_token_file, "With --endpoints: file whose first line is the bearer token");
  cmd->add_flag("--tls", o->tls, "With --endpoints: connect over TLS");
  cmd->add_option("--connect-timeout", o->connect_timeout, "With --endpoints: seconds to wait for a ready endpoint")
      ->default_val(30);
  cmd->add_option("--tls-ca", o->tls_ca_file, "With --tls: PEM roots to trust (default: the system's)");
  cmd->add_option("--seed", o->seed, "Seed of the agent's random choices")->default_val(0);
  cmd->add_option("--state-out", o->state_out, "Append the best episode as an EpisodeState (JSON Lines)");
  cmd->add_option("--plot", o->plot, "Write the best-so-far curve (GFLOP/s against trials) as SVG");
  cmd->add_option("--checkpoint", o->checkpoint, "Write the whole search state here when the search stops");
  cmd->add_option("--resume", o->resume, "Continue the search saved in this checkpoint (budgets count from its start)");
  cmd->add_option("--cost-model-out", o->cost_model_out, "Save the learned cost model (evolutionary)");
  cmd->add_option("--cost-model-in", o->cost_model_in, "Start from a saved cost model (evolutionary)");
  cmd->add_option("--episode-length", o->agent_options.episode_length, "random: actions per episode; greedy, beam: depth")
      ->default_val(o->agent_options.episode_length);
  cmd->add_option("--branching", o->agent_options.branching, "greedy, beam: actions tried per state")
      ->default_val(o->agent_options.branching);
  cmd->add_option("--beam-width", o->agent_options.beam_width, "beam: states kept per depth")
      ->default_val(o->agent_options.beam_width);
  cmd->add_option("--batch", o->agent_options.batch_size, "random, evolutionary: candidates per round")
      ->default_val(o->agent_options.batch_size);
  cmd->add_option("--population", o->agent_options.population, "evolutionary: population size")
      ->default_val(o->agent_options.population);
  cmd->add_option("--generations", o->agent_options.generations, "evolutionary: generations per round")
      ->default_val(o->agent_options.generations);
  cmd->add_option("--analytical-prior", o->agent_options.analytical_prior,
                  "evolutionary: fraction of each batch chosen by est_cycles (0: learned model only)")
      ->default_val(o->agent_options.analytical_prior)
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_flag("--vs-vendor", o->vs_vendor,
                "Time the best schedule side by side with OpenBLAS / oneDNN and the expert schedule");
  cmd->add_option("--rounds", o->rounds, "--vs-vendor: rounds of side-by-side timing")->default_val(3)->check(CLI::Range(1, 100));
  cmd->add_flag("--json", o->json, "Print one JSON object with the outcome");
  cmd->add_flag("--quiet", o->quiet, "No progress output");
  cmd->add_flag("--verbose", o->verbose, "List every failed trial: its error and its schedule");
  cmd->callback([o] {
    int rc = run_search(*o);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace tensorgym::cli
