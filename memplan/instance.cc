#include "memplan/instance.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace tensorgym {

Status validate_instance(const Instance& instance) {
  if (int64_t(instance.buffers.size()) > kMaxBuffers)
    return resource_exhausted(
        fmt::format("the instance has {} buffers, over the limit of {}", instance.buffers.size(), kMaxBuffers));
  if (instance.alignment < 1 || (instance.alignment & (instance.alignment - 1)) != 0)
    return invalid_argument(fmt::format("the alignment must be a power of two, got {}", instance.alignment));
  for (const Buffer& b : instance.buffers) {
    if (b.size < 0 || b.size > kMaxBufferBytes)
      return invalid_argument(fmt::format("buffer '{}' has size {} (expected 0..{})", b.id, b.size, kMaxBufferBytes));
    if (b.lower < 0 || b.upper <= b.lower)
      return invalid_argument(
          fmt::format("buffer '{}' has lifetime [{}, {}): expected 0 <= lower < upper", b.id, b.lower, b.upper));
  }
  return Status();
}

LiveProfile live_profile(const Instance& instance) {
  std::map<int64_t, int64_t> delta;
  for (const Buffer& b : instance.buffers) {
    if (b.size == 0) continue;
    delta[b.lower] += b.size;
    delta[b.upper] -= b.size;
  }
  LiveProfile p;
  int64_t live = 0;
  for (const auto& [t, d] : delta) {
    live += d;
    p.times.push_back(t);
    p.live.push_back(live);
  }
  return p;
}

int64_t peak_live_bytes(const Instance& instance) {
  LiveProfile p = live_profile(instance);
  int64_t peak = 0;
  for (int64_t v : p.live) peak = std::max(peak, v);
  return peak;
}

std::vector<std::vector<int>> lifetime_conflicts(const Instance& instance) {
  const int n = int(instance.buffers.size());
  std::vector<int> by_lower;
  for (int i = 0; i < n; ++i)
    if (instance.buffers[size_t(i)].size > 0) by_lower.push_back(i);
  std::sort(by_lower.begin(), by_lower.end(), [&](int a, int b) {
    const Buffer &x = instance.buffers[size_t(a)], &y = instance.buffers[size_t(b)];
    return x.lower != y.lower ? x.lower < y.lower : a < b;
  });
  std::vector<std::vector<int>> out(static_cast<size_t>(n));
  // Active buffers ordered by upper: drop those that ended before the next start.
  std::multimap<int64_t, int> active;
  for (int i : by_lower) {
    const Buffer& b = instance.buffers[size_t(i)];
    while (!active.empty() && active.begin()->first <= b.lower) active.erase(active.begin());
    for (const auto& [upper, j] : active) {
      out[size_t(i)].push_back(j);
      out[size_t(j)].push_back(i);
    }
    active.emplace(b.upper, i);
  }
  for (auto& v : out) std::sort(v.begin(), v.end());
  return out;
}

int64_t arena_size(const Instance& instance, const Offsets& offsets) {
  int64_t top = 0;
  for (size_t i = 0; i < instance.buffers.size() && i < offsets.size(); ++i)
    if (offsets[i] >= 0) top = std::max(top, offsets[i] + instance.buffers[i].size);
  return top;
}

}  // namespace tensorgym
