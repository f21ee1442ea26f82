// Kernel quality against the vendor libraries, side by side in one process: the
// expert schedules of datasets/ops/ compiled by the LLVM backend, OpenBLAS sgemm and
// oneDNN matmul / convolution, all timed with the runner protocol
// (codegen/measure/timing.h), alternating A and B in every round; the ratios are
// medians of per-round ratios.
//
//   build/bin/kernel_quality [--rounds 5] [--threads 1,2]
//
// OpenBLAS 0.3.21 does not recognize every recent CPU and then falls back to its
// generic SSE3 kernels; unless OPENBLAS_CORETYPE is set, the program re-runs itself
// with the best core type the host supports (SkylakeX with AVX-512, else Haswell), so
// the baseline is OpenBLAS at its best.
#include <cblas.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <oneapi/dnnl/dnnl.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/analysis/op_count.h"
#include "codegen/cpu/cpu_backend.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/lower/lower.h"
#include "codegen/measure/timing.h"

namespace tensorgym {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Compiled {
  ProgramPtr program;
  std::shared_ptr<const CpuKernel> kernel;
  std::vector<HostBuffer> inputs, outputs;
  std::vector<void*> args;
  double flops = 0;
};

Compiled compile_expert(const std::string& program_file, const std::string& schedule_file) {
  Compiled c;
  Expected<Program> p = parse_program(read_file(program_file));
  if (!p.ok()) throw std::runtime_error(program_file + ": " + p.status().to_string());
  c.program = std::make_shared<const Program>(std::move(*p));
  Expected<Schedule> s = Schedule::from_text(c.program, read_file(schedule_file));
  if (!s.ok()) throw std::runtime_error(schedule_file + ": " + s.status().to_string());
  Expected<LoopNest> nest = lower(*s);
  if (!nest.ok()) throw std::runtime_error(nest.status().to_string());
  auto kernel = compile_cpu_kernel(*nest);
  if (!kernel.ok()) throw std::runtime_error(kernel.status().to_string());
  c.kernel = *kernel;
  c.inputs = make_random_inputs(*c.program, 1);
  c.outputs = make_output_buffers(*nest);
  for (HostBuffer& b : c.inputs) c.args.push_back(b.data());
  for (HostBuffer& b : c.outputs) c.args.push_back(b.data());
  c.flops = count_ops(*c.program).flops;
  return c;
}

double time_median(const std::function<void()>& fn) {
  TimingOptions opts;
  opts.repeat = 5;
  opts.min_repeat_ms = 50;
  Expected<TimingStats> t = time_runs(fn, opts);
  if (!t.ok()) throw std::runtime_error(t.status().to_string());
  return t->median_s;
}

double max_abs_diff(const float* a, const float* b, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, double(std::fabs(a[i] - b[i])));
  return m;
}

struct Row {
  std::string workload;
  int threads;
  std::string baseline;
  double ours_gflops, base_gflops, ratio;
  double max_error;
};

// Times ours and each baseline alternately for `rounds` rounds.
void compare(const std::string& workload, int threads, double flops, const std::function<void()>& ours,
             const std::vector<std::pair<std::string, std::function<void()>>>& baselines, int rounds,
             const std::vector<double>& errors, std::vector<Row>* rows) {
  std::vector<double> t_ours;
  std::vector<std::vector<double>> t_base(baselines.size()), ratios(baselines.size());
  for (int r = 0; r < rounds; ++r) {
    double a = time_median(ours);
    t_ours.push_back(a);
    for (size_t b = 0; b < baselines.size(); ++b) {
      double t = time_median(baselines[b].second);
      t_base[b].push_back(t);
      ratios[b].push_back(t / a);  // our throughput over the baseline's
    }
  }
  for (size_t b = 0; b < baselines.size(); ++b) {
    rows->push_back({workload, threads, baselines[b].first, flops / median(t_ours) / 1e9,
                     flops / median(t_base[b]) / 1e9, median(ratios[b]), errors[b]});
  }
}

void run(int rounds, const std::vector<int>& thread_counts) {
  std::vector<Row> rows;
  const std::string root = TENSORGYM_SOURCE_DIR;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;

  // --- GEMM 1024^3 ---------------------------------------------------------------
  Compiled gemm = compile_expert(root + "/datasets/ops/gemm_1024.tg", root + "/datasets/ops/gemm_1024.expert.sched");
  std::vector<double> compile_ms;
  for (int i = 0; i < 7; ++i) {
    Compiled again = compile_expert(root + "/datasets/ops/gemm_1024.tg", root + "/datasets/ops/gemm_1024.expert.sched");
    compile_ms.push_back(again.kernel->compile_ms());
  }
  const int n = 1024;
  const float* A = gemm.inputs[0].typed<float>();
  const float* B = gemm.inputs[1].typed<float>();
  HostBuffer c_blas(DataType::f32(), {n, n}), c_dnnl(DataType::f32(), {n, n});
  dnnl::memory::desc a_md({n, n}, dt::f32, tag::ab), b_md({n, n}, dt::f32, tag::ab), c_md({n, n}, dt::f32, tag::ab);
  dnnl::memory a_mem(a_md, engine, const_cast<float*>(A)), b_mem(b_md, engine, const_cast<float*>(B)),
      c_mem(c_md, engine, c_dnnl.data());

  for (int threads : thread_counts) {
    openblas_set_num_threads(threads);
    // oneDNN takes its thread count when a primitive is created.
    omp_set_num_threads(threads);
    dnnl::matmul matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), engine));
    auto ours = [&] { gemm.kernel->run(gemm.args.data(), threads); };
    auto blas = [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f, c_blas.typed<float>(), n);
    };
    auto onednn = [&] {
      matmul.execute(stream, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
      stream.wait();
    };
    ours();
    blas();
    onednn();
    const float* C = gemm.outputs[0].typed<float>();
    compare("gemm 1024^3", threads, gemm.flops, ours, {{"OpenBLAS", blas}, {"oneDNN", onednn}}, rounds,
            {max_abs_diff(C, c_blas.typed<float>(), n * n), max_abs_diff(C, c_dnnl.typed<float>(), n * n)}, &rows);
  }

  // --- conv2d 3x3, 64 -> 64, 56 x 56, pad 1, ReLU -----------------------------------------
  Compiled conv =
      compile_expert(root + "/datasets/ops/conv2d_resnet_3x3.tg", root + "/datasets/ops/conv2d_resnet_3x3.expert.sched");
  dnnl::memory::dims src_dims = {1, 64, 56, 56}, w_dims = {64, 64, 3, 3}, dst_dims = {1, 64, 56, 56};
  dnnl::memory::desc src_any(src_dims, dt::f32, tag::any), w_any(w_dims, dt::f32, tag::any),
      dst_any(dst_dims, dt::f32, tag::any);
  HostBuffer y_user(DataType::f32(), {1, 64, 56, 56});
  for (int threads : thread_counts) {
    omp_set_num_threads(threads);
    dnnl::post_ops relu;
    relu.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(relu);
    dnnl::convolution_forward::primitive_desc conv_pd(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_any,
                                        w_any, dst_any, {1, 1}, {1, 1}, {1, 1}),
        attr, engine);
    // Inputs reordered once into oneDNN's preferred (blocked) layouts, outside the timing.
    dnnl::memory x_user({src_dims, dt::f32, tag::nchw}, engine, conv.inputs[0].data());
    dnnl::memory w_user({w_dims, dt::f32, tag::oihw}, engine, conv.inputs[1].data());
    dnnl::memory y_user_mem({dst_dims, dt::f32, tag::nchw}, engine, y_user.data());
    dnnl::memory x_mem(conv_pd.src_desc(), engine), w_mem(conv_pd.weights_desc(), engine),
        y_mem(conv_pd.dst_desc(), engine);
    dnnl::reorder(x_user, x_mem).execute(stream, x_user, x_mem);
    dnnl::reorder(w_user, w_mem).execute(stream, w_user, w_mem);
    stream.wait();
    dnnl::convolution_forward conv_prim(conv_pd);
    auto ours = [&] { conv.kernel->run(conv.args.data(), threads); };
    auto onednn = [&] {
      conv_prim.execute(stream, {{DNNL_ARG_SRC, x_mem}, {DNNL_ARG_WEIGHTS, w_mem}, {DNNL_ARG_DST, y_mem}});
      stream.wait();
    };
    ours();
    onednn();
    dnnl::reorder(y_mem, y_user_mem).execute(stream, y_mem, y_user_mem);
    stream.wait();
    // Only the multiply-adds count as work, as for the vendor libraries.
    double conv_flops = 2.0 * 64 * 64 * 56 * 56 * 9;
    compare("conv2d 3x3 64->64 56x56", threads, conv_flops, ours, {{"oneDNN", onednn}}, rounds,
            {max_abs_diff(conv.outputs[0].typed<float>(), y_user.typed<float>(), 64 * 56 * 56)}, &rows);
  }

  const CpuTarget& t = CpuTarget::host();
  std::printf("host: %s, %s, %d-bit vectors, %d cores; LLVM %s; OpenBLAS core %s; oneDNN %d.%d\n", t.triple.c_str(),
              t.cpu_name.c_str(), t.vector_bits, t.num_cores, t.llvm_version.c_str(), std::getenv("OPENBLAS_CORETYPE"),
              DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR);
  std::printf("%-26s %7s  %-9s %12s %12s %8s %10s\n", "workload", "threads", "baseline", "ours GF/s", "base GF/s",
              "ratio", "max err");
  for (const Row& r : rows)
    std::printf("%-26s %7d  %-9s %12.1f %12.1f %8.3f %10.2g\n", r.workload.c_str(), r.threads, r.baseline.c_str(),
                r.ours_gflops, r.base_gflops, r.ratio, r.max_error);
  std::printf("GEMM expert schedule compile time: median %.1f ms over %zu compiles\n", median(compile_ms),
              compile_ms.size());
}

}  // namespace
}  // namespace tensorgym

int main(int argc, char** argv) {
  if (!std::getenv("OPENBLAS_CORETYPE")) {
    const std::string& f = tensorgym::CpuTarget::host().features;
    const char* core = f.find("+avx512f") != std::string::npos ? "SkylakeX"
                       : f.find("+avx2") != std::string::npos ? "Haswell"
                                                              : "Prescott";
    setenv("OPENBLAS_CORETYPE", core, 1);
    execv("/proc/self/exe", argv);
    std::perror("re-running with OPENBLAS_CORETYPE set");
  }
  int rounds = 5;
  std::vector<int> threads = {1, 2};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    if (a == "--threads" && i + 1 < argc) {
      threads.clear();
      std::stringstream ss(argv[++i]);
      std::string item;
      while (std::getline(ss, item, ',')) threads.push_back(std::atoi(item.c_str()));
    }
  }
  try {
    tensorgym::run(rounds, threads);
  } catch (const std::exception& e) {
    std::cerr << "kernel_quality: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
