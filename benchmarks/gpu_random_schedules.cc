// Random GPU schedules of every ops-v0 family at the suite's sizes, for the cuda
// target: each lowered (its checks), compiled to PTX and assembled by ptxas for sm_90
// (registers and spills recorded), modelled (est_gpu_time), and run by the reference
// interpreter and checked against the reference evaluator: whole up to
// --interp-max-flops, above it with --sample-blocks blocks per blockIdx loop (the
// written points checked, a run past 2^28 steps left unchecked; 0 skips them).
//
//   build/bin/gpu_random_schedules [--schedules 50] [--seed 1] [--interp-max-flops 2e7]
//                                  [--sample-blocks 2] [--jsonl FILE]
//
// Prints a table by family; --jsonl writes one line per schedule (benchmark, seed,
// trace, kernels with their launch, registers and spills, est_gpu_time_s, checked).
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "codegen/analysis/op_count.h"
#include "codegen/backend/registry.h"
#include "codegen/interp/compare.h"
#include "codegen/interp/evaluator.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/interp/interpreter.h"
#include "codegen/lower/random_gpu_schedule.h"
#include "datasets/registry.h"

namespace tensorgym {
namespace {

using Json = nlohmann::ordered_json;

// One benchmark per family: the first shape, batch 1 (the norm: batch 16, whose
// threads each have a matrix; at batch 1 it is one sum across threads).
const char* const kBenchmarks[] = {"gmm-1", "c1d-1", "c2d-1", "c3d-1", "grp-1",
                                   "dil-1", "dep-1", "t2d-1", "cap-1", "nrm-1-b16"};

struct Row {
  int drawn = 0, lowered = 0, checked = 0, matched = 0, over_cap = 0, assembled = 0, spilled = 0;
  std::vector<int> registers;
  std::vector<double> seconds;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

enum class Check { kMatched, kMismatched, kOverCap };

// Whether the GPU nest computes what the program says (interpreter vs evaluator).
// With sample_blocks > 0 only sampled blocks run, into NaN-filled outputs
// (make_output_buffers), and only the points they wrote are compared; a sampled run
// past kSampledMaxSteps (a kernel of few, large blocks) is left unchecked.
constexpr int64_t kSampledMaxSteps = int64_t(1) << 28;

Check check(const Program& program, const LoopNest& nest, int64_t sample_blocks) {
  std::vector<HostBuffer> inputs = make_random_inputs(program, 7);
  std::vector<HostBuffer> outputs = make_output_buffers(nest);
  InterpreterOptions options;
  options.sample_blocks = sample_blocks;
  if (sample_blocks > 0) options.max_steps = kSampledMaxSteps;
  const Status run = interpret(nest, const_pointers(inputs), pointers(outputs), options);
  if (sample_blocks > 0 && run.code() == StatusCode::kResourceExhausted) return Check::kOverCap;
  if (!run.ok()) {
    fmt::print(stderr, "interpreter: {}\n", run.to_string());
    return Check::kMismatched;
  }
  ProgramEvaluator evaluator(program, const_pointers(inputs));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = nest.outputs[i].name;
    const Tolerance tol = tolerance_for(program, name, 1e-5, 1e-6);
    const Comparison c = sample_blocks > 0 ? compare_written_with_evaluator(evaluator, name, outputs[i], tol, 4096, 1)
                                           : compare_with_evaluator(evaluator, name, outputs[i], tol, 4096, 1);
    if (!c.match) {
      fmt::print(stderr, "{}: {}\n", name, c.describe());
      return Check::kMismatched;
    }
  }
  return Check::kMatched;
}

int run(int schedules, uint64_t seed, double interp_max_flops, int64_t sample_blocks, const std::string& jsonl_path) {
  Expected<const Backend*> cuda = find_backend("cuda");
  if (!cuda.ok()) {
    fmt::print(stderr, "{}\n", cuda.status().to_string());
    return 1;
  }
  std::ofstream jsonl;
  if (!jsonl_path.empty()) jsonl.open(jsonl_path);
  fmt::print("| benchmark | drawn | lowered | interpreter matched | assembled | registers min/median/max | "
             "kernels spilling | est_gpu_time median |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  int failures = 0;
  for (const char* name : kBenchmarks) {
    const std::string uri = fmt::format("benchmark://ops-v0/{}", name);
    Expected<Benchmark> b = DatasetRegistry::global().resolve(uri);
    if (!b.ok()) {
      fmt::print(stderr, "{}: {}\n", uri, b.status().to_string());
      return 1;
    }
    const bool whole = count_ops(*b->program).flops <= interp_max_flops;
    const bool interpretable = whole || sample_blocks > 0;
    Row row;
    for (int i = 0; i < schedules; ++i) {
      Rng rng(seed * 1000003 + uint64_t(i));
      ++row.drawn;
      Expected<Schedule> s = random_gpu_schedule(b->program, (*cuda)->lowering(), rng);
      if (!s.ok()) {
        ++failures;
        continue;
      }
      Expected<LoopNest> nest = lower(*s, (*cuda)->lowering());
      if (!nest.ok()) {
        ++failures;
        continue;
      }
      ++row.lowered;
      bool matched = false, over_cap = false;
      if (interpretable) {
        const Check c = check(*b->program, *nest, whole ? 0 : sample_blocks);
        matched = c == Check::kMatched;
        over_cap = c == Check::kOverCap;
        row.checked += !over_cap;
        row.matched += matched;
        row.over_cap += over_cap;
        failures += c == Check::kMismatched;
      }
      Expected<std::shared_ptr<const Executable>> exe = (*cuda)->compile(*nest);
      if (!exe.ok()) {
        ++failures;
        continue;
      }
      bool assembled = !(*exe)->kernels().empty();
      Json kernels = Json::array();
      for (const DeviceKernel& k : (*exe)->kernels()) {
        assembled = assembled && k.assembled;
        if (k.assembled) row.registers.push_back(k.registers);
        row.spilled += k.spill_store_bytes > 0 || k.spill_load_bytes > 0;
        kernels.push_back(Json{{"name", k.name},
                               {"blocks", {k.blocks[0], k.blocks[1], k.blocks[2]}},
                               {"threads", {k.threads[0], k.threads[1], k.threads[2]}},
                               {"registers", k.registers},
                               {"spill_store_bytes", k.spill_store_bytes},
                               {"spill_load_bytes", k.spill_load_bytes}});
      }
      row.assembled += assembled;
      const Expected<RuntimeEstimate> modelled = (*cuda)->estimate_runtime(*nest);
      if (modelled.ok()) row.seconds.push_back(modelled->seconds);
      if (jsonl.is_open()) {
        jsonl << Json{{"benchmark", uri},
                                {"seed", seed * 1000003 + uint64_t(i)},
                                {"trace", s->trace().to_string()},
                                {"kernels", kernels},
                                {"est_gpu_time_s", modelled.ok() ? Json(modelled->seconds) : Json(nullptr)},
                                {"checked", interpretable && !over_cap},
                                {"sampled_blocks", whole ? 0 : sample_blocks},
                                {"matched", matched}}
                     .dump()
              << "\n";
      }
    }
    std::vector<int>& r = row.registers;
    std::sort(r.begin(), r.end());
    const std::string regs = r.empty() ? "-" : fmt::format("{}/{}/{}", r.front(), r[r.size() / 2], r.back());
    fmt::print("| {} | {} | {} | {} | {} | {} | {} | {:.1f} us |\n", name, row.drawn, row.lowered,
               !interpretable ? std::string("- (too large)")
               : fmt::format("{} of {}{}", row.matched, row.checked,
                             whole ? "" : row.over_cap ? fmt::format(" (sampled blocks; {} over the step cap)", row.over_cap)
                                                       : std::string(" (sampled blocks)")),
               row.assembled, regs, row.spilled, median(row.seconds) * 1e6);
  }
  fmt::print("failures: {}\n", failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace tensorgym

int main(int argc, char** argv) {
  int schedules = 50;
  uint64_t seed = 1;
  double interp_max_flops = 2e7;
  int64_t sample_blocks = 2;
  std::string jsonl;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--schedules") {
      schedules = std::atoi(argv[i + 1]);
    } else if (flag == "--seed") {
      seed = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (flag == "--interp-max-flops") {
      interp_max_flops = std::atof(argv[i + 1]);
    } else if (flag == "--sample-blocks") {
      sample_blocks = std::atoll(argv[i + 1]);
    } else if (flag == "--jsonl") {
      jsonl = argv[i + 1];
    } else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  return tensorgym::run(schedules, seed, interp_max_flops, sample_blocks, jsonl);
}
