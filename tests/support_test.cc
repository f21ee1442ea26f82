// support/: deferred release, the host's measured gather and scatter costs.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <thread>

#include "support/deferred_release.h"
#include "support/host_vector_costs.h"

namespace tensorgym {
namespace {

// An object that counts its destructions.
std::shared_ptr<const void> counted(int* destroyed) {
  return std::shared_ptr<const int>(new int(0), [destroyed](const int* p) {
    ++*destroyed;
    delete p;
  });
}

TEST(DeferredRelease, OutsideAScopeTheObjectGoesAtOnce) {
  int destroyed = 0;
  release_later(counted(&destroyed));
  EXPECT_EQ(destroyed, 1);
}

TEST(DeferredRelease, InsideAScopeTheObjectGoesWhenTheScopeCloses) {
  int destroyed = 0;
  {
    DeferredReleaseScope scope;
    release_later(counted(&destroyed));
    release_later(counted(&destroyed));
    EXPECT_EQ(destroyed, 0);
    EXPECT_EQ(scope.parked(), 2u);
  }
  EXPECT_EQ(destroyed, 2);
}

TEST(DeferredRelease, ASharedObjectIsNotParked) {
  int destroyed = 0;
  std::shared_ptr<const void> kept = counted(&destroyed);
  DeferredReleaseScope scope;
  release_later(kept);
  EXPECT_EQ(scope.parked(), 0u);
  EXPECT_EQ(kept.use_count(), 1);
  EXPECT_EQ(destroyed, 0);
}

TEST(DeferredRelease, TheInnermostScopeTakesTheObjectAndTheOuterOneResumes) {
  int inner_destroyed = 0, outer_destroyed = 0;
  DeferredReleaseScope outer;
  {
    DeferredReleaseScope inner;
    release_later(counted(&inner_destroyed));
    EXPECT_EQ(inner.parked(), 1u);
    EXPECT_EQ(outer.parked(), 0u);
  }
  EXPECT_EQ(inner_destroyed, 1);
  release_later(counted(&outer_destroyed));
  EXPECT_EQ(outer.parked(), 1u);
  EXPECT_EQ(outer_destroyed, 0);
}

TEST(DeferredRelease, ScopesArePerThread) {
  int destroyed = 0;
  DeferredReleaseScope scope;
  std::thread([&] { release_later(counted(&destroyed)); }).join();
  EXPECT_EQ(destroyed, 1);
  EXPECT_EQ(scope.parked(), 0u);
}

TEST(HostVectorCosts, MeasuredOnceInCyclesALane) {
  const HostVectorCosts& a = host_vector_costs();
  const HostVectorCosts& b = host_vector_costs();
  EXPECT_EQ(&a, &b);  // remembered, not measured again
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) {
    // Every x86 core known gathers a lane in between a tenth of a cycle and tens of cycles.
    EXPECT_GT(a.gather_lane_cycles, 0.1);
    EXPECT_LT(a.gather_lane_cycles, 50);
  }
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) {
    EXPECT_GT(a.scatter_lane_cycles, 0.1);
    EXPECT_LT(a.scatter_lane_cycles, 50);
    // A gather and a scatter in turn take about as long as the slower of the two alone
    // at least (each figure is timed against its own runs of the add chain: on a busy
    // VM they differ by up to a fifth).
    EXPECT_GE(a.gather_scatter_lane_cycles, 0.7 * std::max(a.gather_lane_cycles, a.scatter_lane_cycles));
    EXPECT_LT(a.gather_scatter_lane_cycles, 100);
  } else {
    EXPECT_EQ(a.scatter_lane_cycles, 0);
    EXPECT_EQ(a.gather_scatter_lane_cycles, 0);
  }
#endif
}

}  // namespace
}  // namespace tensorgym
