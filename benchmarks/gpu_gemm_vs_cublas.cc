// A TensorGym GEMM kernel on the GPU beside cuBLAS SGEMM (FP32, no tensor cores), in the
// same process, on the same inputs, timed by the same device-clock protocol
// (codegen/measure/device_timing.h: events around the kernels alone, warm-up, repeats,
// median). Each size's outputs are checked against the reference evaluator at sampled
// points, and against cuBLAS's elementwise.
//
//   gpu_gemm_vs_cublas [--sizes 1024,4096] [--schedule-file S] [--repeat 10] [--json FILE]
//
// The default schedule is a hand one (tiles of 16 x 32 outputs per block, one output per
// thread, the reduction in a register). Without a GPU it compiles the kernels, says why
// nothing runs and exits 0.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/backend/registry.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/lower/lower.h"
#include "codegen/measure/device_timing.h"
#include "codegen/measure/measure_job.h"
#include "codegen/measure/runner_settings.h"

namespace tensorgym {
namespace {

constexpr const char* kHandSchedule =
    "split(C.i, 16, io, ii)\n"
    "split(C.j, 32, jo, ji)\n"
    "reorder(C, io, jo, ii, ji, k)\n"
    "bind(C.io, blockIdx.y)\n"
    "bind(C.jo, blockIdx.x)\n"
    "bind(C.ii, threadIdx.y)\n"
    "bind(C.ji, threadIdx.x)\n"
    "cache_write(C, CL)\n"
    "compute_at(CL, C.ji)\n";

struct Options {
  std::vector<int64_t> sizes{1024, 4096};
  std::string schedule = kHandSchedule;
  int repeat = 10;
  std::string json;
};

// Largest |a - b| / (|b| + 1) over the elements.
double max_relative_difference(const HostBuffer& a, const HostBuffer& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i)
    worst = std::max(worst, std::abs(a.get_float(i) - b.get_float(i)) / (std::abs(b.get_float(i)) + 1));
  return worst;
}

Expected<TimingStats> time_kernels(const Executable& exe, void* const* args, int repeat) {
  TimingOptions timing;
  timing.warmup_runs = 2;
  timing.repeat = repeat;
  timing.min_repeat_ms = 50;
  return time_on_device(exe, args, timing);
}

// One size: compiled, checked, timed beside cuBLAS. Returns the row, or an error.
Expected<nlohmann::json> compare(const Backend& cuda, int64_t n, const Options& o) {
  const std::string program =
      fmt::format("input A: f32[{0}, {0}]\ninput B: f32[{0}, {0}]\nC[i, j] += A[i, k] * B[k, j]\n", n);
  TG_ASSIGN_OR_RETURN(InstantiatedJob job, instantiate_job(program, o.schedule, "cuda"));
  TG_ASSIGN_OR_RETURN(std::shared_ptr<const Executable> ours, cuda.compile(job.nest));
  nlohmann::json row = {{"size", n}, {"compile_ms", ours->compile_ms()}};
  const DeviceKernel& k = ours->kernels().at(0);
  row["kernel"] = {{"blocks", {k.blocks[0], k.blocks[1], k.blocks[2]}},
                   {"threads", {k.threads[0], k.threads[1], k.threads[2]}},
                   {"registers", k.assembled ? nlohmann::json(k.registers) : nlohmann::json(nullptr)}};
  if (!cuda.target().can_run) return Status(StatusCode::kUnavailable, cuda.target().run_unavailable);

  std::vector<HostBuffer> inputs = make_random_inputs(*job.program, 1);
  std::vector<HostBuffer> outputs = make_output_buffers(job.nest), library_out = make_output_buffers(job.nest);
  std::vector<void*> args{inputs[0].data(), inputs[1].data(), outputs[0].data()};
  std::vector<void*> library_args{inputs[0].data(), inputs[1].data(), library_out[0].data()};
  TG_RETURN_IF_ERROR(ours->run_checked(args.data(), 0));
  TG_ASSIGN_OR_RETURN(std::shared_ptr<const Executable> cublas, cuda.library_matmul(n, n, n));
  TG_RETURN_IF_ERROR(cublas->run_checked(library_args.data(), 0));

  TG_ASSIGN_OR_RETURN(RunnerSettings settings, resolve_runner_settings({}));
  const MeasureResult checked = check_outputs(*job.program, {"C"}, inputs, outputs, settings);
  const MeasureResult library_checked = check_outputs(*job.program, {"C"}, inputs, library_out, settings);
  row["correct"] = checked.ok();
  row["cublas_correct"] = library_checked.ok();
  if (!checked.ok()) row["error"] = checked.error_message;
  row["max_relative_difference_vs_cublas"] = max_relative_difference(outputs[0], library_out[0]);

  TG_ASSIGN_OR_RETURN(TimingStats t_ours, time_kernels(*ours, args.data(), o.repeat));
  TG_ASSIGN_OR_RETURN(TimingStats t_lib, time_kernels(*cublas, library_args.data(), o.repeat));
  const double flops = 2.0 * double(n) * double(n) * double(n);
  row["tensorgym"] = {{"median_s", t_ours.median_s}, {"cv", t_ours.cv}, {"gflops", flops / t_ours.median_s / 1e9}};
  row["cublas"] = {{"median_s", t_lib.median_s}, {"cv", t_lib.cv}, {"gflops", flops / t_lib.median_s / 1e9}};
  row["ratio_tensorgym_over_cublas"] = t_ours.median_s / t_lib.median_s;
  return row;
}

int run(const Options& o) {
  Expected<const Backend*> cuda = find_backend("cuda");
  if (!cuda.ok()) {
    std::fprintf(stderr, "%s\n", cuda.status().to_string().c_str());
    return 1;
  }
  nlohmann::json rows = nlohmann::json::array();
  bool failed = false;
  for (int64_t n : o.sizes) {
    Expected<nlohmann::json> row = compare(**cuda, n, o);
    if (!row.ok() && row.status().code() == StatusCode::kUnavailable) {
      fmt::print("GEMM {0}x{0}x{0}: skipped: {1}\n", n, row.status().message());
      continue;
    }
    if (!row.ok()) {
      fmt::print(stderr, "GEMM {0}x{0}x{0}: {1}\n", n, row.status().to_string());
      failed = true;
      continue;
    }
    const nlohmann::json& r = *row;
    fmt::print(
        "GEMM {0}x{0}x{0}: TensorGym {1:.3f} ms ({2:.0f} GFLOP/s, {3}), cuBLAS {4:.3f} ms ({5:.0f} GFLOP/s): "
        "{6:.2f}x cuBLAS's time; max relative difference {7:.2e}\n",
        n, r["tensorgym"]["median_s"].get<double>() * 1e3, r["tensorgym"]["gflops"].get<double>(),
        r["correct"].get<bool>() ? "correct" : "WRONG", r["cublas"]["median_s"].get<double>() * 1e3,
        r["cublas"]["gflops"].get<double>(), r["ratio_tensorgym_over_cublas"].get<double>(),
        r["max_relative_difference_vs_cublas"].get<double>());
    failed |= !r["correct"].get<bool>();
    rows.push_back(r);
  }
  if (!o.json.empty()) {
    std::ofstream out(o.json);
    out << nlohmann::json{{"schedule", o.schedule}, {"rows", rows}}.dump(2) << "\n";
  }
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace tensorgym

int main(int argc, char** argv) {
  tensorgym::Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--sizes") {
      o.sizes.clear();
      std::stringstream in(value);
      for (std::string part; std::getline(in, part, ',');) o.sizes.push_back(std::atoll(part.c_str()));
    } else if (flag == "--schedule-file") {
      std::ifstream in(value);
      std::stringstream text;
      text << in.rdbuf();
      o.schedule = text.str();
    } else if (flag == "--repeat") {
      o.repeat = std::atoi(value.c_str());
    } else if (flag == "--json") {
      o.json = value;
    } else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  return tensorgym::run(o);
}
