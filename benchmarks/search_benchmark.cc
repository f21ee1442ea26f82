// Search quality, side by side with the vendor libraries in one process:
//
//  1. `evolutionary`, runtime-guided, on gmm-4 (GEMM 1024^3), 1 thread: its best
//     schedule against OpenBLAS sgemm (target: at least 0.8x), and the time to reach
//     90% of its final best (trials and seconds).
//  2. The same on the c2d family of ops-v0 (ResNet-18's conv2d layers) against
//     oneDNN's direct convolution (target: geometric mean at least 0.7x).
//  3. est_cycles-guided against runtime-guided search on gmm-4: the best schedule of
//     each measured side by side, and the time each search took.
//
// The searches measure candidates in sandboxed workers (the runner, lighter settings:
// search_runner_settings()); the final comparisons compile each best schedule in this
// process and time it side by side with the vendor kernels (benchmarks/baselines/kernel_comparison.h:
// the runner's timing protocol, alternating for several rounds; ratios are medians of
// per-round ratios, ours / baseline throughput).
//
//   build/bin/search_benchmark [--trials 1000] [--conv-trials 300] [--rounds 5]
//       [--seed 0] [--workers 1] [--only gemm|conv|compare] [--plot-dir DIR]
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "agents/evaluator.h"
#include "agents/search.h"
#include "benchmarks/baselines/kernel_comparison.h"
#include "benchmarks/baselines/vendor_baselines.h"
#include "codegen/backend/registry.h"
#include "datasets/registry.h"
#include "plot/curve_svg.h"

namespace tensorgym {
namespace {

struct Flags {
  int64_t trials = 1000;
  int64_t conv_trials = 300;
  int rounds = 5;
  uint64_t seed = 0;
  int workers = 1;
  std::string only;  // gemm, conv, compare, or empty for all
  std::string plot_dir;
  std::string binary;  // the tensorgym executable for the workers
};

struct SearchRun {
  std::string uri;
  std::string reward;
  std::string best_trace;
  double best_gflops = 0;  // as measured (or estimated) during the search
  double seconds = 0;
  int64_t trials = 0;
  int64_t failed = 0;
  int64_t trials_to_90 = 0;
  double seconds_to_90 = 0;
  std::vector<double> curve;
  std::map<std::string, std::string> report;
};

SearchRun search(const Flags& f, const std::string& uri, const std::string& reward, int64_t trials) {
  Expected<std::unique_ptr<Evaluator>> evaluator = make_search_evaluator(reward, f.workers, 1, f.binary);
  if (!evaluator.ok()) throw std::runtime_error(evaluator.status().to_string());
  SearchSetup setup;
  setup.benchmark = uri;
  setup.agent = "evolutionary";
  setup.seed = f.seed;
  setup.budget.max_trials = trials;
  setup.evaluator = evaluator->get();
  setup.eval_chunk = f.workers;
  Expected<std::unique_ptr<Search>> s = Search::create(setup);
  if (!s.ok()) throw std::runtime_error(s.status().to_string());
  int64_t last_print = 0;
  Status st = (*s)->run([&](const SearchProgress& p) {
    if (p.trials - last_print >= 50 || p.trials == trials) {
      fmt::print(stderr, "  {} {}: {}/{} trials, best {:.1f} GFLOP/s, {:.0f} s\n", uri, reward, p.trials, trials,
                 p.best_gflops, p.elapsed_s);
      last_print = p.trials;
    }
  });
  if (!st.ok()) throw std::runtime_error(st.to_string());
  const TrialRecord* best = (*s)->best();
  if (!best) throw std::runtime_error(uri + ": no valid schedule found");
  SearchRun r;
  r.uri = uri;
  r.reward = reward;
  r.best_trace = best->trace;
  r.best_gflops = best->eval.gflops;
  r.seconds = (*s)->elapsed_s();
  r.trials = (*s)->trials();
  r.curve = (*s)->best_gflops_curve();
  r.report = (*s)->agent().report();
  for (const TrialRecord& t : (*s)->records()) r.failed += !t.eval.ok();
  for (const TrialRecord& t : (*s)->records()) {
    if (r.curve[size_t(t.trial - 1)] >= 0.9 * r.best_gflops) {
      r.trials_to_90 = t.trial;
      r.seconds_to_90 = t.elapsed_s;
      break;
    }
  }
  return r;
}

void write_plot(const Flags& f, const std::string& name, const std::vector<PlotSeries>& series, const std::string& title) {
  if (f.plot_dir.empty()) return;
  std::ofstream out(f.plot_dir + "/" + name);
  out << best_so_far_svg(series, title);
}

Benchmark benchmark_of(const std::string& uri) {
  Expected<Benchmark> b = DatasetRegistry::global().resolve(uri);
  if (!b.ok()) throw std::runtime_error(b.status().to_string());
  return *b;
}

// The schedule timed side by side with the vendors (and the expert schedule), 1 thread.
KernelComparison measure(const Flags& f, const std::string& uri, const std::string& trace) {
  CompareOptions co;
  co.threads = 1;
  co.timing.rounds = f.rounds;
  Expected<KernelComparison> c = compare_kernels(benchmark_of(uri), trace, co);
  if (!c.ok()) throw std::runtime_error(c.status().to_string());
  return *c;
}

const ComparedKernel& other(const KernelComparison& c, const std::string& name) {
  for (const ComparedKernel& k : c.others)
    if (k.name == name) return k;
  throw std::runtime_error("no " + name + " kernel to compare with (is the library installed?)");
}

void print_search(const SearchRun& r) {
  fmt::print(
      "  search: {} trials ({} failed) in {:.0f} s; best during search {:.1f} GFLOP/s; 90% of it after {} "
      "trials, {:.0f} s\n",
      r.trials, r.failed, r.seconds, r.best_gflops, r.trials_to_90, r.seconds_to_90);
  for (const auto& [k, v] : r.report) fmt::print("  {}: {}\n", k, v);
}

void gemm_part(const Flags& f, SearchRun* runtime_run) {
  const std::string uri = "benchmark://ops-v0/gmm-4";
  fmt::print("== evolutionary, runtime-guided, {}, {} trials, 1 thread\n", uri, f.trials);
  *runtime_run = search(f, uri, "runtime", f.trials);
  print_search(*runtime_run);
  write_plot(f, "search_gmm4.svg", {{"evolutionary (runtime)", runtime_run->curve}}, uri + ": best-so-far GFLOP/s");
  KernelComparison c = measure(f, uri, runtime_run->best_trace);
  fmt::print("  best schedule side by side (1 thread, {} rounds): ours {:.1f} GFLOP/s", f.rounds, c.ours_gflops);
  for (const ComparedKernel& k : c.others) fmt::print("; {} {:.1f} GFLOP/s, ratio {:.3f}", k.name, k.gflops, k.speedup);
  fmt::print("\n  vs OpenBLAS: {:.3f} (target >= 0.8)\n", other(c, "OpenBLAS").speedup);
  fmt::print("  best schedule:\n{}", runtime_run->best_trace);
}

void conv_part(const Flags& f) {
  fmt::print("== evolutionary, runtime-guided, c2d family, {} trials each, 1 thread, against oneDNN\n", f.conv_trials);
  std::vector<double> ratios;
  std::vector<PlotSeries> curves;
  for (const char* name : {"c2d-1", "c2d-2", "c2d-3", "c2d-4"}) {
    const std::string uri = std::string("benchmark://ops-v0/") + name;
    SearchRun run = search(f, uri, "runtime", f.conv_trials);
    curves.push_back({name, run.curve});
    KernelComparison c = measure(f, uri, run.best_trace);
    const ComparedKernel& dnnl = other(c, "oneDNN");
    ratios.push_back(dnnl.speedup);
    fmt::print(
        "  {}: ours {:.1f} GFLOP/s, oneDNN {:.1f} GFLOP/s, ratio {:.3f}; search {} trials in {:.0f} s, 90% after "
        "{} trials\n",
        name, c.ours_gflops, dnnl.gflops, dnnl.speedup, run.trials, run.seconds, run.trials_to_90);
  }
  fmt::print("  c2d geometric mean ratio vs oneDNN: {:.3f} (target >= 0.7)\n", geometric_mean(ratios));
  write_plot(f, "search_c2d.svg", curves, "ops-v0 c2d: best-so-far GFLOP/s (evolutionary, runtime)");
}

void compare_part(const Flags& f, const SearchRun* runtime_run) {
  const std::string uri = "benchmark://ops-v0/gmm-4";
  fmt::print("== est_cycles-guided vs runtime-guided evolutionary search, {}, {} trials each\n", uri, f.trials);
  SearchRun est = search(f, uri, "est_cycles", f.trials);
  SearchRun measured = runtime_run ? *runtime_run : search(f, uri, "runtime", f.trials);
  KernelComparison a = measure(f, uri, est.best_trace), b = measure(f, uri, measured.best_trace);
  fmt::print("  {:<16} {:>12} {:>14} {:>16} {:>20}\n", "guided by", "search time", "GFLOP/s", "vs OpenBLAS",
             "90% after");
  for (const auto& [name, run, c] : {std::tuple<const char*, const SearchRun*, const KernelComparison*>{"est_cycles", &est, &a},
                                     {"runtime", &measured, &b}})
    fmt::print("  {:<16} {:10.0f} s {:14.1f} {:16.3f} {:8} tr., {:4.0f} s\n", name, run->seconds, c->ours_gflops,
               other(*c, "OpenBLAS").speedup, run->trials_to_90, run->seconds_to_90);
  fmt::print("  est_cycles-guided best schedule:\n{}", est.best_trace);
  write_plot(f, "search_est_cycles_gmm4.svg", {{"est_cycles-guided (estimated)", est.curve}},
             uri + ": est_cycles-guided search, best-so-far estimated GFLOP/s");
}

}  // namespace
}  // namespace tensorgym

int main(int argc, char** argv) {
  using namespace tensorgym;
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--trials") f.trials = std::atoll(next().c_str());
    else if (a == "--conv-trials") f.conv_trials = std::atoll(next().c_str());
    else if (a == "--rounds") f.rounds = std::atoi(next().c_str());
    else if (a == "--seed") f.seed = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--workers") f.workers = std::atoi(next().c_str());
    else if (a == "--only") f.only = next();
    else if (a == "--plot-dir") f.plot_dir = next();
    else {
      std::cerr << "usage: search_benchmark [--trials N] [--conv-trials N] [--rounds R] [--seed S] [--workers N]"
                   " [--only gemm|conv|compare] [--plot-dir DIR]\n";
      return 2;
    }
  }
  // The workers are the tensorgym executable next to this one.
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len > 0) {
    self[len] = 0;
    std::string dir(self);
    f.binary = dir.substr(0, dir.rfind('/')) + "/tensorgym";
  }
  try {
    const TargetInfo& t = host_backend().target();
    fmt::print("host: {}, {}, {}-bit vectors, {} cores; {}; seed {}\n", t.triple, t.device, t.vector_bits, t.num_cores,
               vendor_libraries_text(), f.seed);
    SearchRun gemm;
    bool have_gemm = false;
    if (f.only.empty() || f.only == "gemm") {
      gemm_part(f, &gemm);
      have_gemm = true;
    }
    if (f.only.empty() || f.only == "conv") conv_part(f);
    if (f.only.empty() || f.only == "compare") compare_part(f, have_gemm ? &gemm : nullptr);
  } catch (const std::exception& e) {
    std::cerr << "search_benchmark: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
