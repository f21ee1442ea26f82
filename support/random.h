// A small seeded generator (splitmix64) with identical output on every platform, for
// everything that must replay from a seed: random schedules, space sampling, agents.
#pragma once

#include <cstdint>
#include <vector>

namespace tensorgym {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) for n > 0 (rejection sampling, no modulo bias).
  uint64_t below(uint64_t n) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do {
      x = next();
    } while (x >= limit);
    return x % n;
  }
  // Uniform in [lo, hi].
  int64_t range(int64_t lo, int64_t hi) { return lo + int64_t(below(uint64_t(hi - lo) + 1)); }
  // Uniform in [0, 1).
  double uniform() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }
  bool chance(double p) { return uniform() < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[size_t(below(v.size()))];
  }
  uint64_t state() const { return state_; }

 private:
  uint64_t state_;
};

}  // namespace tensorgym
