#include "support/host_memory_bandwidth.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "support/cycle_probe.h"
#include "support/host_caches.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tensorgym {
namespace {

#if defined(__x86_64__)

// Sums `n` floats (a multiple of 32) with four independent vector sums: the loads'
// throughput, not the adds' latency. In the sanitizer builds (scripts/sanitize) the
// loop is left as it is: a shadow check or a coverage counter per load would be
// measured with the loads.
#if defined(__clang__)
#define TG_MEASURED_LOOP __attribute__((no_sanitize("address", "coverage")))
#else
#define TG_MEASURED_LOOP
#endif
__attribute__((target("avx"))) TG_MEASURED_LOOP float stream_sum(const float* p, size_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  for (size_t i = 0; i < n; i += 32) {
    s0 = _mm256_add_ps(s0, _mm256_load_ps(p + i));
    s1 = _mm256_add_ps(s1, _mm256_load_ps(p + i + 8));
    s2 = _mm256_add_ps(s2, _mm256_load_ps(p + i + 16));
    s3 = _mm256_add_ps(s3, _mm256_load_ps(p + i + 24));
  }
  const __m256 s = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
  return _mm256_cvtss_f32(s);
}

HostMemoryBandwidth measure() {
  HostMemoryBandwidth b;
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx")) return b;
  int64_t l2 = 0, l3 = 0;
  for (const HostCache& c : host_data_caches()) {
    if (c.level == 2) l2 = c.bytes;
    if (c.level == 3) l3 = c.bytes;
  }
  // Four times the L2 so that every pass misses it, half the L3 at most so that
  // every pass hits it (other cores and tenants use the rest).
  const int64_t bytes = std::min(4 * l2, l3 / 2) / 4096 * 4096;
  if (l2 <= 0 || l3 <= 0 || bytes < 4 * l2 / 2) return b;
  float* data = static_cast<float*>(std::aligned_alloc(4096, size_t(bytes)));
  if (!data) return b;
  std::memset(data, 0, size_t(bytes));
  volatile float sink = 0;
  const double cycles_per_byte =
      probe_cycles_per_unit([&] { sink = stream_sum(data, size_t(bytes) / sizeof(float)); }, double(bytes));
  std::free(data);
  // Whole bytes: the probe's jitter is in the fraction. At least 1, so that a
  // measured figure never reads as "unknown" (0).
  if (cycles_per_byte > 0) b.l3_bytes_per_cycle = std::max(1.0, std::round(1 / cycles_per_byte));
  return b;
}

#else

HostMemoryBandwidth measure() { return {}; }

#endif

}  // namespace

const HostMemoryBandwidth& host_memory_bandwidth() {
  static const HostMemoryBandwidth bandwidth = measure();
  return bandwidth;
}

}  // namespace tensorgym
