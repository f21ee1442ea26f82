// Search on the fpga target: its schedules are tilings chosen by knobs
// (Backend::schedule_knobs), valued by the simulated runtime in this process
// (deterministic). Each knob agent proposes only legal tilings, finds a schedule faster
// than the expert rule's, repeats itself with its seed, resumes from a checkpoint
// exactly; the best episode validates; beam and the models' rewards are refused there.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <set>

#include "agents/evaluator.h"
#include "agents/knob_agents.h"
#include "agents/search.h"
#include "codegen/backend/registry.h"
#include "datasets/registry.h"
#include "envs/replay.h"
#include "tests/env_test_support.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

const std::string kLayer = "benchmark://fpga-v0/resnet18_c7";  // 1x1, stride 2: 565 legal tilings

struct Outcome {
  std::vector<std::string> traces;
  std::vector<double> costs;
  std::string best;
  double best_cost = 0;
};

Outcome outcome(const Search& s) {
  Outcome o;
  for (const TrialRecord& r : s.records()) {
    o.traces.push_back(r.trace);
    o.costs.push_back(r.eval.ok() ? r.eval.cost : -1);
  }
  if (s.best()) {
    o.best = s.best()->trace;
    o.best_cost = s.best()->eval.cost;
  }
  return o;
}

std::unique_ptr<Evaluator> simulated() {
  Expected<std::unique_ptr<Evaluator>> e = make_search_evaluator("runtime", 2, 1, "", "fpga");
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return std::move(*e);
}

SearchSetup setup_for(const std::string& agent, Evaluator* e, int64_t trials) {
  SearchSetup s;
  s.benchmark = kLayer;
  s.agent = agent;
  s.seed = 7;
  s.budget.max_trials = trials;
  s.evaluator = e;
  s.options.batch_size = 8;
  s.env_context = env_test::context();
  return s;
}

Outcome run(const SearchSetup& setup) {
  Expected<std::unique_ptr<Search>> s = Search::create(setup);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return {};
  EXPECT_TRUE((*s)->run().ok());
  return outcome(**s);
}

// The expert rule's runtime on the layer, simulated by the same evaluator.
double expert_runtime(Evaluator& e) {
  Expected<Benchmark> b = DatasetRegistry::global().resolve(kLayer);
  std::vector<Evaluation> v = e.evaluate({Candidate{kLayer, "", b->expert_schedule}});
  EXPECT_TRUE(v[0].ok()) << v[0].status.to_string();
  return v[0].cost;
}

TEST(FpgaSearch, TheTargetIsScheduledByKnobs) {
  Expected<Benchmark> b = DatasetRegistry::global().resolve(kLayer);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(has_schedule_knobs("fpga", b->program));
  EXPECT_FALSE(has_schedule_knobs("cpu", b->program));
  const Backend& fpga = **find_backend("fpga");
  Expected<std::vector<ScheduleKnob>> knobs = fpga.schedule_knobs(b->program);
  ASSERT_TRUE(knobs.ok());
  ASSERT_EQ(knobs->size(), 5u);
  EXPECT_EQ((*knobs)[0].name, "tile_h");
  EXPECT_EQ((*knobs)[0].values, (std::vector<int64_t>{1, 2, 7, 14}));  // divisors of the 14 output rows
  EXPECT_EQ((*knobs)[4].values, (std::vector<int64_t>{1, 2}));
  // A combination the design refuses says why; a wrong count of values too.
  Expected<std::string> too_big = fpga.knob_schedule(b->program, {14, 14, 16, 8, 2});
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.status().code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(too_big.status().message(), "the design has");
  EXPECT_EQ(fpga.knob_schedule(b->program, {1, 1}).status().code(), StatusCode::kInvalidArgument);
  // Primitive-by-primitive targets have none.
  EXPECT_EQ(host_backend().schedule_knobs(b->program).status().code(), StatusCode::kUnimplemented);
}

class FpgaAgentTest : public ::testing::TestWithParam<const char*> {};

TEST_P(FpgaAgentTest, ProposesLegalTilingsBeatsTheExpertAndRepeatsItself) {
  std::unique_ptr<Evaluator> e = simulated();
  SearchSetup setup = setup_for(GetParam(), e.get(), 120);
  Outcome a = run(setup);
  ASSERT_EQ(a.traces.size(), 120u);
  EXPECT_EQ(std::set<std::string>(a.traces.begin(), a.traces.end()).size(), a.traces.size());  // no repeats
  for (double c : a.costs) EXPECT_GT(c, 0) << "every proposal is a legal tiling";
  EXPECT_LT(a.best_cost, expert_runtime(*e));
  Outcome b = run(setup);
  EXPECT_EQ(a.traces, b.traces);
  EXPECT_EQ(a.costs, b.costs);
}

TEST_P(FpgaAgentTest, ResumesExactly) {
  std::unique_ptr<Evaluator> e = simulated();
  SearchSetup setup = setup_for(GetParam(), e.get(), 60);
  Outcome straight = run(setup);
  SearchSetup half = setup;
  half.budget.max_trials = 29;  // inside a batch
  Expected<std::unique_ptr<Search>> first = Search::create(half);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE((*first)->run().ok());
  const std::string path = ::testing::TempDir() + "/fpga_search_" + std::to_string(getpid()) + GetParam() + ".ckpt";
  ASSERT_TRUE((*first)->save_checkpoint(path).ok());
  Expected<std::unique_ptr<Search>> resumed = Search::resume(path, setup);
  ASSERT_TRUE(resumed.ok()) << resumed.status().to_string();
  ASSERT_TRUE((*resumed)->run().ok());
  Outcome o = outcome(**resumed);
  EXPECT_EQ(o.traces, straight.traces);
  EXPECT_EQ(o.costs, straight.costs);
  EXPECT_EQ(o.best, straight.best);
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Agents, FpgaAgentTest, ::testing::Values("random", "greedy", "evolutionary"));

TEST(FpgaSearch, TheBestEpisodeValidatesThroughTheRunner) {
  std::unique_ptr<Evaluator> e = simulated();
  SearchSetup setup = setup_for("evolutionary", e.get(), 40);
  Expected<std::unique_ptr<Search>> s = Search::create(setup);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->run().ok());
  Expected<EpisodeState> best = (*s)->best_episode_state();
  ASSERT_TRUE(best.ok()) << best.status().to_string();
  EXPECT_EQ(best->target, "fpga");
  ASSERT_TRUE(best->deterministic_rewards.count("runtime"));
  EXPECT_GT(best->deterministic_rewards.at("runtime"), 0);  // faster than the smallest tiling
  EnvMaker make = [](const std::string& name) { return make_env(name, env_test::context()); };
  Expected<ValidationOutcome> v = validate_episode(*best, 0, make);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_TRUE(v->ok) << v->error;  // outputs checked by the runner, the reward to the bit
}

TEST(FpgaSearch, RefusesWhatDoesNotApplyThere) {
  std::unique_ptr<Evaluator> e = simulated();
  Expected<std::unique_ptr<Search>> beam = Search::create(setup_for("beam", e.get(), 10));
  ASSERT_FALSE(beam.ok());
  EXPECT_EQ(beam.status().code(), StatusCode::kNotFound);
  EXPECT_CONTAINS(beam.status().message(), "beam steps through primitives");
  Expected<std::unique_ptr<Evaluator>> model = make_search_evaluator("est_cycles", 1, 1, "", "fpga");
  ASSERT_FALSE(model.ok());
  EXPECT_CONTAINS(model.status().message(), "valued by runtime");
  // A program the accelerator cannot run: the agent cannot start, and says why.
  SearchSetup gemm = setup_for("random", e.get(), 10);
  gemm.benchmark = "benchmark://ops-v0/gmm-1";
  Expected<std::unique_ptr<Search>> cannot = Search::create(gemm);
  ASSERT_FALSE(cannot.ok());
  EXPECT_CONTAINS(cannot.status().message(), "conv2d on the accelerator");
}

}  // namespace
}  // namespace tensorgym
