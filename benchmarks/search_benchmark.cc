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
// process and time it with the runner's protocol (codegen/measure/timing.h),
// alternating with the baseline for several rounds; ratios are medians of per-round
// ratios (ours / baseline throughput).
//
//   build/bin/search_benchmark [--trials 1000] [--conv-trials 300] [--rounds 5]
//       [--seed 0] [--workers 1] [--only gemm|conv|compare] [--plot-dir DIR]
//
// OPENBLAS_CORETYPE: as kernel_quality, the program re-runs itself with the best core
// type the host supports unless it is set, so the baseline is OpenBLAS at its best.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "agents/evaluator.h"
#include "agents/search.h"
#include "codegen/analysis/op_count.h"
#include "codegen/cpu/cpu_backend.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/lower/lower.h"
#include "codegen/measure/timing.h"
#include "datasets/registry.h"

#if TENSORGYM_HAVE_BASELINES
#include <cblas.h>
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#endif

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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  if (n == 0) return 0;
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double time_median(const std::function<void()>& fn) {
  TimingOptions opts;
  opts.repeat = 5;
  opts.min_repeat_ms = 50;
  Expected<TimingStats> t = time_runs(fn, opts);
  if (!t.ok()) throw std::runtime_error(t.status().to_string());
  return t->median_s;
}

// A schedule compiled in this process, with its buffers.
struct Compiled {
  ProgramPtr program;
  std::shared_ptr<const CpuKernel> kernel;
  std::vector<HostBuffer> inputs, outputs;
  std::vector<void*> args;
};

Compiled compile(const ProgramPtr& program, const std::string& trace) {
  Compiled c;
  c.program = program;
  Expected<Schedule> s = Schedule::from_text(program, trace);
  if (!s.ok()) throw std::runtime_error(s.status().to_string());
  Expected<LoopNest> nest = lower(*s);
  if (!nest.ok()) throw std::runtime_error(nest.status().to_string());
  auto kernel = compile_cpu_kernel(*nest);
  if (!kernel.ok()) throw std::runtime_error(kernel.status().to_string());
  c.kernel = *kernel;
  c.inputs = make_random_inputs(*program, 1);
  c.outputs = make_output_buffers(*nest);
  for (HostBuffer& b : c.inputs) c.args.push_back(b.data());
  for (HostBuffer& b : c.outputs) c.args.push_back(b.data());
  return c;
}

// Median over rounds of t_baseline / t_ours, each round timing both, alternating.
struct SideBySide {
  double ours_s = 0, base_s = 0, ratio = 0;
};
SideBySide side_by_side(const std::function<void()>& ours, const std::function<void()>& base, int rounds) {
  std::vector<double> a, b, r;
  for (int i = 0; i < rounds; ++i) {
    double ta = time_median(ours);
    double tb = time_median(base);
    a.push_back(ta);
    b.push_back(tb);
    r.push_back(tb / ta);
  }
  return {median(a), median(b), median(r)};
}

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
  EvaluatorChoice choice;
  choice.reward = reward;
  choice.runner.workers = f.workers;
  choice.runner.threads = 1;
  choice.runner.worker_binary = f.binary;
  choice.runner.settings = search_runner_settings();
  Expected<std::unique_ptr<Evaluator>> evaluator = make_evaluator(choice);
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
      std::fprintf(stderr, "  %s %s: %lld/%lld trials, best %.1f GFLOP/s, %.0f s\n", uri.c_str(), reward.c_str(),
                   (long long)p.trials, (long long)trials, p.best_gflops, p.elapsed_s);
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

ProgramPtr program_of(const std::string& uri) {
  Expected<Benchmark> b = DatasetRegistry::global().resolve(uri);
  if (!b.ok()) throw std::runtime_error(b.status().to_string());
  return b->program;
}

void print_search(const SearchRun& r) {
  std::printf("  search: %lld trials (%lld failed) in %.0f s; best during search %.1f GFLOP/s; 90%% of it after %lld "
              "trials, %.0f s\n",
              (long long)r.trials, (long long)r.failed, r.seconds, r.best_gflops, (long long)r.trials_to_90,
              r.seconds_to_90);
  for (const auto& [k, v] : r.report) std::printf("  %s: %s\n", k.c_str(), v.c_str());
}

#if TENSORGYM_HAVE_BASELINES

void gemm_part(const Flags& f, SearchRun* runtime_run) {
  const std::string uri = "benchmark://ops-v0/gmm-4";
  std::printf("== evolutionary, runtime-guided, %s, %lld trials, 1 thread\n", uri.c_str(), (long long)f.trials);
  *runtime_run = search(f, uri, "runtime", f.trials);
  print_search(*runtime_run);
  write_plot(f, "search_gmm4.svg", {{"evolutionary (runtime)", runtime_run->curve}}, uri + ": best-so-far GFLOP/s");

  ProgramPtr program = program_of(uri);
  const double flops = count_ops(*program).flops;
  Compiled ours = compile(program, runtime_run->best_trace);
  const int n = 1024;
  const float* A = ours.inputs[0].typed<float>();
  const float* B = ours.inputs[1].typed<float>();
  HostBuffer c_blas(DataType::f32(), {n, n});
  openblas_set_num_threads(1);
  SideBySide r = side_by_side([&] { ours.kernel->run(ours.args.data(), 1); },
                              [&] {
                                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f,
                                            c_blas.typed<float>(), n);
                              },
                              f.rounds);
  std::printf("  best schedule vs OpenBLAS (1 thread, %d rounds): ours %.1f GFLOP/s, OpenBLAS %.1f GFLOP/s, ratio %.3f "
              "(target >= 0.8)\n",
              f.rounds, flops / r.ours_s / 1e9, flops / r.base_s / 1e9, r.ratio);
  std::printf("  best schedule:\n%s", runtime_run->best_trace.c_str());
}

struct ConvShape {
  const char* name;
  int64_t size, ci, co, k, s, p;
};

void conv_part(const Flags& f) {
  const ConvShape shapes[] = {{"c2d-1", 224, 3, 64, 7, 2, 3},
                              {"c2d-2", 56, 64, 64, 1, 1, 0},
                              {"c2d-3", 14, 256, 256, 3, 1, 1},
                              {"c2d-4", 7, 512, 512, 3, 1, 1}};
  std::printf("== evolutionary, runtime-guided, c2d family, %lld trials each, 1 thread, against oneDNN\n",
              (long long)f.conv_trials);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  omp_set_num_threads(1);
  std::vector<double> ratios;
  std::vector<PlotSeries> curves;
  for (const ConvShape& c : shapes) {
    const std::string uri = std::string("benchmark://ops-v0/") + c.name;
    SearchRun run = search(f, uri, "runtime", f.conv_trials);
    curves.push_back({c.name, run.curve});
    const int64_t out = (c.size + 2 * c.p - c.k) / c.s + 1;
    const double flops = 2.0 * double(c.co) * double(out * out) * double(c.ci) * double(c.k * c.k);
    ProgramPtr program = program_of(uri);
    Compiled ours = compile(program, run.best_trace);
    dnnl::memory::dims src_dims = {1, c.ci, c.size, c.size}, w_dims = {c.co, c.ci, c.k, c.k},
                       dst_dims = {1, c.co, out, out};
    dnnl::memory::desc src_any(src_dims, dt::f32, tag::any), w_any(w_dims, dt::f32, tag::any),
        dst_any(dst_dims, dt::f32, tag::any);
    dnnl::convolution_forward::primitive_desc pd(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                        src_any, w_any, dst_any, {c.s, c.s}, {c.p, c.p}, {c.p, c.p}),
        engine);
    // Inputs reordered once into oneDNN's preferred (blocked) layouts, outside the timing.
    dnnl::memory x_user({src_dims, dt::f32, tag::nchw}, engine, ours.inputs[0].data());
    dnnl::memory w_user({w_dims, dt::f32, tag::oihw}, engine, ours.inputs[1].data());
    dnnl::memory x_mem(pd.src_desc(), engine), w_mem(pd.weights_desc(), engine), y_mem(pd.dst_desc(), engine);
    dnnl::reorder(x_user, x_mem).execute(stream, x_user, x_mem);
    dnnl::reorder(w_user, w_mem).execute(stream, w_user, w_mem);
    stream.wait();
    dnnl::convolution_forward conv(pd);
    SideBySide r = side_by_side([&] { ours.kernel->run(ours.args.data(), 1); },
                                [&] {
                                  conv.execute(stream, {{DNNL_ARG_SRC, x_mem}, {DNNL_ARG_WEIGHTS, w_mem},
                                                        {DNNL_ARG_DST, y_mem}});
                                  stream.wait();
                                },
                                f.rounds);
    ratios.push_back(r.ratio);
    std::printf("  %s: ours %.1f GFLOP/s, oneDNN %.1f GFLOP/s, ratio %.3f; search %lld trials in %.0f s, 90%% after "
                "%lld trials\n",
                c.name, flops / r.ours_s / 1e9, flops / r.base_s / 1e9, r.ratio, (long long)run.trials, run.seconds,
                (long long)run.trials_to_90);
  }
  double log_sum = 0;
  for (double r : ratios) log_sum += std::log(r);
  std::printf("  c2d geometric mean ratio vs oneDNN: %.3f (target >= 0.7)\n", std::exp(log_sum / double(ratios.size())));
  write_plot(f, "search_c2d.svg", curves, "ops-v0 c2d: best-so-far GFLOP/s (evolutionary, runtime)");
}

void compare_part(const Flags& f, const SearchRun* runtime_run) {
  const std::string uri = "benchmark://ops-v0/gmm-4";
  std::printf("== est_cycles-guided vs runtime-guided evolutionary search, %s, %lld trials each\n", uri.c_str(),
              (long long)f.trials);
  SearchRun est = search(f, uri, "est_cycles", f.trials);
  SearchRun measured = runtime_run ? *runtime_run : search(f, uri, "runtime", f.trials);
  ProgramPtr program = program_of(uri);
  const double flops = count_ops(*program).flops;
  Compiled a = compile(program, est.best_trace), b = compile(program, measured.best_trace);
  const int n = 1024;
  const float* A = a.inputs[0].typed<float>();
  const float* B = a.inputs[1].typed<float>();
  HostBuffer c_blas(DataType::f32(), {n, n});
  openblas_set_num_threads(1);
  auto blas = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f, c_blas.typed<float>(), n);
  };
  SideBySide ra = side_by_side([&] { a.kernel->run(a.args.data(), 1); }, blas, f.rounds);
  SideBySide rb = side_by_side([&] { b.kernel->run(b.args.data(), 1); }, blas, f.rounds);
  std::printf("  %-16s %12s %14s %16s %12s\n", "guided by", "search time", "GFLOP/s", "vs OpenBLAS", "90% after");
  std::printf("  %-16s %10.0f s %14.1f %16.3f %8lld tr.\n", "est_cycles", est.seconds, flops / ra.ours_s / 1e9, ra.ratio,
              (long long)est.trials_to_90);
  std::printf("  %-16s %10.0f s %14.1f %16.3f %8lld tr.\n", "runtime", measured.seconds, flops / rb.ours_s / 1e9,
              rb.ratio, (long long)measured.trials_to_90);
  std::printf("  est_cycles-guided best schedule:\n%s", est.best_trace.c_str());
  write_plot(f, "search_est_cycles_gmm4.svg", {{"est_cycles-guided (estimated)", est.curve}},
             uri + ": est_cycles-guided search, best-so-far estimated GFLOP/s");
}

#endif  // TENSORGYM_HAVE_BASELINES

}  // namespace
}  // namespace tensorgym

int main(int argc, char** argv) {
  using namespace tensorgym;
#if TENSORGYM_HAVE_BASELINES
  if (!std::getenv("OPENBLAS_CORETYPE")) {
    const std::string& feats = CpuTarget::host().features;
    const char* core = feats.find("+avx512f") != std::string::npos ? "SkylakeX"
                       : feats.find("+avx2") != std::string::npos  ? "Haswell"
                                                                   : "Prescott";
    setenv("OPENBLAS_CORETYPE", core, 1);
    execv("/proc/self/exe", argv);
    std::perror("re-running with OPENBLAS_CORETYPE set");
  }
#endif
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
#if TENSORGYM_HAVE_BASELINES
  try {
    const CpuTarget& t = CpuTarget::host();
    std::printf("host: %s, %s, %d-bit vectors, %d cores; OpenBLAS core %s; oneDNN %d.%d; seed %llu\n",
                t.triple.c_str(), t.cpu_name.c_str(), t.vector_bits, t.num_cores, std::getenv("OPENBLAS_CORETYPE"),
                DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR, (unsigned long long)f.seed);
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
#else
  std::cerr << "search_benchmark: built without OpenBLAS / oneDNN; nothing to compare against\n";
  return 1;
#endif
}
