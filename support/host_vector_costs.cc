#include "support/host_vector_costs.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tensorgym {
namespace {

using Clock = std::chrono::steady_clock;

// The fastest of `tries` timings of fn(), in nanoseconds: noise only ever adds time.
template <typename Fn>
double fastest_ns(int tries, Fn fn) {
  double best = 1e300;
  for (int t = 0; t < tries; ++t) {
    const auto t0 = Clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
  }
  return best;
}

#if defined(__x86_64__)

constexpr int kChainAdds = 64;

// kChainAdds dependent integer adds per iteration: one cycle each on every x86 core,
// so its time gives the length of a cycle at the clock the core runs now.
void add_chain(int64_t iterations) {
  uint64_t x = 0;
  for (int64_t i = 0; i < iterations; ++i) {
#define TG_ADD4 "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
#define TG_ADD16 TG_ADD4 TG_ADD4 TG_ADD4 TG_ADD4
    asm volatile(TG_ADD16 TG_ADD16 TG_ADD16 TG_ADD16 : "+r"(x));
#undef TG_ADD16
#undef TG_ADD4
  }
}

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

// The fastest run of `probe` over the fastest run of the add chain, the two taken in
// turns: noise (another tenant, a VM's slow spells) only ever adds time, and taking
// turns puts both through the same spells. A tenant on the host core's other hardware
// thread slows the probe (it shares the load and store units) and not the chain, for
// stretches of milliseconds: turns go on until neither has got faster for 60 turns
// (about 20 ms), at most 400. On a Zen 4 VM, processes measured gathers at 1.2 to 1.9
// cycles a lane with a fixed 25 turns, at 1.2 to 1.5 with this rule.
template <typename Probe>
double cycles_per_lane(Probe probe, double lanes) {
  constexpr int kMaxTurns = 400, kSettledTurns = 60;
  constexpr int64_t kChainIterations = 2000;  // 128k cycles: tens of microseconds
  double chain = 1e300, lane = 1e300;
  for (int t = 0, unchanged = 0; t < kMaxTurns && unchanged < kSettledTurns; ++t, ++unchanged) {
    const double c = fastest_ns(1, [] { add_chain(kChainIterations); }) / (kChainIterations * kChainAdds);
    const double l = fastest_ns(1, probe) / lanes;
    if (c < chain * 0.995 || l < lane * 0.995) unchanged = 0;  // still finding quieter turns
    chain = std::min(chain, c);
    lane = std::min(lane, l);
  }
  if (!(chain > 0) || lane >= 1e300) return 0;
  // One decimal: the probe's jitter is in the second.
  return std::round(lane / chain * 10) / 10;
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
