// schedule-v0 in-process speed on benchmark://ops-v0/gmm-4 (issue targets: a step with
// a cheap observation under 20 us, with `features` under 200 us, fork under 50 us).
//   build/bin/env_benchmark
// Each step applies one action and its inverse-free successor: a reorder of two loops
// that alternates, so the schedule changes on every step and nothing is cached.
#include <benchmark/benchmark.h>

#include "envs/env.h"

namespace tensorgym {
namespace {

std::unique_ptr<Env> started_env() {
  auto ctx = std::make_shared<EnvContext>();
  auto env = make_env("schedule-v0", ctx);
  if (!env.ok()) return nullptr;
  auto r = (*env)->reset("benchmark://ops-v0/gmm-4", {}, {});
  if (!r.ok()) return nullptr;
  (void)(*env)->step({Event("split(C.i, 32, io, ii)"), Event("split(C.j, 32, jo, ji)")}, {}, {});
  return std::move(*env);
}

void step_with(benchmark::State& state, const std::vector<std::string>& observations) {
  std::unique_ptr<Env> env = started_env();
  if (!env) {
    state.SkipWithError("cannot start the environment");
    return;
  }
  const std::vector<Event> swap_a = {Event("reorder(C, jo, io)")};
  const std::vector<Event> swap_b = {Event("reorder(C, io, jo)")};
  bool flip = false;
  for (auto _ : state) {
    StepResult r = env->step(flip ? swap_b : swap_a, observations, {});
    flip = !flip;
    benchmark::DoNotOptimize(r);
  }
}

void BM_StepNoObservation(benchmark::State& state) { step_with(state, {}); }
BENCHMARK(BM_StepNoObservation)->Unit(benchmark::kMicrosecond);

void BM_StepLoopNestActionMask(benchmark::State& state) { step_with(state, {"loop_nest", "action_mask"}); }
BENCHMARK(BM_StepLoopNestActionMask)->Unit(benchmark::kMicrosecond);

void BM_StepEstCycles(benchmark::State& state) { step_with(state, {"est_cycles"}); }
BENCHMARK(BM_StepEstCycles)->Unit(benchmark::kMicrosecond);

void BM_StepFeatures(benchmark::State& state) { step_with(state, {"features"}); }
BENCHMARK(BM_StepFeatures)->Unit(benchmark::kMicrosecond);

void BM_Fork(benchmark::State& state) {
  std::unique_ptr<Env> env = started_env();
  if (!env) {
    state.SkipWithError("cannot start the environment");
    return;
  }
  for (auto _ : state) {
    auto f = env->fork();
    benchmark::DoNotOptimize(f);
  }
}
BENCHMARK(BM_Fork)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tensorgym

BENCHMARK_MAIN();
