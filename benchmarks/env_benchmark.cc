// schedule-v0 in-process speed on benchmark://ops-v0/gmm-4 (issue targets: a step with
// a cheap observation under 20 us, with `features` under 200 us, fork under 50 us).
//   build/bin/env_benchmark
// Each step applies one action and its inverse-free successor: a reorder of two loops
// that alternates, so the schedule changes on every step and nothing is cached.
// BM_EpisodeStep*: the service benchmark's step workload on gmm-1, per action.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "envs/env_context.h"

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

// The service benchmark's step workload (benchmarks/service_benchmark.cc): on
// benchmark://ops-v0/gmm-1, an episode of six primitives, each step observing
// `loop_nest`; a reset after every six steps (not timed). Between two steps (not
// timed), by `gap`:
// - kNone: nothing (a tight loop);
// - kEvictCaches: 8 MiB of memory written: the step finds its code and data in no
//   cache closer than L3;
// - kSleep: the thread sleeps 200 us, as a server waits for the next request: on a
//   VM its core halts, and the step finds the caches emptied (the service benchmark's
//   action steps run like this);
// - kSpin: the thread spins for the benchmark's argument, in us: the same wait with the
//   core kept busy. On a shared host the caches
//   still go cold while it spins: the longer the spin, the slower the step.
// Counters, in microseconds: the median step (robust to the preemptions of a shared
// machine) and the median step of each action.
enum class Gap { kNone, kEvictCaches, kSleep, kSpin };

void episode_steps(benchmark::State& state, Gap gap, int spin_us = 0) {
  const bool cold = gap == Gap::kEvictCaches;
  const std::vector<std::string> texts = {
      "split(C.i, 32, io, ii)", "split(C.j, 16, jo, ji)", "reorder(C, io, jo, ii, ji)",
      "vectorize(C.ji)",        "parallel(C.io)",         "unroll(C.ii)"};
  std::vector<std::vector<Event>> actions;
  for (const std::string& t : texts) actions.push_back({Event(t)});
  const std::vector<std::string> observations = {"loop_nest"};
  auto env = make_env("schedule-v0", std::make_shared<EnvContext>());
  if (!env.ok() || !(*env)->reset("benchmark://ops-v0/gmm-1", {}, {}).ok()) {
    state.SkipWithError("cannot start the environment");
    return;
  }
  std::vector<char> scratch(cold ? (8 << 20) : 0);
  std::vector<std::vector<double>> per_action(actions.size());
  size_t i = 0;
  for (auto _ : state) {
    if (i == actions.size()) {
      (void)(*env)->reset("benchmark://ops-v0/gmm-1", {}, {});
      i = 0;
    }
    if (cold) {
      std::memset(scratch.data(), int(i), scratch.size());
      benchmark::ClobberMemory();
    }
    if (gap == Gap::kSleep) std::this_thread::sleep_for(std::chrono::microseconds(200));
    if (gap == Gap::kSpin) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
      while (std::chrono::steady_clock::now() < until) {
      }
    }
    const auto t0 = std::chrono::steady_clock::now();
    StepResult r = (*env)->step(actions[i], observations, {});
    const auto t1 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(r);
    const double s = std::chrono::duration<double>(t1 - t0).count();
    state.SetIterationTime(s);
    per_action[i++].push_back(s * 1e6);
  }
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  std::vector<double> all;
  for (size_t a = 0; a < actions.size(); ++a) {
    all.insert(all.end(), per_action[a].begin(), per_action[a].end());
    state.counters[fmt::format("{}_{}", a + 1, texts[a].substr(0, texts[a].find('(')))] = median(per_action[a]);
  }
  state.counters["median_us"] = median(all);
}

void BM_EpisodeStepLoopNest(benchmark::State& state) { episode_steps(state, Gap::kNone); }
BENCHMARK(BM_EpisodeStepLoopNest)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_EpisodeStepLoopNestCold(benchmark::State& state) { episode_steps(state, Gap::kEvictCaches); }
BENCHMARK(BM_EpisodeStepLoopNestCold)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_EpisodeStepAfterSleep(benchmark::State& state) { episode_steps(state, Gap::kSleep); }
BENCHMARK(BM_EpisodeStepAfterSleep)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_EpisodeStepAfterSpin(benchmark::State& state) { episode_steps(state, Gap::kSpin, int(state.range(0))); }
BENCHMARK(BM_EpisodeStepAfterSpin)->Arg(20)->Arg(200)->Arg(2000)->UseManualTime()->Unit(benchmark::kMicrosecond);

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
