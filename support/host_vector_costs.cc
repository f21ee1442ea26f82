#include "support/host_vector_costs.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "support/cycle_probe.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tensorgym {
namespace {

#if defined(__x86_64__)

// Floats the probes read and write: 16 KiB each, in L1. Lanes 80 floats (5 lines) apart.
alignas(64) float g_data[4096];
alignas(64) float g_copy[4096];
constexpr int kLaneStride = 80;
constexpr int kVectorsPerRound = 64;

__attribute__((target("avx2"))) float gathers(int64_t rounds) {
  const __m256i index = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(kLaneStride));
  // Four independent sums: the gathers' throughput, not the adds' latency.
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  for (int64_t r = 0; r < rounds; ++r) {
    for (int i = 0; i < kVectorsPerRound; i += 4) {
      s0 = _mm256_add_ps(s0, _mm256_i32gather_ps(g_data + i, index, 4));
      s1 = _mm256_add_ps(s1, _mm256_i32gather_ps(g_data + i + 1, index, 4));
      s2 = _mm256_add_ps(s2, _mm256_i32gather_ps(g_data + i + 2, index, 4));
      s3 = _mm256_add_ps(s3, _mm256_i32gather_ps(g_data + i + 3, index, 4));
    }
  }
  const __m256 s = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
  return _mm256_cvtss_f32(s);
}

__attribute__((target("avx512f,avx512vl"))) void scatters(int64_t rounds) {
  const __m256i index = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(kLaneStride));
  const __m256 value = _mm256_set1_ps(1.0f);
  for (int64_t r = 0; r < rounds; ++r) {
    for (int i = 0; i < kVectorsPerRound; ++i) _mm256_i32scatter_ps(g_data + i, index, value, 4);
    asm volatile("" ::: "memory");
  }
}

// Each vector gathered from one array and scattered to another: the two instructions
// independent of each other from one vector to the next.
__attribute__((target("avx512f,avx512vl"))) void gathers_and_scatters(int64_t rounds) {
  const __m256i index = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(kLaneStride));
  for (int64_t r = 0; r < rounds; ++r) {
    for (int i = 0; i < kVectorsPerRound; ++i)
      _mm256_i32scatter_ps(g_copy + i, index, _mm256_i32gather_ps(g_data + i, index, 4), 4);
    asm volatile("" ::: "memory");
  }
}

// Cycles a lane, to one decimal: the probe's jitter is in the second. At least 0.1,
// so that a measured figure never reads as "no such instruction" (0).
template <typename Probe>
double cycles_per_lane(Probe probe, double lanes) {
  const double cycles = probe_cycles_per_unit(probe, lanes);
  return cycles > 0 ? std::max(0.1, std::round(cycles * 10) / 10) : 0;
}

HostVectorCosts measure() {
  HostVectorCosts c;
  __builtin_cpu_init();
  constexpr int64_t kRounds = 256;  // 16k vectors of 8 lanes
  const double lanes = double(kRounds) * kVectorsPerRound * 8;
  if (__builtin_cpu_supports("avx2")) {
    volatile float sink = 0;
    c.gather_lane_cycles = cycles_per_lane([&] { sink = gathers(kRounds); }, lanes);
  }
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) {
    c.scatter_lane_cycles = cycles_per_lane([] { scatters(kRounds); }, lanes);
    c.gather_scatter_lane_cycles = cycles_per_lane([] { gathers_and_scatters(kRounds); }, lanes);
  }
  return c;
}

#else

HostVectorCosts measure() { return {}; }

#endif

}  // namespace

const HostVectorCosts& host_vector_costs() {
  static const HostVectorCosts costs = measure();
  return costs;
}

}  // namespace tensorgym
