#include "memplan/offset_search.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "memplan/sweep_fit.h"

namespace tensorgym {
namespace {

using Clock = std::chrono::steady_clock;

// The buffers of an instance cut into sections: the intervals between consecutive
// lifetime endpoints. Buffers with size 0 are left out (they go at offset 0).
//
// Sizes are rounded up to the alignment: with every offset aligned, a buffer keeps
// the next one in its stack at least that far up, so the search works on the rounded
// sizes against the capacity rounded up (a relaxation, exact but for the end of the
// topmost buffer), and checks the true end of each buffer it places.
struct Sweep {
  std::vector<int> buffers;  // instance indices of the buffers searched
  std::vector<int64_t> size;       // rounded up to the alignment
  std::vector<int64_t> true_size;  // as given
  std::vector<int> first, last;            // sections [first, last) per buffer
  std::vector<std::vector<int>> overlaps;  // by local index
  std::vector<int64_t> section_total;      // sum of sizes per section
  std::vector<std::vector<int>> members;   // buffers spanning each section
  int sections = 0;
};

Sweep make_sweep(const Instance& inst) {
  Sweep s;
  std::vector<int64_t> points;
  for (size_t i = 0; i < inst.buffers.size(); ++i) {
    const Buffer& b = inst.buffers[i];
    if (b.size == 0) continue;
    s.buffers.push_back(int(i));
    s.size.push_back(align_up(b.size, inst.alignment));
    s.true_size.push_back(b.size);
    points.push_back(b.lower);
    points.push_back(b.upper);
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  s.sections = std::max<int>(0, int(points.size()) - 1);
  s.section_total.assign(size_t(s.sections), 0);
  std::vector<int> local(inst.buffers.size(), -1);
  for (size_t k = 0; k < s.buffers.size(); ++k) {
    const Buffer& b = inst.buffers[size_t(s.buffers[k])];
    local[size_t(s.buffers[k])] = int(k);
    const int lo = int(std::lower_bound(points.begin(), points.end(), b.lower) - points.begin());
    const int hi = int(std::lower_bound(points.begin(), points.end(), b.upper) - points.begin());
    s.first.push_back(lo);
    s.last.push_back(hi);
    for (int j = lo; j < hi; ++j) s.section_total[size_t(j)] += s.size[k];
  }
  s.members.resize(size_t(s.sections));
  for (size_t k = 0; k < s.buffers.size(); ++k)
    for (int j = s.first[k]; j < s.last[k]; ++j) s.members[size_t(j)].push_back(int(k));
  std::vector<std::vector<int>> conflicts = lifetime_conflicts(inst);
  s.overlaps.resize(s.buffers.size());
  for (size_t k = 0; k < s.buffers.size(); ++k)
    for (int j : conflicts[size_t(s.buffers[k])])
      if (local[size_t(j)] >= 0) s.overlaps[k].push_back(local[size_t(j)]);
  return s;
}

// Orders of the buffers by a string of keys as in MiniMalloc's preorderings: T
// (largest total of the sections the buffer spans, of the buffers still to place),
// W (sections spanned), A (area), Z (size), L (length); larger first, ties by index.
struct BufferKeys {
  std::vector<int64_t> width, area, length;
};

BufferKeys buffer_keys(const Sweep& s, const Instance& inst) {
  BufferKeys k;
  for (size_t b = 0; b < s.buffers.size(); ++b) {
    const Buffer& buf = inst.buffers[size_t(s.buffers[b])];
    k.width.push_back(s.last[b] - s.first[b]);
    k.length.push_back(buf.upper - buf.lower);
    k.area.push_back(buf.size * (buf.upper - buf.lower));
  }
  return k;
}

// Sorts `buffers` by `keys`, with T from the section totals `totals`.
void sort_buffers(std::vector<int>& buffers, const Sweep& s, const BufferKeys& k, const std::string& keys,
                  const std::vector<int64_t>& totals) {
  std::vector<int64_t> total(s.buffers.size(), 0);
  for (int b : buffers)
    for (int j = s.first[size_t(b)]; j < s.last[size_t(b)]; ++j)
      total[size_t(b)] = std::max(total[size_t(b)], totals[size_t(j)]);
  std::stable_sort(buffers.begin(), buffers.end(), [&](int a, int b) {
    for (char c : keys) {
      const std::vector<int64_t>* v = nullptr;
      switch (c) {
        case 'T': v = &total; break;
        case 'W': v = &k.width; break;
        case 'A': v = &k.area; break;
        case 'Z': v = &s.size; break;
        case 'L': v = &k.length; break;
      }
      if (v && (*v)[size_t(a)] != (*v)[size_t(b)]) return (*v)[size_t(a)] > (*v)[size_t(b)];
    }
    return a < b;
  });
}

enum class Outcome { kFound, kNotFound, kLimit };

// The decision procedure for one capacity and one preordering. The search works on
// a partition: buffers and a range of sections; when no buffer still to place
// crosses a section boundary, the two sides are independent and are solved one
// after the other (MiniMalloc's dynamic decomposition). State is always restored on
// the way back; plans found are copied out at the leaves.
class Fit {
 public:
  Fit(const Sweep& s, const BufferKeys& keys, const std::string& preordering, int64_t capacity, int64_t alignment)
      : s_(s),
        keys_(keys),
        preordering_(preordering),
        capacity_(align_up(capacity, alignment)),
        true_capacity_(capacity),
        alignment_(alignment) {
    const size_t n = s.buffers.size();
    offset_.assign(n, -1);
    solution_.assign(n, -1);
    min_offset_.assign(n, 0);
    floor_.assign(size_t(s.sections), 0);
    seen_.assign(size_t(s.sections), 0);
    head_stamp_.assign(size_t(s.sections), 0);
    forced_stamp_.assign(size_t(s.sections), 0);
    run_stamp_.assign(size_t(s.sections), 0);
    head_.assign(size_t(s.sections), -1);
    next_.assign(n, -1);
    reach_.assign(size_t(s.sections) + 1, 0);
    total_ = s.section_total;
    cuts_.assign(size_t(std::max(0, s.sections - 1)), 0);
    for (size_t k = 0; k < n; ++k)
      for (int j = s.first[k]; j + 1 < s.last[k]; ++j) ++cuts_[size_t(j)];
  }

  Outcome run(int64_t node_limit, Clock::time_point deadline, int64_t* nodes) {
    nodes_left_ = node_limit;
    deadline_ = deadline;
    for (int64_t t : total_)
      if (t > capacity_) return Outcome::kNotFound;
    for (int64_t z : s_.true_size)
      if (z > true_capacity_) return Outcome::kNotFound;
    Part all;
    for (size_t b = 0; b < s_.buffers.size(); ++b) all.order.push_back(int(b));
    sort_buffers(all.order, s_, keys_, preordering_, total_);
    all.lo = 0;
    all.hi = s_.sections;
    std::vector<int> cut_points;
    for (size_t j = 0; j < cuts_.size(); ++j)
      if (cuts_[j] == 0) cut_points.push_back(int(j) + 1);
    Outcome o = solve_parts(all, cut_points);
    *nodes += node_limit - std::max<int64_t>(nodes_left_, 0);
    return o;
  }

  const std::vector<int64_t>& offsets() const { return solution_; }

 private:
  // A part's buffers in its preorder: MiniMalloc orders each part of a dynamic
  // decomposition anew, by the totals of the buffers still to place. A rank is a
  // position in it.
  struct Part {
    std::vector<int> order;
    int lo = 0, hi = 0;  // sections [lo, hi)
  };
  struct Candidate {
    int64_t offset;
    int rank;
  };

  // Splits `part` at the section boundaries `cut_points` (sorted) and solves each
  // piece that has buffers still to place.
  Outcome solve_parts(const Part& part, const std::vector<int>& cut_points) {
    std::vector<int> bounds = {part.lo};
    for (int c : cut_points)
      if (c > part.lo && c < part.hi) bounds.push_back(c);
    bounds.push_back(part.hi);
    if (bounds.size() == 2) return search(part, 0, -1);
    for (size_t k = 0; k + 1 < bounds.size(); ++k) {
      Part sub;
      sub.lo = bounds[k];
      sub.hi = bounds[k + 1];
      for (int b : part.order)
        if (offset_[size_t(b)] < 0 && s_.first[size_t(b)] < sub.hi && s_.last[size_t(b)] > sub.lo)
          sub.order.push_back(b);
      if (sub.order.empty()) continue;
      sort_buffers(sub.order, s_, keys_, preordering_, total_);
      Outcome o = search(sub, 0, -1);
      if (o != Outcome::kFound) return o;
    }
    return Outcome::kFound;
  }

  Outcome search(const Part& part, int64_t last_offset, int last_rank) {
    if (--nodes_left_ < 0) return Outcome::kLimit;
    if ((nodes_left_ & 1023) == 0 && Clock::now() > deadline_) {
      nodes_left_ = -1;
      return Outcome::kLimit;
    }
    std::vector<Candidate> cands;
    int64_t min_height = INT64_MAX;
    for (size_t r = 0; r < part.order.size(); ++r) {
      const int b = part.order[r];
      if (offset_[size_t(b)] >= 0) continue;
      cands.push_back({min_offset_[size_t(b)], int(r)});
      min_height = std::min(min_height, min_offset_[size_t(b)] + s_.size[size_t(b)]);
    }
    if (cands.empty()) {
      for (int b : part.order) solution_[size_t(b)] = offset_[size_t(b)];
      return Outcome::kFound;
    }
    std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
      return a.offset != b.offset ? a.offset < b.offset : a.rank < b.rank;
    });
    for (const Candidate& c : cands) {
      // Canonical order: offsets never decrease (ties in preorder).
      if (c.offset < last_offset || (c.offset == last_offset && c.rank < last_rank)) continue;
      // Dominance: another buffer would fit entirely below this one.
      if (c.offset >= min_height) break;
      const int b = part.order[size_t(c.rank)];
      if (c.offset + s_.true_size[size_t(b)] > true_capacity_) continue;
      Outcome o = place_and_recurse(part, b, c.offset, c.rank);
      if (o != Outcome::kNotFound) return o;
      // Nothing still to place overlaps b in time: b constrains no one, and every
      // alternative here would leave b below the offsets still to come.
      if (hatless(b)) break;
    }
    return Outcome::kNotFound;
  }

  Outcome place_and_recurse(const Part& part, int b, int64_t off, int rank) {
    const int64_t size = s_.size[size_t(b)];
    const int64_t top = off + size;
    const int64_t next_min = align_up(top, alignment_);
    offset_[size_t(b)] = off;
    const size_t mark = undo_min_.size();
    for (int o : s_.overlaps[size_t(b)]) {
      if (offset_[size_t(o)] >= 0 || min_offset_[size_t(o)] >= next_min) continue;
      undo_min_.push_back({o, min_offset_[size_t(o)]});
      min_offset_[size_t(o)] = next_min;
    }
    const size_t fmark = undo_floor_.size();
    for (int j = s_.first[size_t(b)]; j < s_.last[size_t(b)]; ++j) {
      undo_floor_.push_back({j, floor_[size_t(j)]});
      floor_[size_t(j)] = top;
      total_[size_t(j)] -= size;
    }
    // A section's floor is at least the lowest offset any buffer still to place
    // there can take (the sections of buffers whose lowest offset just rose).
    ++stamp_;
    for (size_t u = mark; u < undo_min_.size(); ++u) {
      const int o = undo_min_[u].first;
      for (int j = s_.first[size_t(o)]; j < s_.last[size_t(o)]; ++j) {
        if (seen_[size_t(j)] == stamp_) continue;
        seen_[size_t(j)] = stamp_;
        const int64_t floor = floor_[size_t(j)];
        int64_t lowest = INT64_MAX;
        for (int m : s_.members[size_t(j)]) {
          if (offset_[size_t(m)] >= 0) continue;
          lowest = std::min(lowest, min_offset_[size_t(m)]);
          if (lowest <= floor) break;  // no change
        }
        if (lowest != INT64_MAX && floor < lowest) {
          undo_floor_.push_back({j, floor_[size_t(j)]});
          floor_[size_t(j)] = lowest;
        }
      }
    }
    std::vector<int> new_cuts;
    for (int j = s_.first[size_t(b)]; j + 1 < s_.last[size_t(b)]; ++j)
      if (--cuts_[size_t(j)] == 0 && j + 1 > part.lo && j + 1 < part.hi) new_cuts.push_back(j + 1);
    Outcome o = Outcome::kNotFound;
    if (consistent(part, off) && levels_coverable(part, off, rank)) {
      if (new_cuts.empty()) {
        o = search(part, off, rank);
      } else {
        o = solve_parts(part, new_cuts);
        if (o == Outcome::kFound)  // the buffers placed before the split
          for (int x : part.order)
            if (offset_[size_t(x)] >= 0) solution_[size_t(x)] = offset_[size_t(x)];
      }
    }
    for (int j = s_.first[size_t(b)]; j + 1 < s_.last[size_t(b)]; ++j) ++cuts_[size_t(j)];
    for (int j = s_.first[size_t(b)]; j < s_.last[size_t(b)]; ++j) total_[size_t(j)] += size;
    while (undo_floor_.size() > fmark) {
      floor_[size_t(undo_floor_.back().first)] = undo_floor_.back().second;
      undo_floor_.pop_back();
    }
    while (undo_min_.size() > mark) {
      min_offset_[size_t(undo_min_.back().first)] = undo_min_.back().second;
      undo_min_.pop_back();
    }
    offset_[size_t(b)] = -1;
    return o;
  }

  bool hatless(int b) const {
    for (int o : s_.overlaps[size_t(b)])
      if (offset_[size_t(o)] < 0) return false;
    return true;
  }

  // Every buffer still to place goes above both the last offset and the floor of
  // each section it spans, and the ones in one section are stacked.
  bool consistent(const Part& part, int64_t off) const {
    for (int j = part.lo; j < part.hi; ++j)
      if (total_[size_t(j)] > 0 && std::max(off, floor_[size_t(j)]) + total_[size_t(j)] > capacity_) return false;
    return true;
  }

  // Every section j sits at a level e_j = max(off, floor_j); the lowest buffer still
  // to place there lands at e_j or above, and a rise must fit in j's slack
  // (capacity - e_j - total_j). Where it cannot, some buffer still to place fills j at
  // exactly e_j. At the lowest level f a rise is at least the smallest buffer still to
  // place (the one it sits on is placed at f or above) or a member's minimum offset
  // above f; at higher levels only a slack of 0 forces it. The buffers that will sit
  // at one level L are pairwise disjoint in time, have minimum offsets <= L and lie in
  // runs of sections whose floors are <= L: per level, a sweep over each run checks
  // that they can fill the run's forced sections.
  bool levels_coverable(const Part& part, int64_t off, int rank) {
    int64_t f = INT64_MAX;
    for (int j = part.lo; j < part.hi; ++j)
      if (total_[size_t(j)] > 0) f = std::min(f, std::max(off, floor_[size_t(j)]));
    if (f == INT64_MAX) return true;
    cands_.clear();
    int64_t min_size = INT64_MAX;
    for (size_t r = 0; r < part.order.size(); ++r) {
      const int b = part.order[r];
      if (offset_[size_t(b)] >= 0) continue;
      min_size = std::min(min_size, s_.size[size_t(b)]);
      cands_.push_back({min_offset_[size_t(b)], int(r)});
    }
    forced_.clear();
    for (int j = part.lo; j < part.hi; ++j) {
      if (total_[size_t(j)] == 0) continue;
      const int64_t e = std::max(off, floor_[size_t(j)]);
      const int64_t slack = capacity_ - e - total_[size_t(j)];
      if (slack == 0 || (e == f && rise_exceeds(j, slack, min_size, f))) forced_.push_back({e, j});
    }
    if (forced_.empty()) return true;
    std::sort(cands_.begin(), cands_.end(), [](const Candidate& x, const Candidate& y) { return x.offset < y.offset; });
    std::sort(forced_.begin(), forced_.end());
    ++stamp_;
    const int64_t lists = stamp_;  // candidate lists grow with the level
    deferred_.clear();
    auto add = [&](int r) {
      const int b = part.order[size_t(r)];
      const size_t first = size_t(s_.first[size_t(b)]);
      if (head_stamp_[first] != lists) {
        head_stamp_[first] = lists;
        head_[first] = -1;
      }
      next_[size_t(b)] = head_[first];
      head_[first] = b;
    };
    size_t ci = 0;
    for (size_t k = 0; k < forced_.size();) {
      const int64_t level = forced_[k].first;
      size_t group_end = k;
      while (group_end < forced_.size() && forced_[group_end].first == level) ++group_end;
      if (level > off) {
        for (int r : deferred_) add(r);
        deferred_.clear();
      }
      for (; ci < cands_.size() && cands_[ci].offset <= level; ++ci) {
        // At the current offset only higher ranks may follow (ties in preorder).
        if (level == off && cands_[ci].rank < rank) {
          deferred_.push_back(cands_[ci].rank);
        } else {
          add(cands_[ci].rank);
        }
      }
      const int64_t mark = ++stamp_;
      for (size_t g = k; g < group_end; ++g) forced_stamp_[size_t(forced_[g].second)] = mark;
      auto in_run = [&](int j) { return total_[size_t(j)] > 0 && std::max(off, floor_[size_t(j)]) <= level; };
      for (size_t g = k; g < group_end; ++g) {
        const int j = forced_[g].second;
        if (run_stamp_[size_t(j)] == mark) continue;  // its run was swept
        int lo = j, hi = j + 1;
        while (lo > part.lo && in_run(lo - 1)) --lo;
        while (hi < part.hi && in_run(hi)) ++hi;
        for (int i = lo; i <= hi; ++i) reach_[size_t(i)] = 0;
        reach_[size_t(lo)] = 1;
        for (int i = lo; i < hi; ++i) {
          run_stamp_[size_t(i)] = mark;
          if (!reach_[size_t(i)]) continue;
          if (forced_stamp_[size_t(i)] != mark) reach_[size_t(i + 1)] = 1;
          if (head_stamp_[size_t(i)] != lists) continue;
          for (int b = head_[size_t(i)]; b >= 0; b = next_[size_t(b)])
            if (s_.last[size_t(b)] <= hi) reach_[size_t(s_.last[size_t(b)])] = 1;
        }
        if (!reach_[size_t(hi)]) return false;
      }
      k = group_end;
    }
    return true;
  }

  // At the lowest level f: whether the least rise of section j's lowest buffer (the
  // smallest buffer still to place, or a member's minimum offset above f) exceeds its
  // slack.
  bool rise_exceeds(int j, int64_t slack, int64_t min_size, int64_t f) const {
    if (slack >= min_size) return false;
    for (int m : s_.members[size_t(j)])
      if (offset_[size_t(m)] < 0 && min_offset_[size_t(m)] > f && min_offset_[size_t(m)] - f <= slack) return false;
    return true;
  }

  const Sweep& s_;
  const BufferKeys& keys_;
  const std::string preordering_;
  const int64_t capacity_;       // rounded up to the alignment, as the sizes
  const int64_t true_capacity_;  // as asked
  const int64_t alignment_;
  std::vector<int64_t> offset_, solution_, min_offset_, floor_, total_;
  std::vector<int> cuts_;
  std::vector<std::pair<int, int64_t>> undo_min_;
  std::vector<std::pair<int, int64_t>> undo_floor_;
  std::vector<int64_t> seen_;
  int64_t stamp_ = 0;
  // Scratch of levels_coverable: candidates by first section, forced sections by
  // level, reachability.
  std::vector<int64_t> head_stamp_, forced_stamp_, run_stamp_;
  std::vector<int> head_, next_, deferred_;
  std::vector<Candidate> cands_;
  std::vector<std::pair<int64_t, int>> forced_;
  std::vector<char> reach_;
  int64_t nodes_left_ = 0;
  Clock::time_point deadline_;
};

const std::vector<std::string>& preorderings() {
  static const std::vector<std::string> p = {"LAT", "TAL", "TLA"};
  return p;
}

}  // namespace

FitResult fit_offsets(const Instance& instance, int64_t capacity, int64_t node_limit, double seconds, Offsets* offsets,
                      int64_t* nodes) {
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  int64_t local_nodes = 0;
  if (!nodes) nodes = &local_nodes;
  const Sweep s = make_sweep(instance);
  const BufferKeys keys = buffer_keys(s, instance);
  // Round robin over the preorderings with a growing node budget: one of them often
  // finds a plan quickly where another wanders. Each round also gives the time sweep
  // (sweep_fit.h) a restart of its own, in placements (each costs much less than a
  // search node): it finds plans on tight instances, and proves nothing. Its share
  // grows with the moments that leave no slack, where it is strong (16 to 256
  // placements per node of the budget); what it refutes carries from round to round.
  int64_t budget = std::max<int64_t>(1000, int64_t(s.buffers.size()) * 4);
  int64_t spent = 0;
  const int64_t sweep_share = 16 + int64_t(240 * tight_moment_fraction(instance, capacity));
  SweepMemo memo;
  for (uint64_t round = 0;; ++round) {
    for (const std::string& preordering : preorderings()) {
      Fit fit(s, keys, preordering, capacity, instance.alignment);
      int64_t used = 0;
      const int64_t this_budget = std::min(budget, std::max<int64_t>(1, node_limit - spent));
      Outcome o = fit.run(this_budget, deadline, &used);
      spent += used;
      *nodes += used;
      if (o == Outcome::kFound) {
        offsets->assign(instance.buffers.size(), 0);
        for (size_t k = 0; k < s.buffers.size(); ++k) (*offsets)[size_t(s.buffers[k])] = fit.offsets()[k];
        return FitResult::kFound;
      }
      if (o == Outcome::kNotFound) return FitResult::kInfeasible;  // exhausted: a proof
      if (spent >= node_limit || Clock::now() > deadline) return FitResult::kGaveUp;
    }
    int64_t used = 0;
    const bool found = sweep_fit(instance, capacity, budget * sweep_share, deadline, round, offsets, &used, &memo);
    *nodes += used;
    if (found) return FitResult::kFound;
    if (Clock::now() > deadline) return FitResult::kGaveUp;
    budget *= 2;
  }
}

OffsetSearchResult search_offsets(const Instance& instance, const Offsets& initial,
                                  const OffsetSearchOptions& options) {
  OffsetSearchResult r;
  r.offsets = initial;
  r.arena = arena_size(instance, initial);
  int64_t largest = 0;
  for (const Buffer& b : instance.buffers) largest = std::max(largest, b.size);
  r.lower_bound = std::max(peak_live_bytes(instance), largest);
  const Clock::time_point start = Clock::now();
  auto remaining = [&] { return options.time_limit_s - std::chrono::duration<double>(Clock::now() - start).count(); };
  const int64_t lo = r.lower_bound;  // no plan below this
  if (r.arena <= lo) {
    r.proven_optimal = true;
    return r;
  }
  // Node budgets scale with the time limit so results do not depend on the machine's
  // speed until the time limit cuts in: about 50,000 nodes per second of limit.
  const int64_t total_nodes = options.node_budget
                                  ? std::max<int64_t>(options.initial_nodes, int64_t(options.time_limit_s * 50000))
                                  : INT64_MAX / 4;
  bool first = true;
  int64_t tried = lo;  // capacities below this were proven infeasible or given up
  while (tried < r.arena && remaining() > 0) {
    // First the lower bound itself (often the optimum), then bisection between what
    // was given up or proven infeasible and the best plan found.
    int64_t capacity = first ? tried : tried + (r.arena - tried) / 2;
    if (options.memory_limit > 0 && capacity > options.memory_limit && !first) break;
    const double share = first ? 0.35 : 0.3;
    const int64_t nodes = std::max<int64_t>(options.initial_nodes, int64_t(double(total_nodes) * share));
    first = false;
    Offsets found;
    FitResult f = fit_offsets(instance, capacity, nodes, std::max(0.0, remaining() * share), &found, &r.nodes);
    if (f == FitResult::kFound) {
      r.offsets = std::move(found);
      r.arena = arena_size(instance, r.offsets);
    } else {
      if (f == FitResult::kInfeasible) r.lower_bound = std::max(r.lower_bound, capacity + 1);
      tried = capacity + 1;
    }
  }
  r.proven_optimal = r.arena <= r.lower_bound;
  return r;
}

}  // namespace tensorgym
