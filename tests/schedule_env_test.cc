// schedule-v0 in-process: reset, step, observations, rewards, fork, state, errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include <unistd.h>

#include "codegen/analysis/cost_model.h"
#include "codegen/backend/registry.h"
#include "codegen/ir/ir_printer.h"
#include "codegen/ir/program.h"
#include "codegen/lower/lower.h"
#include "envs/env_context.h"
#include "envs/schedule/cursor_actions.h"
#include "envs/schedule/primitive_actions.h"
#include "envs/schedule/schedule_env.h"
#include "proto/episode_state_io.h"
#include "support/deferred_release.h"

namespace tensorgym {
namespace {

std::shared_ptr<EnvContext> context() {
  static std::shared_ptr<EnvContext> ctx = [] {
    auto c = std::make_shared<EnvContext>();
    c->worker_binary = std::string(TENSORGYM_BINARY_DIR) + "/bin/tensorgym";
    c->threads = 1;
    return c;
  }();
  return ctx;
}

std::unique_ptr<Env> env() {
  Expected<std::unique_ptr<Env>> e = make_env("schedule-v0", context());
  EXPECT_TRUE(e.ok());
  return std::move(*e);
}

std::string text_of(const Event& e) { return e.is<std::string>() ? e.as<std::string>() : ""; }

TEST(ScheduleEnv, ResetAndStepWithTextActions) {
  auto e = env();
  Expected<std::vector<Event>> obs = e->reset("benchmark://ops-v0/gmm-1", {}, {"program", "schedule", "loop_nest"});
  ASSERT_TRUE(obs.ok()) << obs.status().to_string();
  EXPECT_NE(text_of((*obs)[0]).find("C[i, j] += A[i, k] * B[k, j]"), std::string::npos) << text_of((*obs)[0]);
  EXPECT_EQ(text_of((*obs)[1]), "");
  StepResult r = e->step({Event("split(C.i, 32, io, ii)"), Event("parallel(C.io)")}, {"schedule", "loop_nest"}, {});
  ASSERT_TRUE(r.error.ok()) << r.error.to_string();
  EXPECT_FALSE(r.action_had_no_effect);
  EXPECT_EQ(text_of(r.observations[0]), "split(C.i, 32, io, ii)\nparallel(C.io)\n");
  EXPECT_NE(text_of(r.observations[1]).find("parallel for C.io in 0..4"), std::string::npos);
  EpisodeState s = e->state();
  EXPECT_EQ(s.benchmark, "benchmark://ops-v0/gmm-1");
  EXPECT_EQ(s.actions, (std::vector<std::string>{"split(C.i, 32, io, ii)", "parallel(C.io)"}));
}

TEST(ScheduleEnv, BadActionsLeaveTheStateUnchanged) {
  auto e = env();
  ASSERT_TRUE(e->reset("benchmark://ops-v0/gmm-1", {}, {}).ok());
  ASSERT_TRUE(e->step({Event("split(C.i, 32, io, ii)")}, {}, {}).error.ok());
  std::string before = e->state().actions.back();
  StepResult r = e->step({Event(int64_t(PrimitiveActions::size() + 5))}, {"schedule"}, {});
  EXPECT_EQ(r.error.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.error.message().find("out of range"), std::string::npos);
  r = e->step({Event("split(C.nope, 2, a, b)")}, {"schedule"}, {});
  EXPECT_EQ(r.error.code(), StatusCode::kNotFound);
  EXPECT_NE(r.error.message().find("no loop 'nope'"), std::string::npos) << r.error.message();
  r = e->step({Event("vectorize(C.k)")}, {"schedule"}, {});
  EXPECT_FALSE(r.error.ok());
  EXPECT_EQ(text_of(r.observations[0]), "split(C.i, 32, io, ii)\n");
  EXPECT_EQ(e->state().actions.size(), 1u);
  // A valid action that changes nothing.
  r = e->step({Event("reorder(C, io, ii)")}, {}, {});
  EXPECT_TRUE(r.error.ok());
  EXPECT_TRUE(r.action_had_no_effect);
  // Unknown spaces and URIs.
  EXPECT_EQ(e->step({}, {"no_such_obs"}, {}).error.code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(e->reset("benchmark://ops-v0/gmm-99", {}, {}).ok());
  EXPECT_FALSE(e->reset("bogus://x/y", {}, {}).ok());
}

TEST(ScheduleEnv, MaskedActionsMostlyApply) {
  auto e = env();
  ASSERT_TRUE(e->reset("benchmark://ops-v0/c2d-2", {}, {}).ok());
  Rng rng(5);
  int tried = 0, applied = 0;
  for (int step = 0; step < 60; ++step) {
    StepResult m = e->step({}, {"action_mask"}, {});
    ASSERT_TRUE(m.error.ok()) << m.error.to_string();
    const Int64Tensor& mask = m.observations[0].as<Int64Tensor>();
    std::vector<int64_t> valid;
    for (size_t i = 0; i < mask.values.size(); ++i)
      if (mask.values[i]) valid.push_back(int64_t(i));
    ASSERT_FALSE(valid.empty());
    StepResult r = e->step({Event(rng.pick(valid))}, {"loop_nest"}, {});
    ++tried;
    applied += r.error.ok();
    ASSERT_FALSE(text_of(r.observations[0]).empty()) << r.error.to_string();
  }
  EXPECT_GT(applied, tried * 8 / 10);
}

// Steps reuse earlier work (the lowering of the schedule before, when an action only
// changes loop kinds; schedules shared instead of copied). Whatever was cached, every
// observation equals the one a fresh environment gives after reset and a replay of
// the same actions: through forks, failed actions, steps observing nothing, runner
// settings that change, and both action spaces.
TEST(ScheduleEnv, StepsAfterCachedWorkObserveWhatAReplayObserves) {
  const std::vector<std::string> obs = {"loop_nest",   "features", "est_cycles",
                                        "action_mask", "schedule", "peak_scratch_bytes"};
  auto replayed = [&](const std::string& benchmark, const ResetOptions& options,
                      const std::vector<std::string>& actions) {
    auto fresh = env();
    EXPECT_TRUE(fresh->reset(benchmark, options, {}).ok());
    std::vector<Event> all;
    for (const std::string& a : actions) all.push_back(Event(a));
    StepResult r = fresh->step(all, obs, {});
    EXPECT_TRUE(r.error.ok()) << r.error.to_string();
    return r.observations;
  };
  struct Case {
    const char* benchmark;
    const char* action_space;
    uint64_t seed;
  };
  int annotations = 0;
  for (const Case& c :
       {Case{"benchmark://ops-v0/gmm-1", "primitives", 1}, Case{"benchmark://ops-v0/c2d-2", "primitives", 2},
        Case{"benchmark://ops-v0/nrm-1", "primitives", 3}, Case{"benchmark://ops-v0/dep-1", "cursor", 4}}) {
    SCOPED_TRACE(c.benchmark);
    ResetOptions options;
    options.action_space = c.action_space;
    auto e = env();
    Expected<std::vector<Event>> first = e->reset(c.benchmark, options, {"action_mask"});
    ASSERT_TRUE(first.ok());
    Int64Tensor mask = (*first)[0].as<Int64Tensor>();
    std::unique_ptr<Env> fork;
    Rng rng(c.seed);
    for (int step = 0; step < 40; ++step) {
      std::vector<int64_t> valid;
      for (size_t i = 0; i < mask.values.size(); ++i)
        if (mask.values[i]) valid.push_back(int64_t(i));
      ASSERT_FALSE(valid.empty());
      // Mostly masked-in actions; now and then any action (it may fail and must
      // leave the state and its cached work as they were).
      int64_t action = step % 7 == 3 ? int64_t(rng.range(0, int64_t(mask.values.size()) - 1)) : rng.pick(valid);
      bool observe = step % 5 != 4;  // some steps observe nothing
      StepResult r = e->step({Event(action)}, observe ? obs : std::vector<std::string>{}, {});
      const std::vector<std::string>& actions = e->state().actions;
      if (!actions.empty()) {
        const std::string& last = actions.back();
        annotations +=
            last.rfind("vectorize", 0) == 0 || last.rfind("parallel", 0) == 0 || last.rfind("unroll", 0) == 0;
      }
      if (step == 20) {
        ASSERT_TRUE(e->set_parameter("runner.repeat", "3").ok());  // settings change, schedule not
      }
      if (!observe) {
        r = e->step({}, obs, {});
        ASSERT_TRUE(r.error.ok()) << r.error.to_string();
      }
      std::vector<Event> expected = replayed(c.benchmark, options, actions);
      ASSERT_EQ(r.observations.size(), expected.size());
      for (size_t i = 0; i < obs.size(); ++i)
        EXPECT_TRUE(r.observations[i] == expected[i]) << obs[i] << " after step " << step;
      mask = r.observations[3].as<Int64Tensor>();
      if (step % 10 == 2) {
        Expected<std::unique_ptr<Env>> f = e->fork();
        ASSERT_TRUE(f.ok());
        fork = std::move(*f);
      }
      if (fork && step % 10 == 6) {
        // The fork shares this episode's cached work from when it was made.
        StepResult fr = fork->step({Event(action)}, obs, {});
        std::vector<Event> forked = replayed(c.benchmark, options, fork->state().actions);
        for (size_t i = 0; i < obs.size(); ++i)
          EXPECT_TRUE(fr.observations[i] == forked[i]) << obs[i] << " (fork) after step " << step;
      }
    }
  }
  EXPECT_GT(annotations, 3);  // the kind-only reuse was exercised
}

// Every episode starts from its program's unscheduled state: that lowering is made
// once per program and shared (the first action of each episode rewrites it).
TEST(EnvContext, InitialLoweringIsLoweredOncePerProgram) {
  EnvContext ctx;
  auto program_of = [](int n) {
    Expected<Program> p = parse_program("input A: f32[" + std::to_string(n) + ", 8]\nB[i, j] = A[i, j] * 2.0\n");
    EXPECT_TRUE(p.ok());
    return std::make_shared<const Program>(std::move(*p));
  };
  auto fresh_text = [](const ProgramPtr& p) {
    Expected<LoopNest> nest = lower(Schedule(p));
    return nest.ok() ? to_string(nest->body) : "";
  };
  ProgramPtr first = program_of(3);
  std::shared_ptr<const LoweredNest> a = ctx.initial_lowering(first);
  ASSERT_TRUE(a);
  EXPECT_EQ(ctx.initial_lowering(first).get(), a.get());
  EXPECT_EQ(to_string(a->nest.body), fresh_text(first));
  EXPECT_EQ(a->state->program_ptr(), first);
  // More programs than it keeps: each still gets its own lowering.
  for (int n = 4; n < 4 + int(EnvContext::kMaxInitialLowerings) + 6; ++n) {
    ProgramPtr p = program_of(n);
    std::shared_ptr<const LoweredNest> l = ctx.initial_lowering(p);
    ASSERT_TRUE(l);
    EXPECT_EQ(to_string(l->nest.body), fresh_text(p)) << n;
  }
  // The first program's lowering was the oldest, so it was dropped (it is still held
  // here, so a new one cannot take its address): lowered again, the same nest.
  std::shared_ptr<const LoweredNest> again = ctx.initial_lowering(first);
  ASSERT_TRUE(again);
  EXPECT_NE(again.get(), a.get());
  EXPECT_EQ(to_string(again->nest.body), fresh_text(first));
  EXPECT_EQ(ctx.initial_lowering(first).get(), again.get());
}

TEST(ScheduleEnv, ForkIsIndependent) {
  auto e = env();
  ASSERT_TRUE(e->reset("benchmark://ops-v0/gmm-1", {}, {}).ok());
  ASSERT_TRUE(e->step({Event("split(C.i, 16, io, ii)")}, {}, {}).error.ok());
  Expected<std::unique_ptr<Env>> f = e->fork();
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->step({Event("parallel(C.io)")}, {}, {}).error.ok());
  ASSERT_TRUE(e->step({Event("split(C.j, 8, jo, ji)")}, {}, {}).error.ok());
  EXPECT_EQ(e->state().actions, (std::vector<std::string>{"split(C.i, 16, io, ii)", "split(C.j, 8, jo, ji)"}));
  EXPECT_EQ((*f)->state().actions, (std::vector<std::string>{"split(C.i, 16, io, ii)", "parallel(C.io)"}));
}

// A server steps inside a DeferredReleaseScope: the previous schedule's derived state
// (its lowered nest) waits for the scope, and the step's results are the same.
TEST(ScheduleEnv, AStepInADeferredReleaseScopeParksThePreviousStateOnly) {
  auto plain = env();
  auto deferred = env();
  ASSERT_TRUE(plain->reset("benchmark://ops-v0/gmm-1", {}, {}).ok());
  ASSERT_TRUE(deferred->reset("benchmark://ops-v0/gmm-1", {}, {}).ok());
  for (const char* a : {"split(C.i, 16, io, ii)", "reorder(C, io, j, ii)", "vectorize(C.ii)"}) {
    StepResult want = plain->step({Event(a)}, {"loop_nest"}, {});
    DeferredReleaseScope scope;
    StepResult got = deferred->step({Event(a)}, {"loop_nest"}, {});
    ASSERT_TRUE(got.error.ok()) << got.error.to_string();
    EXPECT_EQ(scope.parked(), 1u) << a;
    ASSERT_EQ(got.observations.size(), 1u);
    EXPECT_EQ(got.observations[0].as<std::string>(), want.observations[0].as<std::string>()) << a;
  }
  // A fork shares the state: stepping the original parks nothing.
  Expected<std::unique_ptr<Env>> fork = deferred->fork();
  ASSERT_TRUE(fork.ok());
  DeferredReleaseScope scope;
  ASSERT_TRUE(deferred->step({Event("parallel(C.io)")}, {"loop_nest"}, {}).error.ok());
  EXPECT_EQ(scope.parked(), 0u);
  EXPECT_EQ((*fork)->state().actions.size(), 3u);
}

TEST(ScheduleEnv, EstCyclesRewardIsDeterministicAndReplays) {
  auto e = env();
  ASSERT_TRUE(e->reset("benchmark://ops-v0/gmm-4", {}, {}).ok());
  std::vector<std::string> actions = {"split(C.j, 64, jo, ji)", "vectorize(C.ji)", "split(C.i, 4, io, ii)"};
  double total = 0;
  for (const std::string& a : actions) {
    StepResult r = e->step({Event(a)}, {"est_cycles"}, {"est_cycles"});
    ASSERT_TRUE(r.error.ok()) << r.error.to_string();
    total += r.rewards[0];
  }
  EpisodeState s = e->state();
  EXPECT_EQ(s.reward_space, "est_cycles");
  EXPECT_DOUBLE_EQ(s.reward, total);
  ASSERT_EQ(s.deterministic_rewards.count("est_cycles"), 1u);
  // Replaying the state gives bit-identical rewards.
  std::string line = episode_state_to_json(s);
  Expected<EpisodeState> back = episode_state_from_json(line);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->actions, s.actions);
  auto e2 = env();
  ASSERT_TRUE(e2->reset(back->benchmark, {}, {}).ok());
  double replayed = 0;
  for (const std::string& a : back->actions) replayed += e2->step({Event(a)}, {}, {"est_cycles"}).rewards[0];
  EXPECT_EQ(replayed, total);
  // The expert-normalized variant exists for gmm-4 (it has an @expert schedule).
  StepResult n = e2->step({}, {}, {"est_cycles_norm_expert"});
  EXPECT_TRUE(n.error.ok()) << n.error.to_string();
}

TEST(ScheduleEnv, EstCyclesHostIsTheModelOnThisHostsMachine) {
  auto e = env();
  ASSERT_TRUE(e->reset("benchmark://ops-v0/c2d-2", {}, {}).ok());
  // The output channels innermost: a gather and scatter loop, whose price depends on
  // the machine.
  const std::string actions = "reorder(Y, y, n, f); reorder(Y, s, c, f)";
  StepResult r =
      e->step({Event("reorder(Y, y, n, f)"), Event("reorder(Y, s, c, f)")}, {"est_cycles_host", "est_cycles"}, {});
  ASSERT_TRUE(r.error.ok()) << r.error.to_string();
  ASSERT_TRUE(r.observations[0].is<double>());
  Expected<Program> program = parse_program(text_of(e->step({}, {"program"}, {}).observations[0]));
  ASSERT_TRUE(program.ok()) << program.status().to_string();
  Schedule schedule(std::make_shared<const Program>(std::move(*program)));
  ASSERT_TRUE(schedule.apply_text(actions).ok());
  Expected<LoopNest> nest = lower(schedule);
  ASSERT_TRUE(nest.ok()) << nest.status().to_string();
  EXPECT_EQ(r.observations[0].as<double>(), est_cycles(*nest, *host_backend().machine_model()));
  EXPECT_EQ(r.observations[1].as<double>(), est_cycles(*nest, MachineModel::reference()));
  // Platform-dependent and, as the gather probe is measured, not deterministic.
  for (const Space& space : e->observation_spaces()) {
    if (space.name() != "est_cycles_host") continue;
    EXPECT_TRUE(space.platform_dependent());
    EXPECT_FALSE(space.deterministic());
  }
}

TEST(ScheduleEnv, CursorActionSpace) {
  auto e = env();
  ResetOptions o;
  o.action_space = "cursor";
  ASSERT_TRUE(e->reset("benchmark://ops-v0/gmm-1", o, {}).ok());
  StepResult r = e->step({Event("loop_in"), Event("split_16"), Event("loop_in"), Event("vectorize")},
                         {"cursor", "schedule", "action_mask"}, {});
  ASSERT_TRUE(r.error.ok()) << r.error.to_string();
  EXPECT_EQ(text_of(r.observations[0]), "C.j_i");
  EXPECT_EQ(text_of(r.observations[1]), "split(C.j, 16, j_o, j_i)\nvectorize(C.j_i)\n");
  // The mask is exact for the cursor space: vectorizing the same loop again is out.
  const Int64Tensor& mask = r.observations[2].as<Int64Tensor>();
  EXPECT_EQ(mask.values[size_t(*CursorActions::index_of("vectorize"))], 0);
  EXPECT_EQ(mask.values[size_t(*CursorActions::index_of("loop_out"))], 1);
  r = e->step({Event(*CursorActions::index_of("parallel"))}, {}, {});
  EXPECT_FALSE(r.error.ok());  // j_i is vectorized
  EXPECT_EQ(e->state().action_space, "cursor");
  EXPECT_EQ(e->state().actions,
            (std::vector<std::string>{"loop_in", "split_16", "loop_in", "vectorize"}));
}

TEST(ScheduleEnv, MeasuredObservations) {
  auto e = env();
  ASSERT_TRUE(e->set_parameter("runner.repeat", "2").ok());
  ASSERT_TRUE(e->set_parameter("runner.min_repeat_ms", "5").ok());
  EXPECT_EQ(e->set_parameter("runner.bogus", "1").code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(e->reset("benchmark://ops-v0/gmm-1", {}, {}).ok());
  StepResult r = e->step({Event("split(C.j, 16, jo, ji)"), Event("vectorize(C.ji)")},
                         {"runtime", "gflops", "correct", "compile_time", "inst_count", "llvm_ir"}, {"runtime"});
  ASSERT_TRUE(r.error.ok()) << r.error.to_string();
  EXPECT_GT(r.observations[0].as<double>(), 0.0);
  EXPECT_GT(r.observations[1].as<double>(), 0.0);
  EXPECT_TRUE(r.observations[2].as<bool>());
  EXPECT_GT(r.observations[3].as<double>(), 0.0);
  const Int64Tensor& counts = r.observations[4].as<Int64Tensor>();
  int64_t total = 0;
  for (int64_t c : counts.values) total += c;
  EXPECT_GT(total, 10);
  EXPECT_NE(text_of(r.observations[5]).find("fmul"), std::string::npos);
  EXPECT_TRUE(std::isfinite(r.rewards[0]));
}

// Measured baselines outlive the process through EnvContext::baseline_cache_path: a
// second context (another process, as for `tensorgym validate`) finds the initial
// runtime the first measured, and a torn or foreign line in the file is skipped.
TEST(ScheduleEnv, BaselinesPersistInTheCacheFile) {
  const std::string path = ::testing::TempDir() + "/schedule_env_test_baselines_" + std::to_string(::getpid());
  std::remove(path.c_str());
  auto first = std::make_shared<EnvContext>();
  first->worker_binary = std::string(TENSORGYM_BINARY_DIR) + "/bin/tensorgym";
  first->threads = 1;
  first->baseline_cache_path = path;
  {
    Expected<std::unique_ptr<Env>> e = make_env("schedule-v0", first);
    ASSERT_TRUE(e.ok());
    ASSERT_TRUE((*e)->set_parameter("runner.repeat", "2").ok());
    ASSERT_TRUE((*e)->reset("benchmark://ops-v0/gmm-1", {}, {}).ok());
    StepResult r = (*e)->step({Event("split(C.j, 16, jo, ji)")}, {}, {"runtime"});
    ASSERT_TRUE(r.error.ok()) << r.error.to_string();
  }
  {
    std::FILE* f = std::fopen(path.c_str(), "a");
    ASSERT_NE(f, nullptr);
    std::fputs("not a number\tzz\n0.5\t6162\n0.25", f);  // junk, a good line, a torn line
    std::fclose(f);
  }
  auto second = std::make_shared<EnvContext>();
  second->baseline_cache_path = path;
  double v = 0;
  EXPECT_TRUE(second->find_baseline("ab", &v));
  EXPECT_EQ(v, 0.5);
  // The initial runtime the first context measured: a key naming gmm-1 and runtime.
  int runtimes = 0;
  {
    std::FILE* f = std::fopen(path.c_str(), "r");
    ASSERT_NE(f, nullptr);
    char line[8192];
    while (std::fgets(line, sizeof line, f)) {
      std::string l(line);
      size_t tab = l.find('\t');
      if (tab == std::string::npos) continue;
      std::string hex = l.substr(tab + 1);
      while (!hex.empty() && hex.back() == '\n') hex.pop_back();
      if (hex.find_first_not_of("0123456789abcdef") != std::string::npos) continue;  // the junk line
      std::string key;
      for (size_t i = 0; i + 1 < hex.size(); i += 2) key.push_back(char(std::stoi(hex.substr(i, 2), nullptr, 16)));
      if (key.rfind("initial|runtime|benchmark://ops-v0/gmm-1|", 0) != 0) continue;
      ++runtimes;
      double measured = 0;
      EXPECT_TRUE(second->find_baseline(key, &measured));
      EXPECT_EQ(measured, std::stod(l.substr(0, tab)));
      EXPECT_GT(measured, 0.0);
    }
    std::fclose(f);
  }
  EXPECT_EQ(runtimes, 1);
  EXPECT_FALSE(second->find_baseline("missing", &v));
  // Without a path nothing is shared.
  EnvContext alone;
  EXPECT_FALSE(alone.find_baseline("ab", &v));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tensorgym
