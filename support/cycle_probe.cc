#include "support/cycle_probe.h"

#include <algorithm>
#include <chrono>

namespace tensorgym {
namespace {

using Clock = std::chrono::steady_clock;

// The time of one run of fn(), in nanoseconds.
template <typename Fn>
double run_ns(Fn&& fn) {
  const auto t0 = Clock::now();
  fn();
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
}

#if defined(__x86_64__)

constexpr int kChainAdds = 64;

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

#endif

}  // namespace

double probe_cycles_per_unit(const std::function<void()>& probe, double units) {
#if defined(__x86_64__)
  // Noise (another tenant, a VM's slow spells) only ever adds time. A tenant on the
  // host core's other hardware thread slows a probe that shares the load and store
  // units with it and not the chain, for stretches of milliseconds: hence turns until
  // both have settled. (On a Zen 4 VM gathers read 1.2 to 1.9 cycles a lane with a
  // fixed 25 turns, 1.2 to 1.5 with this rule.)
  constexpr int kMaxTurns = 400, kSettledTurns = 60;
  constexpr int64_t kChainIterations = 2000;  // 128k cycles: tens of microseconds
  double chain = 1e300, unit = 1e300;
  for (int t = 0, unchanged = 0; t < kMaxTurns && unchanged < kSettledTurns; ++t, ++unchanged) {
    const double c = run_ns([] { add_chain(kChainIterations); }) / (kChainIterations * kChainAdds);
    const double u = run_ns(probe) / units;
    if (c < chain * 0.995 || u < unit * 0.995) unchanged = 0;  // still finding quieter turns
    chain = std::min(chain, c);
    unit = std::min(unit, u);
  }
  if (!(chain > 0) || unit >= 1e300) return 0;
  return unit / chain;
#else
  (void)probe;
  (void)units;
  return 0;
#endif
}

}  // namespace tensorgym
