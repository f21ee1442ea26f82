// memory-v0: the four action spaces, observations, rewards, the memory limit,
// fork and replay, and random agents that must never produce an invalid plan.
#include "envs/memory/memory_env.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "datasets/graphs.h"
#include "envs/env_context.h"
#include "memplan/exec/arena_exec.h"
#include "memplan/planner.h"
#include "memplan/rewrites.h"
#include "memplan/verify.h"
#include "support/random.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

std::unique_ptr<Env> make() {
  Expected<std::unique_ptr<Env>> env = make_env("memory-v0", nullptr);
  EXPECT_TRUE(env.ok()) << env.status().to_string();
  return std::move(*env);
}

const char* kSmall = "benchmark://graphs-v0/resnet50@32";

// Plays random legal actions to the end; checks the plan at the end.
void play_random(Env& env, Rng& rng, const std::string& uri) {
  int steps = 0;
  while (true) {
    StepResult r = env.step({}, {"action_mask", "decision"}, {"arena"});
    ASSERT_TRUE(r.error.ok()) << r.error.to_string();
    if (r.terminated) break;
    std::vector<int64_t> legal;
    const Int64Tensor& mask = r.observations[0].as<Int64Tensor>();
    for (size_t i = 0; i < mask.values.size(); ++i)
      if (mask.values[i]) legal.push_back(int64_t(i));
    ASSERT_FALSE(legal.empty()) << r.observations[1].as<std::string>();
    StepResult s = env.step({Event(rng.pick(legal))}, {}, {"arena"});
    ASSERT_TRUE(s.error.ok()) << s.error.to_string();
    ASSERT_LT(++steps, 100000);
  }
  StepResult done = env.step({}, {"plan", "lifetimes", "arena_size"}, {});
  ASSERT_TRUE(done.error.ok()) << done.error.to_string();
  // Rebuild the instance from the lifetimes observation and verify the plan.
  const Int64Tensor& table = done.observations[1].as<Int64Tensor>();
  Instance inst;
  Offsets offsets;
  for (int64_t i = 0; i < table.shape[0]; ++i) {
    const int64_t* row = &table.values[size_t(i * 4)];
    inst.buffers.push_back({"b" + std::to_string(i), row[0], row[1], row[2]});
    offsets.push_back(row[3]);
  }
  Expected<int64_t> arena = verify_offsets(inst, offsets);
  ASSERT_TRUE(arena.ok()) << uri << ": " << arena.status().to_string();
  EXPECT_EQ(*arena, done.observations[2].as<int64_t>());
}

TEST(MemoryEnv, IsRegisteredWithItsSpaces) {
  std::vector<std::string> names = env_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "memory-v0"), names.end());
  auto env = make();
  EXPECT_EQ(env->name(), "memory-v0");
  ASSERT_EQ(env->action_spaces().size(), 4u);
  EXPECT_EQ(env->action_spaces()[0].name(), "order");
  EXPECT_EQ(env->action_spaces()[1].name(), "inplace");
  EXPECT_EQ(env->action_spaces()[2].name(), "placement");
  EXPECT_EQ(env->action_spaces()[3].name(), "rewrite");
  for (const Space& s : env->observation_spaces()) EXPECT_FALSE(s.description().empty()) << s.name();
  EXPECT_EQ(env->reward_spaces().size(), 4u);
}

TEST(MemoryEnv, RandomAgentsNeverProduceAnInvalidPlan) {
  Rng rng(7);
  const std::vector<std::string> uris = {kSmall, "benchmark://graphs-v0/bert_base_128@8",
                                         "benchmark://graphs-v0/randwire_ws_2@32",
                                         "benchmark://graphs-v0/inception_v3@75"};
  for (const std::string& uri : uris) {
    for (const char* space : {"order", "inplace", "placement"}) {
      SCOPED_TRACE(uri + " " + space);
      auto env = make();
      ResetOptions o;
      o.action_space = space;
      Expected<std::vector<Event>> obs = env->reset(uri, o, {"decision"});
      ASSERT_TRUE(obs.ok()) << obs.status().to_string();
      play_random(*env, rng, uri);
    }
  }
}

TEST(MemoryEnv, OffsetOnlyInstancesTakePlacementOnly) {
  const std::string path = testing::TempDir() + "/memory_env_instance.csv";
  {
    std::ofstream out(path);
    out << "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n";
  }
  auto env = make();
  ResetOptions o;
  o.action_space = "order";
  EXPECT_CONTAINS(env->reset("file://" + path, o, {}).status().message(), "offset-only");
  o.action_space = "placement";
  Expected<std::vector<Event>> obs = env->reset("file://" + path, o, {"lower_bound", "decision"});
  ASSERT_TRUE(obs.ok()) << obs.status().to_string();
  EXPECT_EQ((*obs)[0].as<int64_t>(), 12);
  EXPECT_EQ((*obs)[1].as<std::string>(), "placement");
  Rng rng(3);
  play_random(*env, rng, path);
}

TEST(MemoryEnv, RewardsSumToTheArenaReductionOverTheLowerBound) {
  auto env = make();
  ResetOptions o;
  o.action_space = "placement";
  Expected<std::vector<Event>> obs = env->reset(kSmall, o, {"rollout_arena", "lower_bound"});
  ASSERT_TRUE(obs.ok());
  const double initial = double((*obs)[0].as<int64_t>()), lb = double((*obs)[1].as<int64_t>());
  double total = 0, final_total = 0;
  // Always the top of the arena: no reuse at all, so the arena grows.
  while (true) {
    StepResult r = env->step({Event("top")}, {"rollout_arena"}, {"arena", "arena_final"});
    if (!r.error.ok()) {
      EXPECT_EQ(r.error.code(), StatusCode::kFailedPrecondition);  // the plan was already complete
      break;
    }
    total += r.rewards[0];
    final_total += r.rewards[1];
    if (r.terminated) {
      const double final_arena = double(r.observations[0].as<int64_t>());
      EXPECT_NEAR(total, (initial - final_arena) / lb, 1e-9);
      EXPECT_NEAR(final_total, total, 1e-9);
      EXPECT_LT(total, 0);
      break;
    }
  }
  EpisodeState s = env->state();
  EXPECT_EQ(s.env, "memory-v0");
  EXPECT_EQ(s.benchmark, kSmall);
  EXPECT_FALSE(s.actions.empty());
  EXPECT_EQ(s.actions[0], "top");
}

TEST(MemoryEnv, OrderAndInplaceDecisionsChangeThePlan) {
  auto env = make();
  ResetOptions o;
  o.action_space = "inplace";
  ASSERT_TRUE(env->reset(kSmall, o, {}).ok());
  // Declining every opportunity gives the no-reuse plan; accepting gives less.
  StepResult r;
  do r = env->step({Event("decline")}, {"arena_size"}, {});
  while (!r.terminated && r.error.ok());
  ASSERT_TRUE(r.error.ok()) << r.error.to_string();
  const int64_t declined = r.observations[0].as<int64_t>();
  ASSERT_TRUE(env->reset(kSmall, o, {}).ok());
  do r = env->step({Event("accept")}, {"arena_size", "candidate_features"}, {});
  while (!r.terminated && r.error.ok());
  ASSERT_TRUE(r.error.ok()) << r.error.to_string();
  EXPECT_LT(r.observations[0].as<int64_t>(), declined);
  // Order actions by name; a wrong name is an error that changes nothing.
  o.action_space = "order";
  Expected<std::vector<Event>> obs = env->reset(kSmall, o, {"candidate_features", "action_mask"});
  ASSERT_TRUE(obs.ok());
  EXPECT_EQ((*obs)[0].as<DoubleTensor>().shape[0], 1);  // one operator ready at the start
  EXPECT_EQ((*obs)[1].as<Int64Tensor>().values[0], 1);
  StepResult bad = env->step({Event("no_such_op")}, {}, {});
  EXPECT_CONTAINS(bad.error.message(), "no ready operator");
  EXPECT_TRUE(env->state().actions.empty());
  StepResult good = env->step({Event(int64_t(0))}, {}, {});
  EXPECT_TRUE(good.error.ok());
  EXPECT_EQ(env->state().actions.size(), 1u);
}

TEST(MemoryEnv, MemoryLimitIsReportedInfeasible) {
  auto env = make();
  ASSERT_TRUE(env->set_parameter("memory_limit", "1000").ok());
  EXPECT_FALSE(env->set_parameter("memory_limit", "x").ok());
  EXPECT_FALSE(env->set_parameter("nope", "1").ok());
  ResetOptions o;
  Expected<std::vector<Event>> obs = env->reset(kSmall, o, {"feasible"});
  ASSERT_TRUE(obs.ok());
  EXPECT_FALSE((*obs)[0].as<bool>());
  StepResult r;
  do r = env->step({Event("best_fit")}, {"feasible"}, {});
  while (!r.terminated && r.error.ok());
  EXPECT_TRUE(r.terminated);
  EXPECT_EQ(r.error.code(), StatusCode::kResourceExhausted);
  EXPECT_CONTAINS(r.error.message(), "infeasible");
  EXPECT_FALSE(r.observations[0].as<bool>());
  StepResult plan = env->step({}, {"plan"}, {});
  EXPECT_EQ(plan.error.code(), StatusCode::kResourceExhausted);  // never returned as if it fit
  // With a limit it fits, the plan is returned.
  ASSERT_TRUE(env->set_parameter("memory_limit", "100000000").ok());
  ASSERT_TRUE(env->reset(kSmall, o, {}).ok());
  do r = env->step({Event("best_fit")}, {}, {});
  while (!r.terminated && r.error.ok());
  ASSERT_TRUE(r.error.ok()) << r.error.to_string();
  r = env->step({}, {"plan"}, {});
  EXPECT_EQ(r.observations[0].as<std::string>().rfind("id,offset\n", 0), 0u);
  EXPECT_NE(env->state().action_space.find("memory_limit=100000000"), std::string::npos);
}

TEST(MemoryEnv, ForkAndReplayGiveTheSamePlan) {
  auto env = make();
  ResetOptions o;
  o.action_space = "order;default_placement=first_fit";
  ASSERT_TRUE(env->reset(kSmall, o, {}).ok());
  Rng rng(11);
  for (int i = 0; i < 20; ++i) {
    StepResult r = env->step({}, {"action_mask"}, {});
    std::vector<int64_t> legal;
    for (size_t k = 0; k < r.observations[0].as<Int64Tensor>().values.size(); ++k)
      if (r.observations[0].as<Int64Tensor>().values[k]) legal.push_back(int64_t(k));
    ASSERT_TRUE(env->step({Event(rng.pick(legal))}, {}, {"arena"}).error.ok());
  }
  Expected<std::unique_ptr<Env>> copy = env->fork();
  ASSERT_TRUE(copy.ok());
  // Finish both with the default (first ready) and compare.
  auto finish = [](Env& e) {
    StepResult r;
    do r = e.step({Event(int64_t(0))}, {}, {"arena"});
    while (!r.terminated && r.error.ok());
    EXPECT_TRUE(r.error.ok()) << r.error.to_string();
    r = e.step({}, {"plan"}, {});
    return r.observations.empty() ? std::string() : r.observations[0].as<std::string>();
  };
  const std::string a = finish(*env), b = finish(**copy);
  EXPECT_EQ(a, b);
  // Replay the state's actions on a fresh environment.
  EpisodeState s = env->state();
  EXPECT_EQ(s.action_space, "order;default_placement=first_fit");
  auto again = make();
  ResetOptions ro;
  ro.action_space = s.action_space;
  ASSERT_TRUE(again->reset(s.benchmark, ro, {}).ok());
  std::vector<Event> actions(s.actions.begin(), s.actions.end());
  StepResult r = again->step(actions, {}, {});
  ASSERT_TRUE(r.error.ok()) << r.error.to_string();
  EXPECT_TRUE(r.terminated);
  r = again->step({}, {"plan"}, {});
  EXPECT_EQ(r.observations[0].as<std::string>(), a);
}

TEST(MemoryEnv, RewritesBringAGraphUnderALimitNoPlanFitsAndTheStateReplays) {
  // MobileNetV2 at 64 pixels: its all-defaults plan (491,520 bytes) is over the
  // limit, and no order or placement reaches it; splitting brings the plan under.
  const char* uri = "benchmark://graphs-v0/mobilenet_v2@64";
  auto env = make();
  ResetOptions o;
  o.action_space = "rewrite;memory_limit=300000";
  Expected<std::vector<Event>> obs =
      env->reset(uri, o, {"decision", "feasible", "rewrites_offered", "candidate_features", "action_mask"});
  ASSERT_TRUE(obs.ok()) << obs.status().to_string();
  EXPECT_EQ((*obs)[0].as<std::string>(), "rewrite");
  EXPECT_FALSE((*obs)[1].as<bool>());
  const std::string offered = (*obs)[2].as<std::string>();
  const DoubleTensor& features = (*obs)[3].as<DoubleTensor>();
  const int64_t n = int64_t(std::count(offered.begin(), offered.end(), '\n'));
  ASSERT_GT(n, 0);
  EXPECT_EQ(features.shape[0], n);
  const Int64Tensor& mask = (*obs)[4].as<Int64Tensor>();
  EXPECT_EQ(int64_t(mask.values.size()), kMaxRewriteActions);
  EXPECT_EQ(std::count(mask.values.begin(), mask.values.end(), 1), n + 1);  // and stop
  // An action out of range changes nothing; a bad text is named.
  StepResult bad = env->step({Event(n + 1)}, {"rewrites"}, {});
  EXPECT_EQ(bad.error.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.observations[0].as<std::string>(), "");
  EXPECT_CONTAINS(env->step({Event("split nothing")}, {}, {}).error.message(), "rewrites offered");
  // A greedy agent: try each rewrite offered on a fork, take the one whose default
  // completion has the smallest arena, until the plan fits.
  StepResult r;
  double work_rewards = 0;
  for (int i = 0; i < 6; ++i) {
    r = env->step({}, {"feasible", "candidate_features"}, {});
    if (r.observations[0].as<bool>()) break;
    const int64_t offers = std::min<int64_t>(r.observations[1].as<DoubleTensor>().shape[0], 96);
    ASSERT_GT(offers, 0);
    int64_t best = -1, best_arena = 0;
    for (int64_t k = 1; k <= offers; ++k) {
      Expected<std::unique_ptr<Env>> trial = env->fork();
      ASSERT_TRUE(trial.ok());
      StepResult t = (*trial)->step({Event(k)}, {"rollout_arena"}, {});
      ASSERT_TRUE(t.error.ok()) << t.error.to_string();
      if (best < 0 || t.observations[0].as<int64_t>() < best_arena) {
        best = k;
        best_arena = t.observations[0].as<int64_t>();
      }
    }
    StepResult s = env->step({Event(best)}, {}, {"arena", "work"});
    ASSERT_TRUE(s.error.ok()) << s.error.to_string();
    EXPECT_GT(s.rewards[0], 0.0);  // the arena went down
    work_rewards += s.rewards[1];
  }
  r = env->step({}, {"feasible", "rewrites", "work_ratio"}, {});
  ASSERT_TRUE(r.observations[0].as<bool>());
  EXPECT_CONTAINS(r.observations[1].as<std::string>(), "tiles");
  EXPECT_GT(r.observations[2].as<double>(), 1.0);
  EXPECT_NEAR(work_rewards, 1.0 - r.observations[2].as<double>(), 1e-9);  // the work rewards sum to the added work
  // Stop, then the defaults finish a plan that fits.
  r = env->step({Event("stop")}, {"decision"}, {"arena"});
  ASSERT_TRUE(r.error.ok()) << r.error.to_string();
  EXPECT_TRUE(r.terminated);
  r = env->step({}, {"plan", "arena_size"}, {});
  ASSERT_TRUE(r.error.ok()) << r.error.to_string();
  EXPECT_LE(r.observations[1].as<int64_t>(), 300000);
  // The state replays to the same plan.
  EpisodeState state = env->state();
  ASSERT_GE(state.actions.size(), 2u);
  EXPECT_EQ(state.actions.back(), "stop");
  auto again = make();
  ResetOptions ro;
  ro.action_space = state.action_space;
  ASSERT_TRUE(again->reset(state.benchmark, ro, {}).ok());
  StepResult replay = again->step(std::vector<Event>(state.actions.begin(), state.actions.end()), {}, {});
  ASSERT_TRUE(replay.error.ok()) << replay.error.to_string();
  EXPECT_EQ(again->step({}, {"plan"}, {}).observations[0].as<std::string>(), r.observations[0].as<std::string>());
}

TEST(MemoryEnv, RecomputationsAndTheirConesAreOfferedWithTheirDepth) {
  // BERT at 8 tokens under a tight limit: after the splits, memory-v0 offers the
  // recomputation of a tensor live at the peak and its cones (the producers of its
  // inputs recomputed too, levels up). candidate_features: kind 1, no tiles, the depth.
  const char* uri = "benchmark://graphs-v0/bert_base_128@8";
  auto env = make();
  ResetOptions o;
  o.action_space = "rewrite;memory_limit=100000";
  Expected<std::vector<Event>> obs = env->reset(uri, o, {"rewrites_offered", "candidate_features"});
  ASSERT_TRUE(obs.ok()) << obs.status().to_string();
  std::vector<std::string> offered;
  std::istringstream lines((*obs)[0].as<std::string>());
  for (std::string line; std::getline(lines, line);) offered.push_back(line);
  const DoubleTensor& features = (*obs)[1].as<DoubleTensor>();
  ASSERT_EQ(features.shape[0], int64_t(offered.size()));
  ASSERT_EQ(features.shape[1], 4);
  int64_t cone = -1, deepest = 0;
  for (size_t i = 0; i < offered.size(); ++i) {
    const double* row = &features.values[i * 4];
    if (offered[i].rfind("recompute ", 0) != 0) {
      EXPECT_NE(row[0], 1.0) << offered[i];
      continue;
    }
    // "... with its inputs N level(s) up" is a cone of depth N + 1; without it, depth 1.
    int64_t depth = 1;
    if (size_t at = offered[i].find("with its inputs "); at != std::string::npos)
      depth = 1 + std::stoll(offered[i].substr(at + 16));
    EXPECT_EQ(row[0], 1.0) << offered[i];
    EXPECT_EQ(row[1], 0.0) << offered[i];
    EXPECT_EQ(row[2], double(depth)) << offered[i];
    if (depth > deepest) {
      deepest = depth;
      cone = int64_t(i);
    }
  }
  ASSERT_GE(deepest, 3) << "no cone of depth 3 offered";
  // Take the deepest cone: it is the episode's rewrite, and the state replays to the
  // same rewrites and the same default completion.
  StepResult r = env->step({Event(cone + 1)}, {"rewrites", "rollout_arena"}, {});
  ASSERT_TRUE(r.error.ok()) << r.error.to_string();
  EXPECT_EQ(r.observations[0].as<std::string>(), offered[size_t(cone)] + "\n");
  EpisodeState state = env->state();
  ASSERT_EQ(state.actions.size(), 1u);
  auto again = make();
  ResetOptions ro;
  ro.action_space = state.action_space;
  ASSERT_TRUE(again->reset(state.benchmark, ro, {}).ok());
  StepResult replay =
      again->step(std::vector<Event>(state.actions.begin(), state.actions.end()), {"rewrites", "rollout_arena"}, {});
  ASSERT_TRUE(replay.error.ok()) << replay.error.to_string();
  EXPECT_EQ(replay.observations[0].as<std::string>(), r.observations[0].as<std::string>());
  EXPECT_EQ(replay.observations[1].as<int64_t>(), r.observations[1].as<int64_t>());
  // Still over the limit: stopping finishes a plan that is reported infeasible.
  StepResult stop = env->step({Event("stop")}, {}, {});
  EXPECT_TRUE(stop.terminated);
  EXPECT_EQ(stop.error.code(), StatusCode::kResourceExhausted);
  EXPECT_CONTAINS(stop.error.message(), "over the memory limit of 100000 bytes");
}

TEST(MemoryEnv, TheRuntimeRewardRunsTheWholeGraphInItsArenaInAWorkerOnceAtTheEnd) {
  auto context = std::make_shared<EnvContext>();
  context->worker_binary = std::string(TENSORGYM_BINARY_DIR) + "/bin/tensorgym";
  context->threads = 1;
  Expected<std::unique_ptr<Env>> made = make_env("memory-v0", context);
  ASSERT_TRUE(made.ok());
  Env& env = **made;
  ASSERT_TRUE(env.set_parameter("runner.repeat", "1").ok());
  ASSERT_TRUE(env.set_parameter("runner.min_repeat_ms", "1").ok());
  EXPECT_EQ(env.set_parameter("runner.repeat", "x").code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(env.set_parameter("runner.nope", "1").message(), "runner.nope");
  // Spread-adaptive sampling's knobs; bad values are refused with the range.
  EXPECT_TRUE(env.set_parameter("runner.min_repeat", "1").ok());
  EXPECT_TRUE(env.set_parameter("runner.target_cv", "0.05").ok());
  EXPECT_EQ(env.set_parameter("runner.min_repeat", "0").code(), StatusCode::kInvalidArgument);
  for (const char* bad : {"0", "-0.1", "1.5", "x", "0.1x", ""})
    EXPECT_CONTAINS(env.set_parameter("runner.target_cv", bad).message(), "must be a number in (0, 1]");
  const char* uri = "benchmark://graphs-v0/mobilenet_v2@32";
  // No rewrite and every default: the baseline plan itself, so exactly 0, and only once.
  ResetOptions o;
  o.action_space = "rewrite";
  ASSERT_TRUE(env.reset(uri, o, {}).ok());
  StepResult r = env.step({Event("stop")}, {}, {"runtime"});
  ASSERT_TRUE(r.error.ok()) << r.error.to_string();
  ASSERT_TRUE(r.terminated);
  EXPECT_EQ(r.rewards[0], 0.0);
  EXPECT_EQ(env.step({}, {}, {"runtime"}).rewards[0], 0.0);
  // A split: another graph in another plan, run whole in its arena and compared.
  ASSERT_TRUE(env.reset(uri, o, {}).ok());
  ASSERT_TRUE(env.step({Event(int64_t(1))}, {}, {"runtime"}).error.ok());
  r = env.step({Event("stop")}, {}, {"runtime"});
  ASSERT_TRUE(r.error.ok()) << r.error.to_string();
  EXPECT_TRUE(std::isfinite(r.rewards[0]));
  EXPECT_NE(r.rewards[0], 0.0);
  EXPECT_GT(r.rewards[0], -100.0);
  EpisodeState state = env.state();
  EXPECT_EQ(state.deterministic_rewards.count("runtime"), 0u);  // measured, not deterministic
}

TEST(MemoryEnv, ResetErrors) {
  auto env = make();
  EXPECT_EQ(env->step({}, {}, {}).error.code(), StatusCode::kFailedPrecondition);
  ResetOptions o;
  o.action_space = "schedule";
  EXPECT_CONTAINS(env->reset(kSmall, o, {}).status().message(), "unknown action space");
  o.action_space = "";
  EXPECT_CONTAINS(env->reset(kSmall, o, {"nope"}).status().message(), "unknown observation");
  EXPECT_EQ(env->reset("benchmark://graphs-v0/vgg", o, {}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(env->reset("benchmark://ops-v0/gmm-1", o, {}).status().code(), StatusCode::kInvalidArgument);
  // schedule-v0 refuses graphs, saying why.
  Expected<std::unique_ptr<Env>> sched = make_env("schedule-v0", nullptr);
  ASSERT_TRUE(sched.ok());
  EXPECT_CONTAINS((*sched)->reset(kSmall, {}, {}).status().message(), "not a tensor program");
}

}  // namespace
}  // namespace tensorgym
