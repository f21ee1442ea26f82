// The learned cost model (XGBoost on per-store features): it learns to rank schedules
// it has not seen (pairwise accuracy well above chance on a generated training set
// labelled by est_cycles), trains deterministically, and predicts bit-identically after
// a save and a load.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <set>

#include "agents/cost_model_xgb.h"
#include "agents/sketch.h"
#include "codegen/analysis/cost_model.h"
#include "codegen/lower/lower.h"
#include "datasets/registry.h"

namespace tensorgym {
namespace {

// Distinct random sketch schedules of a benchmark with their features and est_cycles.
std::vector<CostSample> generate(const std::string& uri, int count, uint64_t seed) {
  Expected<Benchmark> b = DatasetRegistry::global().resolve(uri);
  EXPECT_TRUE(b.ok());
  SketchPlan plan = make_sketch_plan(*b->program);
  Rng rng(seed);
  std::vector<CostSample> out;
  std::set<std::string> seen;
  for (int attempt = 0; attempt < count * 20 && int(out.size()) < count; ++attempt) {
    Genome g = random_genome(plan, rng);
    Expected<Schedule> s = render_genome(plan, g, b->program);
    if (!s.ok() || !seen.insert(s->trace().to_string()).second) continue;
    Expected<LoopNest> nest = lower(*s);
    if (!nest.ok()) continue;
    CostSample c;
    c.rows = extract_features(*nest).rows;
    c.cost = est_cycles(*nest);
    c.valid = true;
    out.push_back(std::move(c));
  }
  EXPECT_EQ(int(out.size()), count);
  return out;
}

RankingQuality held_out_quality(const XgbCostModel& m, const std::vector<CostSample>& test, int k) {
  std::vector<std::vector<StoreFeatureRow>> programs;
  std::vector<double> costs;
  std::vector<bool> valid;
  for (const CostSample& s : test) {
    programs.push_back(s.rows);
    costs.push_back(s.cost);
    valid.push_back(s.valid);
  }
  Expected<std::vector<double>> scores = m.predict(programs);
  EXPECT_TRUE(scores.ok());
  return ranking_quality(*scores, costs, valid, k);
}

TEST(CostModelXgbTest, LearnsToRankHeldOutSchedules) {
  for (const char* uri : {"benchmark://ops-v0/gmm-3", "benchmark://ops-v0/c2d-2"}) {
    std::vector<CostSample> all = generate(uri, 400, 11);
    std::vector<CostSample> train(all.begin(), all.begin() + 300), test(all.begin() + 300, all.end());
    XgbCostModel m;
    ASSERT_TRUE(m.train(train).ok());
    RankingQuality q = held_out_quality(m, test, 10);
    std::printf("%s: held-out pairwise accuracy %.3f over %lld pairs, top-10 recall %.2f\n", uri,
                q.pairwise_accuracy, (long long)q.pairs, q.top_k_recall);
    EXPECT_GT(q.pairwise_accuracy, 0.7) << uri;
    EXPECT_GT(q.pairs, 4000);
    // An untrained model ranks by chance (every score 0: ties count half).
    XgbCostModel untrained;
    EXPECT_NEAR(held_out_quality(untrained, test, 10).pairwise_accuracy, 0.5, 1e-9);
  }
}

TEST(CostModelXgbTest, DeterministicAndExactAfterSaveLoad) {
  std::vector<CostSample> all = generate("benchmark://ops-v0/gmm-1", 120, 5);
  std::vector<CostSample> train(all.begin(), all.begin() + 90), test(all.begin() + 90, all.end());
  XgbCostModel a, b;
  ASSERT_TRUE(a.train(train).ok());
  ASSERT_TRUE(b.train(train).ok());
  Expected<std::string> bytes_a = a.save(), bytes_b = b.save();
  ASSERT_TRUE(bytes_a.ok() && bytes_b.ok());
  EXPECT_FALSE(bytes_a->empty());
  EXPECT_EQ(*bytes_a, *bytes_b);

  std::vector<std::vector<StoreFeatureRow>> programs;
  for (const CostSample& s : test) programs.push_back(s.rows);
  Expected<std::vector<double>> before = a.predict(programs);
  ASSERT_TRUE(before.ok());

  XgbCostModel loaded;
  ASSERT_TRUE(loaded.load(*bytes_a).ok());
  EXPECT_TRUE(loaded.trained());
  Expected<std::vector<double>> after = loaded.predict(programs);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*before, *after);

  const std::string path = ::testing::TempDir() + "/cost_model_" + std::to_string(getpid()) + ".ubj";
  ASSERT_TRUE(a.save_file(path).ok());
  XgbCostModel from_file;
  ASSERT_TRUE(from_file.load_file(path).ok());
  EXPECT_EQ(*from_file.predict(programs), *before);
  std::remove(path.c_str());
}

TEST(CostModelXgbTest, Errors) {
  XgbCostModel m;
  EXPECT_FALSE(m.trained());
  EXPECT_EQ(m.train({}).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(m.load("not a model").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(m.load_file("/nonexistent/model.ubj").code(), StatusCode::kNotFound);
  Expected<std::string> empty = m.save();
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  // A program without stores scores -infinity.
  Expected<std::vector<double>> s = m.predict(std::vector<std::vector<StoreFeatureRow>>{{}});
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(std::isinf((*s)[0]) && (*s)[0] < 0);
}

TEST(RankingQualityTest, CountsPairsAndRecall) {
  // Costs 1 < 2 < 3 < 4; scores rank 1 and 2 the wrong way round.
  std::vector<double> costs = {1, 2, 3, 4}, scores = {3, 4, 2, 1};
  RankingQuality q = ranking_quality(scores, costs, {true, true, true, true}, 2);
  EXPECT_EQ(q.pairs, 6);
  EXPECT_DOUBLE_EQ(q.pairwise_accuracy, 5.0 / 6.0);
  EXPECT_DOUBLE_EQ(q.top_k_recall, 1.0);  // the top two are the same set
  q = ranking_quality(scores, costs, {true, true, true, true}, 1);
  EXPECT_DOUBLE_EQ(q.top_k_recall, 0.0);
  // Invalid samples are left out; ties in score count half.
  q = ranking_quality({1, 1, 5}, {1, 2, 3}, {true, true, false}, 1);
  EXPECT_EQ(q.pairs, 1);
  EXPECT_DOUBLE_EQ(q.pairwise_accuracy, 0.5);
}

}  // namespace
}  // namespace tensorgym
