#include "memplan/sweep_fit.h"

#include <algorithm>
#include <numeric>

#include "support/random.h"

namespace tensorgym {
namespace {

using Clock = std::chrono::steady_clock;

class SweepFit {
 public:
  SweepFit(const Instance& inst, int64_t capacity, uint64_t seed)
      : inst_(inst), capacity_(capacity), shuffle_(seed != 0), rng_(seed) {
    const size_t n = inst.buffers.size();
    offset_.assign(n, -1);
    std::vector<int> order;
    for (size_t i = 0; i < n; ++i)
      if (inst.buffers[i].size > 0) order.push_back(int(i));
    // Starters by time; within a moment, largest first (then longest).
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      const Buffer &x = inst.buffers[size_t(a)], &y = inst.buffers[size_t(b)];
      if (x.lower != y.lower) return x.lower < y.lower;
      if (x.size != y.size) return x.size > y.size;
      return x.upper != y.upper ? x.upper > y.upper : a < b;
    });
    for (size_t k = 0; k < order.size();) {
      size_t e = k;
      while (e < order.size() && inst.buffers[size_t(order[e])].lower == inst.buffers[size_t(order[k])].lower) ++e;
      moments_.push_back(std::vector<int>(order.begin() + long(k), order.begin() + long(e)));
      k = e;
    }
    // Per moment: whether it leaves no slack (its subsets are listed on first use).
    const LiveProfile profile = live_profile(inst);
    for (const std::vector<int>& starters : moments_) {
      const int64_t now = inst.buffers[size_t(starters[0])].lower;
      moment_time_.push_back(now);
      const size_t at = size_t(std::upper_bound(profile.times.begin(), profile.times.end(), now) - profile.times.begin());
      tight_.push_back(at > 0 && at <= profile.live.size() && profile.live[at - 1] == capacity &&
                       starters.size() <= kMaxStartersChecked);
    }
    masks_.resize(moments_.size());
  }

  bool run(int64_t node_limit, Clock::time_point deadline, int64_t* nodes) {
    nodes_left_ = node_limit;
    deadline_ = deadline;
    for (const Buffer& b : inst_.buffers)
      if (b.size > capacity_) return false;
    const bool found = moment(0);
    *nodes += node_limit - std::max<int64_t>(nodes_left_, 0);
    return found;
  }

  Offsets offsets() const {
    Offsets o = offset_;
    for (int64_t& v : o) v = std::max<int64_t>(v, 0);  // zero-size buffers at 0
    return o;
  }

 private:
  struct Live {
    int64_t offset, top;
    int buffer;
  };

  // Enters moment m: drops the buffers that ended, then places its starters.
  bool moment(size_t m) {
    if (m == moments_.size()) return true;
    const int64_t now = inst_.buffers[size_t(moments_[m][0])].lower;
    std::vector<Live> ended;
    std::vector<Live> kept;
    for (const Live& l : live_) (inst_.buffers[size_t(l.buffer)].upper <= now ? ended : kept).push_back(l);
    live_.swap(kept);
    std::vector<int> todo = moments_[m];
    int64_t need = 0;
    for (int b : todo) need += inst_.buffers[size_t(b)].size;
    const bool found = place(m, todo, need);
    // Restore the live set as it was (sorted by offset).
    live_.insert(live_.end(), ended.begin(), ended.end());
    std::sort(live_.begin(), live_.end(), [](const Live& a, const Live& b) { return a.offset < b.offset; });
    return found;
  }

  // The free gaps at the current moment, lowest first.
  std::vector<std::pair<int64_t, int64_t>> gaps() const {
    std::vector<std::pair<int64_t, int64_t>> g;
    int64_t at = 0;
    for (const Live& l : live_) {
      if (l.offset > at) g.push_back({at, l.offset});
      at = std::max(at, l.top);
    }
    if (capacity_ > at) g.push_back({at, capacity_});
    return g;
  }

  bool place(size_t m, std::vector<int>& todo, int64_t need) {
    if (todo.empty()) return moment(m + 1);
    if (--nodes_left_ < 0) return false;
    if ((nodes_left_ & 255) == 0 && Clock::now() > deadline_) {
      nodes_left_ = -1;
      return false;
    }
    const std::vector<std::pair<int64_t, int64_t>> free = gaps();
    int64_t free_bytes = 0;
    for (auto [lo, hi] : free) free_bytes += hi - lo;
    if (free_bytes < need) return false;
    const int64_t align = inst_.alignment;
    if (free_bytes == need) {
      // No slack: the lowest free byte is covered by a starter whose bottom is there.
      const auto [lo, hi] = free.front();
      if (lo % align != 0) return false;
      // Largest first, or in a random order on restarts.
      std::vector<size_t> order(todo.size());
      std::iota(order.begin(), order.end(), 0);
      if (shuffle_)
        for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[size_t(rng_.below(i))]);
      for (size_t kk = 0; kk < order.size(); ++kk) {
        const size_t k = order[kk];
        const Buffer& b = inst_.buffers[size_t(todo[k])];
        if (b.size > hi - lo) continue;
        bool same = false;  // an interchangeable starter was tried already
        for (size_t qq = 0; qq < kk && !same; ++qq) {
          const Buffer& c = inst_.buffers[size_t(todo[order[qq]])];
          same = c.size == b.size && c.upper == b.upper;
        }
        if (same) continue;
        if (try_at(m, todo, k, lo, need)) return true;
        if (nodes_left_ < 0) return false;
      }
      return false;
    }
    // Slack: the largest starter, at the bottom or the top of a gap, tightest first.
    const Buffer& b = inst_.buffers[size_t(todo[0])];
    std::vector<std::pair<int64_t, int64_t>> fits;
    for (auto [lo, hi] : free) {
      const int64_t bottom = align_up(lo, align);
      if (bottom + b.size <= hi) fits.push_back({lo, hi});
    }
    std::stable_sort(fits.begin(), fits.end(),
                     [](const auto& x, const auto& y) { return x.second - x.first < y.second - y.first; });
    for (auto [lo, hi] : fits) {
      const int64_t bottom = align_up(lo, align);
      const int64_t top = (hi - b.size) / align * align;
      if (try_at(m, todo, 0, bottom, need)) return true;
      if (nodes_left_ < 0) return false;
      if (top > bottom && try_at(m, todo, 0, top, need)) return true;
      if (nodes_left_ < 0) return false;
    }
    return false;
  }

  bool try_at(size_t m, std::vector<int>& todo, size_t k, int64_t off, int64_t need) {
    const int b = todo[k];
    const int64_t size = inst_.buffers[size_t(b)].size;
    offset_[size_t(b)] = off;
    const Live l{off, off + size, b};
    live_.insert(std::upper_bound(live_.begin(), live_.end(), l,
                                  [](const Live& x, const Live& y) { return x.offset < y.offset; }),
                 l);
    todo.erase(todo.begin() + long(k));
    const size_t at = size_t(std::find_if(live_.begin(), live_.end(), [&](const Live& x) { return x.buffer == b; }) -
                             live_.begin());
    const bool ok = refillable(at) && (at == 0 || refillable(at - 1)) && (at + 1 == live_.size() || refillable(at + 1));
    const bool found = ok && place(m, todo, need - size);
    todo.insert(todo.begin() + long(k), b);
    for (size_t i = 0; i < live_.size(); ++i)
      if (live_[i].buffer == b) {
        live_.erase(live_.begin() + long(i));
        break;
      }
    if (!found) offset_[size_t(b)] = -1;
    return found;
  }

  // The moment (index) at which buffer b ends, when it starts others and leaves no
  // slack (and has few enough starters to check); -1 otherwise.
  int tight_moment_at_end(int b) const {
    const int64_t u = inst_.buffers[size_t(b)].upper;
    const size_t m = size_t(std::lower_bound(moment_time_.begin(), moment_time_.end(), u) - moment_time_.begin());
    if (m == moment_time_.size() || moment_time_[m] != u || !tight_[m]) return -1;
    if (masks_[m].empty()) {
      const std::vector<int>& starters = moments_[m];
      for (uint32_t mask = 1; mask < (uint32_t(1) << starters.size()); ++mask) {
        int64_t sum = 0;
        for (size_t q = 0; q < starters.size(); ++q)
          if (mask >> q & 1) sum += inst_.buffers[size_t(starters[q])].size;
        masks_[m].push_back({sum, mask});
      }
      std::sort(masks_[m].begin(), masks_[m].end());
    }
    return int(m);
  }

  // The bytes of the run of adjacent buffers that end at u together with live_[i],
  // when it is bounded now by buffers that outlive u (or by 0 and the capacity): at
  // u exactly that space is free there. -1 when not known yet; the run's lowest index
  // in *first.
  int64_t block_at_end(size_t i, int64_t u, size_t* first) const {
    size_t lo = i, hi = i;
    while (live_[lo].offset != 0) {  // down to a bound that outlives u
      if (lo == 0 || live_[lo - 1].top != live_[lo].offset) return -1;  // a gap: not known yet
      const int64_t up = inst_.buffers[size_t(live_[lo - 1].buffer)].upper;
      if (up > u) break;
      if (up < u) return -1;
      --lo;
    }
    while (live_[hi].top != capacity_) {  // and up to one
      if (hi + 1 == live_.size() || live_[hi + 1].offset != live_[hi].top) return -1;
      const int64_t up = inst_.buffers[size_t(live_[hi + 1].buffer)].upper;
      if (up > u) break;
      if (up < u) return -1;
      ++hi;
    }
    *first = lo;
    return live_[hi].top - live_[lo].offset;
  }

  // At a moment u without slack, u's starters fill exactly the space the buffers
  // ending at u leave. Every run whose bounds are already known must be filled by its
  // own subset of them: checked for the moment live_[i] ends at.
  bool refillable(size_t i) const {
    const int m = tight_moment_at_end(live_[i].buffer);
    if (m < 0) return true;
    const int64_t u = moment_time_[size_t(m)];
    std::vector<int64_t> blocks;
    for (size_t j = 0; j < live_.size(); ++j) {
      if (inst_.buffers[size_t(live_[j].buffer)].upper != u) continue;
      size_t first = 0;
      const int64_t bytes = block_at_end(j, u, &first);
      if (bytes < 0 || first != j) continue;  // unknown, or counted from its lowest buffer
      blocks.push_back(bytes);
    }
    if (blocks.empty()) return true;
    std::sort(blocks.begin(), blocks.end(), std::greater<>());
    return assign_blocks(size_t(m), blocks, 0, 0);
  }

  // Disjoint subsets of moment m's starters, one per block, each summing to it.
  bool assign_blocks(size_t m, const std::vector<int64_t>& blocks, size_t k, uint32_t used) const {
    if (k == blocks.size()) return true;
    auto it = std::lower_bound(masks_[m].begin(), masks_[m].end(), std::make_pair(blocks[k], uint32_t(0)));
    for (; it != masks_[m].end() && it->first == blocks[k]; ++it)
      if ((it->second & used) == 0 && assign_blocks(m, blocks, k + 1, used | it->second)) return true;
    return false;
  }

  const Instance& inst_;
  const int64_t capacity_;
  std::vector<int64_t> moment_time_;
  static constexpr size_t kMaxStartersChecked = 10;
  std::vector<char> tight_;
  // Per moment without slack: every (sum, subset of its starters) pair, sorted.
  mutable std::vector<std::vector<std::pair<int64_t, uint32_t>>> masks_;
  const bool shuffle_;
  Rng rng_;
  std::vector<std::vector<int>> moments_;
  std::vector<Live> live_;  // placed and live now, by offset
  Offsets offset_;
  int64_t nodes_left_ = 0;
  Clock::time_point deadline_;
};

}  // namespace

bool sweep_fit(const Instance& instance, int64_t capacity, int64_t node_limit, Clock::time_point deadline,
               uint64_t seed, Offsets* offsets, int64_t* nodes) {
  int64_t local = 0;
  if (!nodes) nodes = &local;
  if (int64_t(instance.buffers.size()) > kMaxSweepBuffers) return false;
  SweepFit fit(instance, capacity, seed);
  if (!fit.run(node_limit, deadline, nodes)) return false;
  *offsets = fit.offsets();
  return true;
}

}  // namespace tensorgym
