#include "memplan/sweep_fit.h"

#include <algorithm>
#include <numeric>
#include <unordered_set>

#include "support/random.h"

namespace tensorgym {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t mix64(uint64_t x) { return Rng(x).next(); }

// Whether the live bytes just after `now` fill the capacity.
bool leaves_no_slack(const LiveProfile& profile, int64_t now, int64_t capacity) {
  const size_t at = size_t(std::upper_bound(profile.times.begin(), profile.times.end(), now) - profile.times.begin());
  return at > 0 && at <= profile.live.size() && profile.live[at - 1] == capacity;
}

// A set of search depths (one placement each): the decisions a failure depends on.
class Conflict {
 public:
  explicit Conflict(size_t depths = 0) : words_((depths + 63) / 64, 0) {}
  void clear() { std::fill(words_.begin(), words_.end(), 0); }
  void set(size_t d) { words_[d / 64] |= uint64_t(1) << (d % 64); }
  void reset(size_t d) { words_[d / 64] &= ~(uint64_t(1) << (d % 64)); }
  bool test(size_t d) const { return words_[d / 64] >> (d % 64) & 1; }
  void set_below(size_t d) {  // depths [0, d)
    for (size_t i = 0; i < d; ++i) set(i);
  }
  void set_range(size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) set(i);
  }
  Conflict& operator|=(const Conflict& o) {
    for (size_t i = 0; i < words_.size(); ++i) words_[i] |= o.words_[i];
    return *this;
  }

 private:
  std::vector<uint64_t> words_;
};

class SweepFit {
 public:
  SweepFit(const Instance& inst, int64_t capacity, uint64_t seed, std::unordered_set<uint64_t>& failed)
      : inst_(inst), capacity_(capacity), shuffle_(seed != 0), rng_(seed), failed_(failed) {
    const size_t n = inst.buffers.size();
    offset_.assign(n, -1);
    depths_ = n;
    reason_.assign(n, Conflict(n));
    scratch_.assign(n + 1, Conflict(n));
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
      tight_.push_back(leaves_no_slack(profile, now, capacity) && starters.size() <= kMaxStartersChecked);
    }
    masks_.resize(moments_.size());
  }

  bool run(int64_t node_limit, Clock::time_point deadline, int64_t* nodes) {
    nodes_left_ = node_limit;
    deadline_ = deadline;
    for (const Buffer& b : inst_.buffers)
      if (b.size > capacity_) return false;
    Conflict why(depths_);
    const bool found = moment(0, &why);
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

  // Enters moment m: drops the buffers that ended, then places its starters. On
  // failure *why holds the depths of the placements the failure depends on.
  bool moment(size_t m, Conflict* why) {
    if (m == moments_.size()) return true;
    const int64_t now = inst_.buffers[size_t(moments_[m][0])].lower;
    std::vector<Live> ended;
    std::vector<Live> kept;
    for (const Live& l : live_) (inst_.buffers[size_t(l.buffer)].upper <= now ? ended : kept).push_back(l);
    live_.swap(kept);
    // The rest of the search depends only on the moment and where the live buffers
    // are: an arrangement that failed once fails again, for the reasons of the live
    // buffers' offsets. (A hash collision could hide a plan; this search proves
    // nothing either way.)
    uint64_t key = mix64(m + 1);
    for (const Live& l : live_) key += mix64(uint64_t(l.buffer) << 40 ^ uint64_t(l.offset));
    bool found = false;
    if (failed_.count(key)) {
      why->clear();
      for (const Live& l : live_) *why |= reason_[size_t(l.buffer)];
    } else {
      std::vector<int> todo = moments_[m];
      int64_t need = 0;
      for (int b : todo) need += inst_.buffers[size_t(b)].size;
      const size_t saved_start = moment_start_;
      moment_start_ = depth_;
      found = place(m, todo, need, why);
      moment_start_ = saved_start;
      if (!found && nodes_left_ >= 0 && failed_.size() < kMaxFailed) failed_.insert(key);
    }
    // Restore the live set as it was (sorted by offset).
    live_.insert(live_.end(), ended.begin(), ended.end());
    std::sort(live_.begin(), live_.end(), [](const Live& a, const Live& b) { return a.offset < b.offset; });
    return found;
  }

  // The free gaps at the current moment, lowest first, with the indices in live_ of
  // the buffers below and above each (-1 for the arena's ends).
  struct Gap {
    int64_t lo, hi;
    int below, above;
  };
  std::vector<Gap> gaps() const {
    std::vector<Gap> g;
    int64_t at = 0;
    int below = -1;
    for (size_t i = 0; i < live_.size(); ++i) {
      const Live& l = live_[i];
      if (l.offset > at) g.push_back({at, l.offset, below, int(i)});
      if (l.top >= at) below = int(i);
      at = std::max(at, l.top);
    }
    if (capacity_ > at) g.push_back({at, capacity_, below, -1});
    return g;
  }

  // Conflict-directed backjumping (Prosser): each placement is a depth; a failure
  // names the depths it depends on, and a depth whose choice the failure below does
  // not involve is passed over with all its alternatives. Where a moment leaves no
  // slack a buffer's offset follows from its own placement and the buffer it sits on
  // (its reason, reason_); a wrong arrangement found many moments later then goes
  // back to the placements it involves, not through every moment between.
  bool place(size_t m, std::vector<int>& todo, int64_t need, Conflict* why) {
    if (todo.empty()) return moment(m + 1, why);
    if (--nodes_left_ < 0) return false;
    if ((nodes_left_ & 255) == 0 && Clock::now() > deadline_) {
      nodes_left_ = -1;
      return false;
    }
    const size_t d = depth_;
    const std::vector<Gap> free = gaps();
    int64_t free_bytes = 0;
    for (const Gap& g : free) free_bytes += g.hi - g.lo;
    why->clear();
    if (free_bytes < need) {
      why->set_below(d);
      return false;
    }
    const int64_t align = inst_.alignment;
    if (free_bytes == need) {
      // No slack: the lowest free byte is covered by a starter whose bottom is there.
      // Which gap is lowest and which starters are left follows from this moment's
      // earlier placements; the gap's ends, from the buffers around it.
      const Gap gap = free.front();
      why->set_range(moment_start_, d);
      if (gap.below >= 0) *why |= reason_[size_t(live_[size_t(gap.below)].buffer)];
      if (gap.above >= 0) *why |= reason_[size_t(live_[size_t(gap.above)].buffer)];
      if (gap.lo % align != 0) return false;
      // Largest first, or in a random order on restarts.
      std::vector<size_t> order(todo.size());
      std::iota(order.begin(), order.end(), 0);
      if (shuffle_)
        for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[size_t(rng_.below(i))]);
      Conflict& below = scratch_[d];
      for (size_t kk = 0; kk < order.size(); ++kk) {
        const size_t k = order[kk];
        const Buffer& b = inst_.buffers[size_t(todo[k])];
        if (b.size > gap.hi - gap.lo) continue;
        bool same = false;  // an interchangeable starter was tried already
        for (size_t qq = 0; qq < kk && !same; ++qq) {
          const Buffer& c = inst_.buffers[size_t(todo[order[qq]])];
          same = c.size == b.size && c.upper == b.upper;
        }
        if (same) continue;
        if (try_at(m, todo, k, gap.lo, need, /*tight=*/true, &below)) return true;
        if (nodes_left_ < 0) return false;
        if (!below.test(d)) {  // no choice here changes what failed
          *why = below;
          return false;
        }
        below.reset(d);
        *why |= below;
      }
      return false;
    }
    // Slack: the largest starter, at the bottom or the top of a gap, tightest first.
    // Its failures are blamed on every earlier placement.
    why->set_below(d);
    const Buffer& b = inst_.buffers[size_t(todo[0])];
    std::vector<Gap> fits;
    for (const Gap& g : free)
      if (align_up(g.lo, align) + b.size <= g.hi) fits.push_back(g);
    std::stable_sort(fits.begin(), fits.end(), [](const Gap& x, const Gap& y) { return x.hi - x.lo < y.hi - y.lo; });
    Conflict& below = scratch_[d];
    for (const Gap& g : fits) {
      const int64_t bottom = align_up(g.lo, align);
      const int64_t top = (g.hi - b.size) / align * align;
      for (int64_t off : {bottom, top}) {
        if (off != bottom && off <= bottom) continue;  // the top, where it is not the bottom
        if (try_at(m, todo, 0, off, need, /*tight=*/false, &below)) return true;
        if (nodes_left_ < 0) return false;
        if (!below.test(d)) {
          *why = below;
          return false;
        }
      }
    }
    return false;
  }

  bool try_at(size_t m, std::vector<int>& todo, size_t k, int64_t off, int64_t need, bool tight, Conflict* why) {
    const int b = todo[k];
    const int64_t size = inst_.buffers[size_t(b)].size;
    offset_[size_t(b)] = off;
    const Live l{off, off + size, b};
    const size_t at = size_t(std::upper_bound(live_.begin(), live_.end(), l,
                                              [](const Live& x, const Live& y) { return x.offset < y.offset; }) -
                             live_.begin());
    live_.insert(live_.begin() + long(at), l);
    // Its offset follows from this placement and, without slack, the buffer it sits on.
    const size_t d = depth_++;
    Conflict& reason = reason_[size_t(b)];
    reason.clear();
    if (!tight) {
      reason.set_below(d);
    } else if (at > 0 && live_[at - 1].top == off) {
      reason = reason_[size_t(live_[at - 1].buffer)];
    }
    reason.set(d);
    todo.erase(todo.begin() + long(k));
    // The moments at which it and its neighbours end, each checked once.
    bool ok = true;
    int64_t checked[3];
    int n_checked = 0;
    for (size_t i : {at, at - 1, at + 1}) {
      if (!ok || i >= live_.size()) continue;  // at - 1 wraps below 0
      const int64_t u = inst_.buffers[size_t(live_[i].buffer)].upper;
      if (std::find(checked, checked + n_checked, u) != checked + n_checked) continue;
      checked[n_checked++] = u;
      ok = refillable(i, why);
    }
    const bool found = ok && place(m, todo, need - size, why);
    todo.insert(todo.begin() + long(k), b);
    live_.erase(live_.begin() + long(at));
    --depth_;
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
  // u exactly that space is free there. -1 when not known yet; the run in live_ with
  // the bounds that are buffers, [*first, *last].
  int64_t block_at_end(size_t i, int64_t u, size_t* first, size_t* last) const {
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
    *first = live_[lo].offset == 0 ? lo : lo - 1;
    *last = live_[hi].top == capacity_ ? hi : hi + 1;
    return live_[hi].top - live_[lo].offset;
  }

  // At a moment u without slack, u's starters fill exactly the space the buffers
  // ending at u leave. Every run whose bounds are already known must be filled by its
  // own subset of them: checked for the moment live_[i] ends at. On failure *why
  // gains the reasons of the runs' buffers and bounds.
  bool refillable(size_t i, Conflict* why) const {
    const int m = tight_moment_at_end(live_[i].buffer);
    if (m < 0) return true;
    const int64_t u = moment_time_[size_t(m)];
    std::vector<int64_t> blocks;
    std::vector<std::pair<size_t, size_t>> spans;
    for (size_t j = 0; j < live_.size(); ++j) {
      if (inst_.buffers[size_t(live_[j].buffer)].upper != u) continue;
      size_t first = 0, last = 0;
      const int64_t bytes = block_at_end(j, u, &first, &last);
      if (bytes < 0) continue;  // not known yet
      // Counted once, from its lowest buffer.
      if (live_[j].offset != 0 && inst_.buffers[size_t(live_[j - 1].buffer)].upper == u) continue;
      blocks.push_back(bytes);
      spans.push_back({first, last});
    }
    if (blocks.empty()) return true;
    std::sort(blocks.begin(), blocks.end(), std::greater<>());
    if (assign_blocks(size_t(m), blocks, 0, 0)) return true;
    why->clear();
    for (auto [first, last] : spans)
      for (size_t j = first; j <= last; ++j) *why |= reason_[size_t(live_[j].buffer)];
    return false;
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
  static constexpr size_t kMaxFailed = 1 << 20;
  std::vector<char> tight_;
  // Per moment without slack: every (sum, subset of its starters) pair, sorted.
  mutable std::vector<std::vector<std::pair<int64_t, uint32_t>>> masks_;
  const bool shuffle_;
  Rng rng_;
  std::vector<std::vector<int>> moments_;
  std::vector<Live> live_;  // placed and live now, by offset
  Offsets offset_;
  // Search depth (placements made) and the depth at which the current moment began;
  // per placed buffer, the depths its offset follows from.
  size_t depths_ = 0, depth_ = 0, moment_start_ = 0;
  std::vector<Conflict> reason_;
  std::vector<Conflict> scratch_;         // per depth: the failure of the placement tried there
  std::unordered_set<uint64_t>& failed_;  // arrangements at a moment's start that failed
  int64_t nodes_left_ = 0;
  Clock::time_point deadline_;
};

}  // namespace

double tight_moment_fraction(const Instance& instance, int64_t capacity) {
  std::vector<int64_t> starts;
  for (const Buffer& b : instance.buffers)
    if (b.size > 0) starts.push_back(b.lower);
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  if (starts.empty()) return 0;
  const LiveProfile profile = live_profile(instance);
  size_t tight = 0;
  for (int64_t now : starts) tight += leaves_no_slack(profile, now, capacity);
  return double(tight) / double(starts.size());
}

struct SweepMemo::Failed {
  int64_t capacity = -1;
  std::unordered_set<uint64_t> keys;
};

SweepMemo::SweepMemo() : failed_(std::make_unique<Failed>()) {}
SweepMemo::~SweepMemo() = default;

bool sweep_fit(const Instance& instance, int64_t capacity, int64_t node_limit, Clock::time_point deadline,
               uint64_t seed, Offsets* offsets, int64_t* nodes, SweepMemo* memo) {
  int64_t local = 0;
  if (!nodes) nodes = &local;
  if (int64_t(instance.buffers.size()) > kMaxSweepBuffers) return false;
  SweepMemo own;
  if (!memo) memo = &own;
  if (memo->failed_->capacity != capacity) {
    memo->failed_->capacity = capacity;
    memo->failed_->keys.clear();
  }
  SweepFit fit(instance, capacity, seed, memo->failed_->keys);
  if (!fit.run(node_limit, deadline, nodes)) return false;
  *offsets = fit.offsets();
  return true;
}

}  // namespace tensorgym
