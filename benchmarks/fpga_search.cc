// The search on the fpga target, benchmark by benchmark of fpga-v0: the expert schedule
// with and without its virtual threads, the best each agent finds in its trial budget
// (the tilings of the schedule knobs, valued by the simulated runtime, in this process),
// the roofline bound of the default design, and best / bound. Cycles are fsim's,
// deterministic; the wall time is this machine's.
//
//   build/bin/fpga_search [--trials 1000] [--seed 0] [--agents evolutionary,random]
//                         [--only resnet|gemm]
//
// ResNet-18's C2..C11 are the set the figures are reported on; the GEMMs (--only gemm)
// and other seeds are the held-out runs.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "agents/evaluator.h"
#include "agents/search.h"
#include "codegen/fpga/conv2d_program.h"
#include "codegen/fpga/conv2d_stream.h"
#include "datasets/registry.h"

namespace tensorgym {
namespace {

struct Options {
  int64_t trials = 1000;
  uint64_t seed = 0;
  std::string agents = "evolutionary,random";
  std::string only;
};

// The schedule without the primitive that binds virtual threads: the same tiling, one
// thread.
std::string without_vthreads(const std::string& schedule) {
  std::string out, line;
  std::istringstream in(schedule);
  while (std::getline(in, line)) {
    std::string kept;
    std::istringstream parts(line);
    for (std::string p; std::getline(parts, p, ';');)
      if (p.find("vthread") == std::string::npos) kept += (kept.empty() ? "" : ";") + p;
    out += kept + "\n";
  }
  return out;
}

Expected<double> seconds_of(Evaluator& e, const std::string& uri, const std::string& trace) {
  std::vector<Evaluation> v = e.evaluate({Candidate{uri, "", trace}});
  if (!v[0].ok()) return v[0].status;
  return v[0].cost;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string p; std::getline(in, p, ',');)
    if (!p.empty()) out.push_back(p);
  return out;
}

int run(const Options& o) {
  const fpga::AccelConfig& config = fpga::default_accel_config();
  const double hz = config.clock_mhz * 1e6;
  auto cycles = [&](double seconds) { return int64_t(std::llround(seconds * hz)); };
  Expected<std::unique_ptr<Evaluator>> evaluator = make_search_evaluator("runtime", 2, 1, "", "fpga");
  if (!evaluator.ok()) {
    fmt::print(stderr, "{}\n", evaluator.status().to_string());
    return 1;
  }
  Expected<const Dataset*> dataset = DatasetRegistry::global().find_dataset("fpga-v0");
  if (!dataset.ok()) {
    fmt::print(stderr, "{}\n", dataset.status().to_string());
    return 1;
  }
  const std::vector<std::string> agents = split(o.agents);
  fmt::print("{} at {} MHz; {} trials, seed {}; cycles (fsim)\n\n", config.name, config.clock_mhz, o.trials, o.seed);
  std::string header = "| benchmark | expert vt1 | expert vt2 |";
  std::string rule = "| --- | --- | --- |";
  for (const std::string& a : agents) header += fmt::format(" {} best (trials) |", a), rule += " --- |";
  fmt::print("{} bound (compute / DRAM) | best / bound | search s |\n{} --- | --- | --- |\n", header, rule);
  int failures = 0;
  for (const BenchmarkInfo& info : (*dataset)->list(0, -1)) {
    const bool resnet = info.uri.find("resnet18") != std::string::npos;
    if ((o.only == "resnet" && !resnet) || (o.only == "gemm" && resnet)) continue;
    Expected<Benchmark> b = DatasetRegistry::global().resolve(info.uri);
    Expected<fpga::Conv2dLayer> layer = b.ok() ? fpga::recognize_conv2d(*b->program, config)
                                               : Expected<fpga::Conv2dLayer>(b.status());
    if (!layer.ok()) {
      fmt::print("| {} | {} |\n", info.uri, layer.status().to_string());
      ++failures;
      continue;
    }
    Expected<double> vt2 = seconds_of(**evaluator, info.uri, b->expert_schedule);
    Expected<double> vt1 = seconds_of(**evaluator, info.uri, without_vthreads(b->expert_schedule));
    std::string row = fmt::format("| {} | {} | {} |", info.uri.substr(info.uri.rfind('/') + 1),
                                  vt1.ok() ? std::to_string(cycles(*vt1)) : vt1.status().message(),
                                  vt2.ok() ? std::to_string(cycles(*vt2)) : vt2.status().message());
    double best = vt2.ok() ? *vt2 : INFINITY;
    const auto t0 = std::chrono::steady_clock::now();
    for (const std::string& agent : agents) {
      SearchSetup setup;
      setup.benchmark = info.uri;
      setup.agent = agent;
      setup.seed = o.seed;
      setup.budget.max_trials = o.trials;
      setup.evaluator = evaluator->get();
      Expected<std::unique_ptr<Search>> search = Search::create(setup);
      Status ran = search.ok() ? (*search)->run() : search.status();
      if (!ran.ok() || !(*search)->best()) {
        row += fmt::format(" {} |", ran.ok() ? "no valid schedule" : ran.message());
        ++failures;
        continue;
      }
      const double found = (*search)->best()->eval.cost;
      best = std::min(best, found);
      row += fmt::format(" {} ({}) |", cycles(found), (*search)->trials());
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const fpga::Roofline bound = fpga::roofline(config, *layer);
    fmt::print("{} {} ({} / {}) | {:.2f} | {:.1f} |\n", row, bound.bound(), bound.compute_cycles, bound.dram_cycles,
               double(cycles(best)) / double(bound.bound()), seconds);
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace tensorgym

int main(int argc, char** argv) {
  tensorgym::Options o;
  CLI::App app{"The search on the fpga target against the expert schedules and the roofline"};
  app.add_option("--trials", o.trials, "Trials per agent and benchmark");
  app.add_option("--seed", o.seed, "The agents' seed");
  app.add_option("--agents", o.agents, "Agents, comma separated (random, greedy, evolutionary)");
  app.add_option("--only", o.only, "resnet (ResNet-18 C2..C11) or gemm (the held-out GEMMs)")
      ->check(CLI::IsMember({"resnet", "gemm"}));
  CLI11_PARSE(app, argc, argv);
  return tensorgym::run(o);
}
