// TensorGym's convolution kernels on the GPU beside cuDNN's forward convolution (FP32,
// FMA math: no tensor cores, no TF32), in the same process, on the same inputs, timed by
// the same device-clock protocol (codegen/measure/device_timing.h: events around the
// kernels alone, warm-up, calibration) in alternating rounds, TensorGym then cuDNN, so
// that a drift of the GPU's clocks touches both alike. Before timing, each side's output
// is checked against the reference evaluator at sampled points, and the two against
// each other elementwise.
//
//   gpu_conv_vs_cudnn [--benchmarks c2d-1,c2d-1-b16,...] [--no-expert] [--rounds 5]
//                     [--json FILE]
//
// The rows: the ResNet 3x3 layer with its expert GPU schedule
// (datasets/ops/conv2d_resnet_3x3.{tg,cuda.sched}; its ReLU applied to cuDNN's output
// on the host, outside the timing), then each ops-v0 benchmark with its expert schedule
// where it has one, else the default GPU schedule (codegen/lower/default_gpu_schedule.h).
// Prints a markdown table. Exit status 0 only when every row ran and was correct;
// without a GPU it compiles the kernels, says why nothing runs and exits 1.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "benchmarks/read_text.h"
#include "codegen/backend/registry.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/lower/default_gpu_schedule.h"
#include "codegen/measure/device_timing.h"
#include "codegen/measure/measure_job.h"
#include "codegen/measure/runner_settings.h"
#include "datasets/registry.h"

#ifndef TENSORGYM_SOURCE_DIR
#define TENSORGYM_SOURCE_DIR "."
#endif

namespace tensorgym {
namespace {

using Json = nlohmann::ordered_json;

// The expert row's program and schedule, and its shape in the suite's words.
constexpr const char* kExpertProgram = "datasets/ops/conv2d_resnet_3x3.tg";
constexpr const char* kExpertSchedule = "datasets/ops/conv2d_resnet_3x3.cuda.sched";
constexpr const char* kExpertShape = "N=1 H=56 W=56 CI=64 CO=64 K=3 S=1 P=1";

struct Options {
  std::vector<std::string> benchmarks{"c2d-1",     "c2d-2",     "c2d-3",     "c2d-4",
                                      "c2d-1-b16", "c2d-2-b16", "c2d-3-b16", "c2d-4-b16"};
  bool expert = true;
  int rounds = 5;
  std::string json;
};

// One row: a program, its GPU schedule, and the convolution as cuDNN takes it.
struct Case {
  std::string name;
  std::string shape;  // "N=1 H=224 W=224 CI=3 CO=64 K=7 S=2 P=3"
  std::string program_text;
  std::string schedule_text;
  std::string schedule_kind;  // "expert" or "default"
  bool relu = false;          // the program's output is max(conv, 0)
  Conv2dParams params;
};

// The suite's shape text as cuDNN's parameters (square kernels, symmetric padding).
Expected<Conv2dParams> parse_shape(const std::string& shape) {
  std::map<std::string, int64_t> v;
  std::stringstream in(shape);
  for (std::string token; in >> token;) {
    const size_t eq = token.find('=');
    if (eq == std::string::npos) return invalid_argument("shape token without '=': " + token);
    v[token.substr(0, eq)] = std::atoll(token.c_str() + eq + 1);
  }
  for (const char* key : {"N", "H", "W", "CI", "CO", "K", "S", "P"})
    if (!v.count(key)) return invalid_argument(fmt::format("shape \"{}\" lacks {}", shape, key));
  if (v.count("D")) return invalid_argument("a 3-D convolution (D=) is not a 2-D one: " + shape);
  Conv2dParams p;
  p.batch = v["N"], p.height = v["H"], p.width = v["W"];
  p.in_channels = v["CI"], p.out_channels = v["CO"];
  p.kernel_h = p.kernel_w = v["K"];
  p.stride_h = p.stride_w = v["S"];
  p.pad_h = p.pad_w = v["P"];
  p.dilation_h = p.dilation_w = v.count("DIL") ? v["DIL"] : 1;
  p.groups = v.count("G") ? v["G"] : 1;
  return p;
}

Expected<Case> expert_case() {
  Case c{.name = "resnet-3x3", .shape = kExpertShape, .schedule_kind = "expert", .relu = true};
  TG_ASSIGN_OR_RETURN(c.program_text, read_text(std::string(TENSORGYM_SOURCE_DIR) + "/" + kExpertProgram));
  TG_ASSIGN_OR_RETURN(c.schedule_text, read_text(std::string(TENSORGYM_SOURCE_DIR) + "/" + kExpertSchedule));
  TG_ASSIGN_OR_RETURN(c.params, parse_shape(c.shape));
  return c;
}

Expected<Case> suite_case(const std::string& name, const Backend& cuda) {
  TG_ASSIGN_OR_RETURN(Benchmark b, DatasetRegistry::global().resolve("benchmark://ops-v0/" + name));
  Case c{.name = name, .shape = b.shape, .program_text = b.program_text};
  TG_ASSIGN_OR_RETURN(c.params, parse_shape(b.shape));
  if (!b.expert_schedule.empty()) {
    c.schedule_text = b.expert_schedule, c.schedule_kind = "expert";
  } else {
    TG_ASSIGN_OR_RETURN(Schedule s, default_gpu_schedule(b.program, cuda.lowering()));
    c.schedule_text = s.trace().to_string(), c.schedule_kind = "default";
  }
  return c;
}

// Largest |a - b| / (|b| + 1) over the elements.
double max_relative_difference(const HostBuffer& a, const HostBuffer& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i)
    worst = std::max(worst, std::abs(a.get_float(i) - b.get_float(i)) / (std::abs(b.get_float(i)) + 1));
  return worst;
}

Json timing_json(const TimingStats& t, double flops) {
  return Json{
      {"median_s", t.median_s}, {"cv", t.cv}, {"samples", t.samples_s.size()}, {"gflops", flops / t.median_s / 1e9}};
}

// `rounds` rounds, each one calibrated sample of TensorGym's kernels then one of
// cuDNN's; the statistics of each side's samples.
Status time_alternating(const Executable& ours, void* const* args, const Executable& library, void* const* library_args,
                        int rounds, TimingStats& t_ours, TimingStats& t_lib) {
  TimingOptions timing;
  timing.warmup_runs = 2;
  timing.repeat = 2;
  timing.min_repeat_ms = 20;
  std::vector<double> ours_s, lib_s;
  int ours_number = 1, lib_number = 1;
  for (int r = 0; r < rounds; ++r) {
    TG_ASSIGN_OR_RETURN(TimingStats a, time_on_device(ours, args, timing));
    TG_ASSIGN_OR_RETURN(TimingStats b, time_on_device(library, library_args, timing));
    ours_s.insert(ours_s.end(), a.samples_s.begin(), a.samples_s.end());
    lib_s.insert(lib_s.end(), b.samples_s.begin(), b.samples_s.end());
    ours_number = a.number, lib_number = b.number;
  }
  TG_ASSIGN_OR_RETURN(t_ours, summarize_samples(ours_s, ours_number));
  TG_ASSIGN_OR_RETURN(t_lib, summarize_samples(lib_s, lib_number));
  return Status();
}

// One row: compiled; where the GPU and cuDNN are here, checked and timed beside cuDNN.
// UNAVAILABLE (with the row so far in `row`) where they are not.
Status compare(const Backend& cuda, const Case& c, const Options& o, Json& row) {
  row = Json{{"benchmark", c.name},
             {"shape", c.shape},
             {"schedule_kind", c.schedule_kind},
             {"schedule", c.schedule_text},
             {"flops", c.params.flops()}};
  TG_ASSIGN_OR_RETURN(InstantiatedJob job, instantiate_job(c.program_text, c.schedule_text, "cuda"));
  TG_ASSIGN_OR_RETURN(std::shared_ptr<const Executable> ours, cuda.compile(job.nest));
  row["kernels"] = ours->kernels().size();
  row["compile_ms"] = ours->compile_ms();
  if (!cuda.target().can_run) return Status(StatusCode::kUnavailable, cuda.target().run_unavailable);
  TG_ASSIGN_OR_RETURN(std::shared_ptr<const Executable> cudnn, cuda.library_conv2d(c.params));
  row["cudnn_algorithm"] = cudnn->remarks().empty() ? "" : cudnn->remarks().front();
  row["cudnn_tried"] = std::vector<std::string>(cudnn->remarks().begin() + std::min<size_t>(1, cudnn->remarks().size()),
                                                cudnn->remarks().end());

  // The program's inputs are {X, W}; its one output is the convolution (or its ReLU).
  std::vector<HostBuffer> inputs = make_random_inputs(*job.program, 1);
  std::vector<HostBuffer> outputs = make_output_buffers(job.nest);
  if (inputs.size() != 2 || outputs.size() != 1)
    return invalid_argument(fmt::format("{}: a convolution program has inputs X, W and one output", c.name));
  const Conv2dParams& p = c.params;
  std::vector<HostBuffer> library_out;
  library_out.emplace_back(outputs[0].dtype(),
                           std::vector<int64_t>{p.batch, p.out_channels, p.out_height(), p.out_width()});
  if (library_out[0].num_elements() != outputs[0].num_elements())
    return invalid_argument(fmt::format("{}: the shape {} does not give the program's output size", c.name, c.shape));
  std::vector<void*> args{inputs[0].data(), inputs[1].data(), outputs[0].data()};
  std::vector<void*> library_args{inputs[0].data(), inputs[1].data(), library_out[0].data()};
  TG_RETURN_IF_ERROR(ours->run_checked(args.data(), 0));
  TG_RETURN_IF_ERROR(cudnn->run_checked(library_args.data(), 0));

  // cuDNN's output as the program's: its ReLU applied here where the program has one.
  std::vector<HostBuffer> library_result = library_out;
  if (c.relu)
    for (int64_t i = 0; i < library_result[0].num_elements(); ++i)
      library_result[0].set_float(i, std::max(0.0, library_result[0].get_float(i)));
  TG_ASSIGN_OR_RETURN(RunnerSettings settings, resolve_runner_settings({}));
  const std::string output = job.nest.outputs[0].name;
  const MeasureResult checked = check_outputs(*job.program, {output}, inputs, outputs, settings);
  const MeasureResult library_checked = check_outputs(*job.program, {output}, inputs, library_result, settings);
  row["correct"] = checked.ok();
  row["cudnn_correct"] = library_checked.ok();
  if (!checked.ok()) row["error"] = checked.error_message;
  if (!library_checked.ok()) row["cudnn_error"] = library_checked.error_message;
  row["max_relative_difference_vs_cudnn"] = max_relative_difference(outputs[0], library_result[0]);
  if (!checked.ok() || !library_checked.ok()) return Status();  // wrong answers are not timed

  TimingStats t_ours, t_lib;
  TG_RETURN_IF_ERROR(time_alternating(*ours, args.data(), *cudnn, library_args.data(), o.rounds, t_ours, t_lib));
  row["tensorgym"] = timing_json(t_ours, p.flops());
  row["cudnn"] = timing_json(t_lib, p.flops());
  row["ratio_tensorgym_over_cudnn"] = t_ours.median_s / t_lib.median_s;
  return Status();
}

std::string table_line(const Json& r) {
  const auto ms = [](const Json& t) { return fmt::format("{:.3f}", t["median_s"].get<double>() * 1e3); };
  const auto gflops = [](const Json& t) { return fmt::format("{:.0f}", t["gflops"].get<double>()); };
  std::string algorithm = r.value("cudnn_algorithm", "");
  if (size_t a = algorithm.find("ALGO_"); a != std::string::npos)
    algorithm = algorithm.substr(a + 5, algorithm.find(',', a) - a - 5);
  const bool timed = r.contains("tensorgym");
  const std::string verdict = !r.value("correct", false)         ? "WRONG"
                              : !r.value("cudnn_correct", false) ? "cuDNN WRONG"
                                                                 : "yes";
  return fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1e} |", r["benchmark"].get<std::string>(),
                     r["shape"].get<std::string>(), r["schedule_kind"].get<std::string>(),
                     timed ? ms(r["tensorgym"]) : "-", timed ? gflops(r["tensorgym"]) : "-",
                     timed ? ms(r["cudnn"]) : "-", timed ? gflops(r["cudnn"]) : "-", algorithm,
                     timed ? fmt::format("{:.2f}", r["ratio_tensorgym_over_cudnn"].get<double>()) : "-", verdict,
                     r.value("max_relative_difference_vs_cudnn", 0.0));
}

int run(const Options& o) {
  Expected<const Backend*> cuda = find_backend("cuda");
  if (!cuda.ok()) {
    fmt::print(stderr, "{}\n", cuda.status().to_string());
    return 1;
  }
  std::vector<Expected<Case>> cases;
  if (o.expert) cases.push_back(expert_case());
  for (const std::string& name : o.benchmarks) cases.push_back(suite_case(name, **cuda));

  Json rows = Json::array();
  std::vector<std::string> lines, skipped;
  bool failed = false;
  for (const Expected<Case>& c : cases) {
    if (!c.ok()) {
      fmt::print(stderr, "{}\n", c.status().to_string());
      failed = true;
      continue;
    }
    Json row;
    const Status s = compare(**cuda, *c, o, row);
    if (!s.ok()) {
      row["error"] = s.to_string();
      if (s.code() == StatusCode::kUnavailable) {
        fmt::print("{}: compiled ({} kernels); skipped: {}\n", c->name, row.value("kernels", 0), s.message());
        skipped.push_back(s.message());
      } else {
        fmt::print(stderr, "{}: {}\n", c->name, s.to_string());
        failed = true;
      }
      rows.push_back(row);
      continue;
    }
    failed |= !row["correct"].get<bool>() || !row["cudnn_correct"].get<bool>();
    lines.push_back(table_line(row));
    rows.push_back(row);
  }
  if (!lines.empty()) {
    fmt::print(
        "\n| benchmark | shape | schedule | TensorGym ms | TensorGym GFLOP/s | cuDNN ms | cuDNN GFLOP/s | cuDNN "
        "algorithm | TensorGym time / cuDNN time | correct | max rel. diff vs cuDNN |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (const std::string& l : lines) fmt::print("{}\n", l);
    fmt::print("\nGFLOP/s count the convolution's multiply-adds (2 per term); medians of {} alternating rounds.\n",
               o.rounds);
  }
  if (!o.json.empty()) {
    std::ofstream out(o.json);
    out << Json{{"rounds", o.rounds}, {"rows", rows}}.dump(2) << "\n";
  }
  // Nothing measured is not a pass: a GPU session that skipped every row says so.
  if (!skipped.empty())
    fmt::print(stderr, "{} of {} rows not measured: {}\n", skipped.size(), cases.size(), skipped[0]);
  return failed || !skipped.empty() ? 1 : 0;
}

}  // namespace
}  // namespace tensorgym

int main(int argc, char** argv) {
  tensorgym::Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--no-expert") {
      o.expert = false;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", argv[i]);
      return 2;
    }
    const std::string value = argv[++i];
    if (flag == "--benchmarks") {
      o.benchmarks.clear();
      std::stringstream in(value);
      for (std::string part; std::getline(in, part, ',');)
        if (!part.empty()) o.benchmarks.push_back(part);
    } else if (flag == "--rounds") {
      o.rounds = std::max(1, std::atoi(value.c_str()));
    } else if (flag == "--json") {
      o.json = value;
    } else {
      std::fprintf(stderr, "unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  return tensorgym::run(o);
}
