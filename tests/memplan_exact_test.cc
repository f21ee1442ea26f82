// The exact offset planner: optimal against brute force on small instances, its
// proven gap never below the true gap, time limits honoured on hard and on large
// instances; the time sweep's plans; and the generator of strip tilings with known
// optima.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>

#include "memplan/offset_planners.h"
#include "memplan/strip_tiling.h"
#include "memplan/sweep_fit.h"
#include "memplan/verify.h"
#include "support/random.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

// Small random instances where the optimum often exceeds the live bound: few time
// steps, sizes 1-5, alignment 1 or 2.
Instance small_instance(uint64_t seed) {
  Rng rng(seed);
  Instance inst;
  const int n = int(rng.range(3, 8));
  for (int i = 0; i < n; ++i) {
    Buffer b;
    b.id = std::to_string(i);
    b.lower = rng.range(0, 5);
    b.upper = b.lower + rng.range(1, 4);
    b.size = rng.range(1, 5);
    inst.buffers.push_back(b);
  }
  inst.alignment = rng.chance(0.25) ? 2 : 1;
  return inst;
}

// The smallest arena by trying every aligned offset for every buffer (no canonical
// forms, no bounds beyond the best found): independent of the planner.
int64_t brute_force_optimum(const Instance& inst) {
  const size_t n = inst.buffers.size();
  const std::vector<std::vector<int>> conflicts = lifetime_conflicts(inst);
  int64_t best = 0;
  for (const Buffer& b : inst.buffers) best += align_up(b.size, inst.alignment);
  Offsets offsets(n, -1);
  std::function<void(size_t, int64_t)> place = [&](size_t i, int64_t top) {
    if (top >= best) return;
    if (i == n) {
      best = top;
      return;
    }
    const Buffer& b = inst.buffers[i];
    for (int64_t off = 0; off + b.size < best; off += inst.alignment) {
      bool free = true;
      for (int j : conflicts[i])
        if (offsets[size_t(j)] >= 0 && off < offsets[size_t(j)] + inst.buffers[size_t(j)].size &&
            offsets[size_t(j)] < off + b.size)
          free = false;
      if (!free) continue;
      offsets[i] = off;
      place(i + 1, std::max(top, off + b.size));
      offsets[i] = -1;
    }
  };
  place(0, 0);
  return best;
}

Expected<StripTiling> strip_tiling(uint64_t seed, int buffers) {
  StripTilingOptions o;
  o.seed = seed;
  o.buffers = buffers;
  return make_strip_tiling(o);
}

TEST(ExactPlanner, IsOptimalAgainstBruteForceAndProvesBoundsAboveTheLiveBound) {
  OffsetPlannerOptions options;
  options.time_limit_s = 10;
  int above_live = 0;
  for (uint64_t seed = 1; seed <= 600; ++seed) {
    const Instance inst = small_instance(seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    const int64_t optimum = brute_force_optimum(inst);
    Expected<OffsetPlan> plan = plan_offsets("exact", inst, options);
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    ASSERT_TRUE(verify_offsets(inst, plan->offsets).ok());
    EXPECT_EQ(plan->arena, optimum);
    EXPECT_TRUE(plan->proven_optimal);
    EXPECT_EQ(plan->lower_bound, optimum);
    int64_t largest = 0;
    for (const Buffer& b : inst.buffers) largest = std::max(largest, b.size);
    above_live += optimum > std::max(peak_live_bytes(inst), largest);
  }
  // The proofs were exercised: some optima lie above the live bound.
  EXPECT_GE(above_live, 20);
}

TEST(ExactPlanner, ProvenGapIsNeverBelowTheTrueGap) {
  // Cut short at every limit from nothing up: the bound never passes the optimum.
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    Expected<StripTiling> t = strip_tiling(seed, 300);
    ASSERT_TRUE(t.ok());
    for (double limit : {0.0, 0.05, 0.3}) {
      OffsetPlannerOptions options;
      options.time_limit_s = limit;
      Expected<OffsetPlan> plan = plan_offsets("exact", t->instance, options);
      ASSERT_TRUE(plan.ok());
      EXPECT_LE(plan->lower_bound, t->optimum);
      EXPECT_GE(plan->arena, t->optimum);
      EXPECT_EQ(plan->proven_optimal, plan->arena == plan->lower_bound);
      EXPECT_TRUE(verify_offsets(t->instance, plan->offsets).ok());
    }
  }
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const Instance inst = small_instance(1000 + seed);
    OffsetPlannerOptions options;
    options.time_limit_s = 0;
    Expected<OffsetPlan> plan = plan_offsets("exact", inst, options);
    ASSERT_TRUE(plan.ok());
    const int64_t optimum = brute_force_optimum(inst);
    EXPECT_LE(plan->lower_bound, optimum);
    EXPECT_GE(plan->arena, optimum);
  }
}

TEST(ExactPlanner, SolvesSmallStripTilingsToTheirOptimum) {
  OffsetPlannerOptions options;
  options.time_limit_s = 30;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    StripTilingOptions o;
    o.seed = seed;
    o.buffers = 50;
    o.width = 4096;
    o.granule = 16;
    Expected<StripTiling> t = make_strip_tiling(o);
    ASSERT_TRUE(t.ok());
    Expected<OffsetPlan> plan = plan_offsets("exact", t->instance, options);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(*verify_offsets(t->instance, plan->offsets), t->optimum) << "seed " << seed;
    EXPECT_TRUE(plan->proven_optimal);
  }
}

double seconds_of(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(ExactPlanner, HonoursItsTimeLimitOnHardAndOnLargeInstances) {
  // Generous margins: the limit bounds the search; the greedy start and the set-up
  // come before it. What is asserted is that it stops, not how fast the machine is.
  for (int buffers : {400, 20000}) {
    SCOPED_TRACE(std::to_string(buffers) + " buffers");
    StripTilingOptions o;
    o.seed = 7;
    o.buffers = buffers;
    o.initial_pieces = buffers > 1000 ? 40 : 6;
    Expected<StripTiling> t = make_strip_tiling(o);
    ASSERT_TRUE(t.ok());
    OffsetPlannerOptions options;
    options.time_limit_s = 1;
    Expected<OffsetPlan> plan = invalid_argument("not run");
    const double s = seconds_of([&] { plan = plan_offsets("exact", t->instance, options); });
    ASSERT_TRUE(plan.ok());
    EXPECT_LT(s, 30);
    EXPECT_TRUE(verify_offsets(t->instance, plan->offsets).ok());
    EXPECT_LE(plan->lower_bound, t->optimum);
  }
}

TEST(SweepFit, TilesStripsExactlyAndOnlyReturnsValidPlans) {
  const auto far = std::chrono::steady_clock::now() + std::chrono::hours(1);
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    Expected<StripTiling> t = strip_tiling(seed, 80);
    ASSERT_TRUE(t.ok());
    Offsets offsets;
    int64_t nodes = 0;
    // Without slack anywhere these need under 400,000 placements.
    ASSERT_TRUE(sweep_fit(t->instance, t->optimum, 4000000, far, 0, &offsets, &nodes)) << "seed " << seed;
    EXPECT_EQ(*verify_offsets(t->instance, offsets), t->optimum);
    EXPECT_GT(nodes, 0);
    // Below the optimum there is nothing to find.
    EXPECT_FALSE(sweep_fit(t->instance, t->optimum - 1024, 100000, far, 0, &offsets, &nodes));
  }
  // With slack, whatever it returns fits the capacity (it may give up).
  int found = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Instance inst = small_instance(seed);
    inst.alignment = 1 + int64_t(seed % 2);
    for (int64_t extra : {0, 1, 3}) {
      const int64_t capacity = peak_live_bytes(inst) + extra;
      for (uint64_t restart : {0, 1, 2}) {
        Offsets offsets;
        if (!sweep_fit(inst, capacity, 10000, far, restart, &offsets, nullptr)) continue;
        ++found;
        Expected<int64_t> arena = verify_offsets(inst, offsets);
        ASSERT_TRUE(arena.ok()) << arena.status().to_string();
        EXPECT_LE(*arena, capacity);
      }
    }
  }
  EXPECT_GT(found, 100);
  // Past its size it leaves the instance to the offset-ordered search.
  StripTilingOptions big;
  big.buffers = int(kMaxSweepBuffers) + 100;
  big.initial_pieces = 20;
  Expected<StripTiling> t = make_strip_tiling(big);
  Offsets offsets;
  EXPECT_FALSE(sweep_fit(t->instance, t->optimum, 1000000, far, 0, &offsets, nullptr));
}

TEST(SweepFit, JumpsBackToThePlacementsAFailureInvolves) {
  // Tilings of 250 buffers, where a wrong arrangement shows many moments after it was
  // made: going back chronologically, the sweep found 3 of these 6 within a million
  // placements each; jumping back to the placements a failure involves, and never
  // entering an arrangement that failed before, it finds at least 5.
  const auto far = std::chrono::steady_clock::now() + std::chrono::hours(1);
  int found = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    Expected<StripTiling> t = strip_tiling(seed, 250);
    ASSERT_TRUE(t.ok());
    Offsets offsets;
    if (!sweep_fit(t->instance, t->optimum, 1000000, far, 0, &offsets, nullptr)) continue;
    ++found;
    EXPECT_EQ(*verify_offsets(t->instance, offsets), t->optimum) << "seed " << seed;
  }
  EXPECT_GE(found, 5);
}

TEST(SweepFit, AMemoCarriesRefutationsOnlyAtItsCapacity) {
  const auto far = std::chrono::steady_clock::now() + std::chrono::hours(1);
  Expected<StripTiling> t = strip_tiling(3, 120);
  ASSERT_TRUE(t.ok());
  SweepMemo memo;
  Offsets offsets;
  int64_t first = 0, again = 0;
  // Below the optimum the first moment fails, and the memo remembers it: a second call
  // refutes it without a placement.
  EXPECT_FALSE(sweep_fit(t->instance, t->optimum - 1024, 100000, far, 0, &offsets, &first, &memo));
  EXPECT_FALSE(sweep_fit(t->instance, t->optimum - 1024, 100000, far, 1, &offsets, &again, &memo));
  EXPECT_EQ(again, 0);
  EXPECT_GT(first, 0);
  // At another capacity it forgets: the optimum is found with the same memo.
  ASSERT_TRUE(sweep_fit(t->instance, t->optimum, 4000000, far, 0, &offsets, nullptr, &memo));
  EXPECT_EQ(*verify_offsets(t->instance, offsets), t->optimum);
  // Restarts that share a memo keep finding valid plans.
  for (uint64_t restart = 1; restart <= 3; ++restart) {
    ASSERT_TRUE(sweep_fit(t->instance, t->optimum, 4000000, far, restart, &offsets, nullptr, &memo));
    EXPECT_EQ(*verify_offsets(t->instance, offsets), t->optimum);
  }
}

TEST(SweepFit, CountsTheMomentsWithoutSlack) {
  Expected<StripTiling> t = strip_tiling(5, 60);
  ASSERT_TRUE(t.ok());
  EXPECT_DOUBLE_EQ(tight_moment_fraction(t->instance, t->optimum), 1.0);
  EXPECT_DOUBLE_EQ(tight_moment_fraction(t->instance, t->optimum + 1024), 0.0);
  // Two moments: at 0 the live bytes are 10 (tight at 10), at 5 they are 6.
  Instance inst;
  inst.buffers = {{"a", 0, 10, 4}, {"b", 0, 5, 6}, {"c", 5, 10, 2}};
  EXPECT_DOUBLE_EQ(tight_moment_fraction(inst, 10), 0.5);
  EXPECT_DOUBLE_EQ(tight_moment_fraction(Instance{}, 10), 0.0);
}

TEST(StripTiling, IsAPerfectTilingWithItsWitnessAndRepeatsBySeed) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    StripTilingOptions o;
    o.seed = seed;
    o.buffers = 100 + int(seed) * 20;
    Expected<StripTiling> t = make_strip_tiling(o);
    ASSERT_TRUE(t.ok());
    const Instance& inst = t->instance;
    EXPECT_GE(int(inst.buffers.size()), o.buffers);
    EXPECT_LE(int(inst.buffers.size()), o.buffers + 2 * o.max_new_pieces);
    EXPECT_EQ(*verify_offsets(inst, t->witness), o.width);
    EXPECT_EQ(t->optimum, o.width);
    // Every moment is covered exactly: live bytes equal the width throughout.
    const LiveProfile profile = live_profile(inst);
    for (size_t k = 0; k + 1 < profile.times.size(); ++k) EXPECT_EQ(profile.live[k], o.width);
    for (const Buffer& b : inst.buffers) EXPECT_EQ(b.size % o.granule, 0);
    Expected<StripTiling> again = make_strip_tiling(o);
    EXPECT_EQ(again->witness, t->witness);
    o.seed += 1000;
    EXPECT_NE(make_strip_tiling(o)->witness, t->witness);
  }
  StripTilingOptions bad;
  bad.width = 1000;
  bad.granule = 64;
  EXPECT_CONTAINS(make_strip_tiling(bad).status().message(), "multiple of granule");
  bad = StripTilingOptions();
  bad.width = 64;
  bad.granule = 64;
  EXPECT_CONTAINS(make_strip_tiling(bad).status().message(), "too few granules");
  bad = StripTilingOptions();
  bad.max_run = 1;  // could never move a cut between one-granule pieces
  EXPECT_CONTAINS(make_strip_tiling(bad).status().message(), "max_run");
  bad = StripTilingOptions();
  bad.max_new_pieces = 1;  // would merge pieces until one is left
  EXPECT_CONTAINS(make_strip_tiling(bad).status().message(), "max_new_pieces");
  bad = StripTilingOptions();
  bad.buffers = 0;
  EXPECT_EQ(make_strip_tiling(bad).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tensorgym
