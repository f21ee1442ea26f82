// Lowering speed: a 10-stage program (padding, conv2d, bias, ReLU, pooling-style
// reduction, softmax) with a schedule that splits, reorders, caches and computes
// stages inside others. Issue target: well under a millisecond per lowering.
//   build/bin/lower_benchmark
#include <benchmark/benchmark.h>

#include <string>

#include "codegen/lower/lower.h"
#include "codegen/schedule/schedule.h"

namespace tensorgym {
namespace {

const char* kTenStages =
    "input X: f32[1, 64, 56, 56]\n"
    "input W: f32[64, 64, 3, 3]\n"
    "input Bias: f32[64]\n"
    "P[n, c, h, w] = select(h >= 1 && h <= 56 && w >= 1 && w <= 56, X[n, c, h - 1, w - 1], 0.0) where h in 0..58, w in 0..58\n"
    "Y[n, f, y, x] += P[n, c, y + r, x + s] * W[f, c, r, s] where y in 0..56, x in 0..56\n"
    "B[n, f, y, x] = Y[n, f, y, x] + Bias[f]\n"
    "R[n, f, y, x] = max(B[n, f, y, x], 0.0)\n"
    "G[n, f] += R[n, f, y, x] where y in 0..56, x in 0..56\n"
    "A[n, f] = G[n, f] / 3136.0\n"
    "M[n] max= A[n, f]\n"
    "E[n, f] = exp(A[n, f] - M[n])\n"
    "S[n] += E[n, f]\n"
    "O[n, f] = E[n, f] / S[n]\n";

const char* kSchedule =
    "cache_write(Y, YL); compute_at(YL, Y.y)\n"
    "split(YL.x, 8, xo, xi); reorder(YL, n, f, y, c, r, s, xo, xi); vectorize(YL.xi)\n"
    "compute_at(P, YL.c)\n"
    "compute_inline(B); compute_inline(R)\n"
    "split(G.f, 16, fo, fi); parallel(G.fo)\n"
    "compute_at(Y, G.fi)\n"
    "compute_inline(A); compute_inline(E)\n";

ProgramPtr program() {
  static ProgramPtr p = std::make_shared<const Program>(*parse_program(kTenStages));
  return p;
}

// Lowers `schedule` of `p` from scratch, again and again.
void lower_repeatedly(benchmark::State& state, const ProgramPtr& p, const std::string& schedule) {
  Expected<Schedule> s = Schedule::from_text(p, schedule);
  if (!s.ok()) {
    state.SkipWithError(s.status().to_string().c_str());
    return;
  }
  for (auto _ : state) {
    Expected<LoopNest> nest = lower(*s);
    benchmark::DoNotOptimize(nest);
  }
}

void BM_Lower10Stages(benchmark::State& state) { lower_repeatedly(state, program(), kSchedule); }
BENCHMARK(BM_Lower10Stages)->Unit(benchmark::kMicrosecond);

void BM_Lower10StagesUnscheduled(benchmark::State& state) {
  Schedule s(program());
  for (auto _ : state) {
    Expected<LoopNest> nest = lower(s);
    benchmark::DoNotOptimize(nest);
  }
}
BENCHMARK(BM_Lower10StagesUnscheduled)->Unit(benchmark::kMicrosecond);

void BM_ApplyScheduleText(benchmark::State& state) {
  for (auto _ : state) {
    Expected<Schedule> s = Schedule::from_text(program(), kSchedule);
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_ApplyScheduleText)->Unit(benchmark::kMicrosecond);

void BM_ParseProgram(benchmark::State& state) {
  for (auto _ : state) {
    Expected<Program> p = parse_program(kTenStages);
    benchmark::DoNotOptimize(p);
  }
}
BENCHMARK(BM_ParseProgram)->Unit(benchmark::kMicrosecond);

// The service benchmark's schedule of benchmark://ops-v0/gmm-1 (128^3 matmul):
// lowering from scratch, and lower_reusing after an action that only changed a loop
// kind (parallel), which reuses the lowering before it.
const char* kGemm = "input A: f32[128, 128]\ninput B: f32[128, 128]\nC[i, j] += A[i, k] * B[k, j]\n";
const char* kGemmSchedule =
    "split(C.i, 32, io, ii); split(C.j, 16, jo, ji); reorder(C, io, jo, ii, ji); vectorize(C.ji)";

ProgramPtr gemm() {
  static ProgramPtr p = std::make_shared<const Program>(*parse_program(kGemm));
  return p;
}

void BM_LowerGemm(benchmark::State& state) { lower_repeatedly(state, gemm(), kGemmSchedule); }
BENCHMARK(BM_LowerGemm)->Unit(benchmark::kMicrosecond);

void BM_LowerGemmReusingKinds(benchmark::State& state) {
  Expected<Schedule> before = Schedule::from_text(gemm(), kGemmSchedule);
  Expected<Schedule> after = Schedule::from_text(gemm(), std::string(kGemmSchedule) + "; parallel(C.io)");
  if (!before.ok() || !after.ok()) {
    state.SkipWithError("cannot apply the schedule");
    return;
  }
  auto before_ptr = std::make_shared<const Schedule>(*before);
  auto after_ptr = std::make_shared<const Schedule>(*after);
  std::shared_ptr<const ScheduleState> before_state(before_ptr, &before_ptr->state());
  std::shared_ptr<const ScheduleState> after_state(after_ptr, &after_ptr->state());
  std::shared_ptr<const LoweredNest> previous = *lower_reusing(before_state, nullptr);
  for (auto _ : state) {
    Expected<std::shared_ptr<const LoweredNest>> nest = lower_reusing(after_state, previous);
    if (!nest.ok() || !(*nest)->reused) state.SkipWithError("the lowering was not reused");
    benchmark::DoNotOptimize(nest);
  }
}
BENCHMARK(BM_LowerGemmReusingKinds)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tensorgym

BENCHMARK_MAIN();
