// How well the GPU model (est_gpu_time, codegen/cuda/gpu_model.h) ranks the runtimes of
// random legal GPU schedules measured on a GPU: Spearman's rank correlation per program
// and over all of them (issue 40's target: at least 0.8 on 200 schedules).
//
//   gpu_model_correlation [--schedules 100] [--program FILE]... [--seed 1] [--repeat 3] [--json FILE]
//
// For each program (default: datasets/ops/gemm_1024.tg and conv2d_resnet_3x3.tg),
// draws --schedules random GPU schedules (codegen/lower/random_gpu_schedule.h: half of
// the matrix multiplications in shared-memory and register tiles), estimates each with
// the model, and where a GPU runs them compiles, checks the outputs against the
// reference and times the kernels on the device clock. Without a GPU it prints the
// model's side and says the correlation was not measured (exit status 0).
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "benchmarks/read_text.h"
#include "codegen/backend/registry.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/lower/lower.h"
#include "codegen/lower/random_gpu_schedule.h"
#include "codegen/measure/device_timing.h"
#include "codegen/measure/measure_job.h"
#include "codegen/measure/runner_settings.h"
#include "support/random.h"
#include "support/rank_correlation.h"

#ifndef TENSORGYM_SOURCE_DIR
#define TENSORGYM_SOURCE_DIR "."
#endif

namespace tensorgym {
namespace {

struct Options {
  int schedules = 100;
  std::vector<std::string> programs;
  uint64_t seed = 1;
  int repeat = 3;
  std::string json;
};

struct Sample {
  std::string trace;
  double estimate_s = 0;
  double measured_s = 0;  // 0: not measured
  std::string error;
};

// One schedule: the model's estimate, and where a GPU runs it, its checked runtime.
Sample evaluate(const Backend& cuda, const std::string& program_text, const std::string& trace, int repeat) {
  Sample s;
  s.trace = trace;
  Expected<InstantiatedJob> job = instantiate_job(program_text, trace, "cuda");
  if (!job.ok()) {
    s.error = job.status().to_string();
    return s;
  }
  Expected<Schedule> schedule = Schedule::from_text(job->program, trace);
  Expected<LoopNest> independent =
      schedule.ok() ? lower(*schedule, LowerOptions{.allow_thread_binding = true}) : Expected<LoopNest>(schedule.status());
  Expected<RuntimeEstimate> estimate =
      independent.ok() ? cuda.estimate_runtime(*independent) : Expected<RuntimeEstimate>(independent.status());
  if (!estimate.ok()) {
    s.error = estimate.status().to_string();
    return s;
  }
  s.estimate_s = estimate->seconds;
  if (!cuda.target().can_run) return s;
  Expected<std::shared_ptr<const Executable>> exe = cuda.compile(job->nest);
  if (!exe.ok()) {
    s.error = exe.status().to_string();
    return s;
  }
  std::vector<HostBuffer> inputs = make_random_inputs(*job->program, 1);
  std::vector<HostBuffer> outputs = make_output_buffers(job->nest);
  std::vector<void*> args;
  for (HostBuffer& b : inputs) args.push_back(b.data());
  for (HostBuffer& b : outputs) args.push_back(b.data());
  if (Status run = (*exe)->run_checked(args.data(), 0); !run.ok()) {
    s.error = run.to_string();
    return s;
  }
  std::vector<std::string> names;
  for (const BufferArg& out : job->nest.outputs) names.push_back(out.name);
  Expected<RunnerSettings> settings = resolve_runner_settings({});
  if (!settings.ok()) {
    s.error = settings.status().to_string();
    return s;
  }
  const MeasureResult checked = check_outputs(*job->program, names, inputs, outputs, *settings);
  if (!checked.ok()) {
    s.error = checked.error_message;
    return s;
  }
  TimingOptions timing;
  timing.warmup_runs = 1;
  timing.repeat = repeat;
  timing.min_repeat_ms = 5;
  Expected<TimingStats> t = time_on_device(**exe, args.data(), timing);
  if (!t.ok()) {
    s.error = t.status().to_string();
    return s;
  }
  s.measured_s = t->median_s;
  return s;
}

int run(const Options& o) {
  Expected<const Backend*> cuda = find_backend("cuda");
  if (!cuda.ok()) {
    std::fprintf(stderr, "%s\n", cuda.status().to_string().c_str());
    return 1;
  }
  const bool gpu = (*cuda)->target().can_run;
  if (!gpu) fmt::print("no GPU: the model's side only ({})\n", (*cuda)->target().run_unavailable);
  nlohmann::json report = nlohmann::json::array();
  std::vector<double> all_est, all_measured;
  for (const std::string& path : o.programs) {
    Expected<std::string> text = read_text(path);
    if (!text.ok()) {
      std::fprintf(stderr, "%s\n", text.status().to_string().c_str());
      return 1;
    }
    Expected<Program> parsed = parse_program(*text);
    if (!parsed.ok()) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), parsed.status().to_string().c_str());
      return 1;
    }
    auto program = std::make_shared<const Program>(std::move(*parsed));
    Rng rng(o.seed);
    std::vector<double> est, measured;
    int failed = 0;
    nlohmann::json rows = nlohmann::json::array();
    for (int i = 0; i < o.schedules; ++i) {
      Expected<Schedule> drawn = random_gpu_schedule(program, (*cuda)->lowering(), rng);
      if (!drawn.ok()) {
        std::fprintf(stderr, "%s: %s\n", path.c_str(), drawn.status().to_string().c_str());
        return 1;
      }
      const Sample s = evaluate(**cuda, *text, drawn->trace().to_string(), o.repeat);
      rows.push_back({{"trace", s.trace}, {"est_gpu_time_s", s.estimate_s}, {"measured_s", s.measured_s},
                      {"error", s.error}});
      if (!s.error.empty()) {
        ++failed;
        continue;
      }
      if (s.measured_s > 0) {
        est.push_back(s.estimate_s);
        measured.push_back(s.measured_s);
      }
    }
    all_est.insert(all_est.end(), est.begin(), est.end());
    all_measured.insert(all_measured.end(), measured.begin(), measured.end());
    if (gpu)
      fmt::print("{}: {} schedules, {} failed, Spearman {:.3f} on {} measured\n", path, o.schedules, failed,
                 spearman_correlation(est, measured), est.size());
    else
      fmt::print("{}: {} schedules modelled, {} failed\n", path, o.schedules, failed);
    report.push_back({{"program", path},
                      {"spearman", gpu ? nlohmann::json(spearman_correlation(est, measured)) : nlohmann::json(nullptr)},
                      {"schedules", rows}});
  }
  if (gpu)
    fmt::print("all: Spearman {:.3f} on {} measured schedules\n", spearman_correlation(all_est, all_measured),
               all_est.size());
  if (!o.json.empty()) std::ofstream(o.json) << nlohmann::json{{"programs", report}}.dump(2) << "\n";
  return 0;
}

}  // namespace
}  // namespace tensorgym

int main(int argc, char** argv) {
  tensorgym::Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--schedules") {
      o.schedules = std::atoi(value.c_str());
    } else if (flag == "--program") {
      o.programs.push_back(value);
    } else if (flag == "--seed") {
      o.seed = std::strtoull(value.c_str(), nullptr, 10);
    } else if (flag == "--repeat") {
      o.repeat = std::atoi(value.c_str());
    } else if (flag == "--json") {
      o.json = value;
    } else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (o.programs.empty())
    o.programs = {std::string(TENSORGYM_SOURCE_DIR) + "/datasets/ops/gemm_1024.tg",
                  std::string(TENSORGYM_SOURCE_DIR) + "/datasets/ops/conv2d_resnet_3x3.tg"};
  return tensorgym::run(o);
}
