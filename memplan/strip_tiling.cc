#include "memplan/strip_tiling.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "support/random.h"

namespace tensorgym {
namespace {

struct Piece {
  int64_t offset, size, start;
};

// Cuts [0, granules) into `pieces` non-empty parts at distinct random cut points;
// returns the part sizes in granules.
std::vector<int64_t> random_cuts(Rng& rng, int64_t granules, int pieces) {
  std::vector<int64_t> cuts;
  while (int(cuts.size()) < pieces - 1) {
    const int64_t c = rng.range(1, granules - 1);
    if (std::find(cuts.begin(), cuts.end(), c) == cuts.end()) cuts.push_back(c);
  }
  std::sort(cuts.begin(), cuts.end());
  std::vector<int64_t> sizes;
  int64_t prev = 0;
  for (int64_t c : cuts) {
    sizes.push_back(c - prev);
    prev = c;
  }
  sizes.push_back(granules - prev);
  return sizes;
}

}  // namespace

Expected<StripTiling> make_strip_tiling(const StripTilingOptions& o) {
  if (o.granule <= 0 || o.width <= 0 || o.width % o.granule != 0)
    return invalid_argument("strip tiling: width must be a positive multiple of granule");
  if (o.buffers < 1 || o.buffers > 1000000) return invalid_argument("strip tiling: buffers must be in [1, 1000000]");
  if (o.initial_pieces < 1 || o.max_new_pieces < 1 || o.max_run > 64 || o.max_new_pieces > 64)
    return invalid_argument("strip tiling: piece counts must be in [1, 64]");
  // Cuts move only if a run of two pieces can end, and a piece can be cut in two.
  if (o.max_run < 2 || o.max_new_pieces < 2)
    return invalid_argument("strip tiling: max_run and max_new_pieces must be at least 2");
  const int64_t granules = o.width / o.granule;
  if (granules < std::max<int64_t>({o.initial_pieces, o.max_new_pieces, 2}))
    return invalid_argument("strip tiling: too few granules for the pieces");
  Rng rng(o.seed);
  StripTiling t;
  t.optimum = o.width;
  std::vector<Piece> live;  // by offset
  std::vector<std::pair<Buffer, int64_t>> made;
  auto finish = [&](const Piece& p, int64_t end) {
    Buffer b;
    b.lower = p.start;
    b.upper = end;
    b.size = p.size;
    made.push_back({b, p.offset});
  };
  int64_t at = 0;
  for (int64_t size : random_cuts(rng, granules, o.initial_pieces)) {
    live.push_back({at * o.granule, size * o.granule, 0});
    at += size;
  }
  int64_t made_count = int64_t(live.size());
  int64_t time = 0;
  while (made_count < o.buffers) {
    time += rng.range(1, 3);
    // One or two events at this time, on disjoint runs of adjacent pieces.
    const int events = rng.chance(0.3) ? 2 : 1;
    std::vector<char> taken(live.size(), 0);
    std::vector<Piece> next;
    std::vector<std::pair<size_t, size_t>> runs;
    for (int e = 0; e < events; ++e) {
      const size_t len = size_t(rng.range(1, std::min<int64_t>(o.max_run, int64_t(live.size()))));
      const size_t first = size_t(rng.below(live.size() - len + 1));
      bool free = true;
      for (size_t k = first; k < first + len; ++k) free = free && !taken[k];
      if (!free) continue;
      for (size_t k = first; k < first + len; ++k) taken[k] = 1;
      runs.push_back({first, len});
    }
    for (auto [first, len] : runs) {
      const int64_t lo = live[first].offset;
      const int64_t span = live[first + len - 1].offset + live[first + len - 1].size - lo;
      const int64_t span_granules = span / o.granule;
      // A run of one piece must be cut in two or more, or nothing would change.
      const int64_t most = std::min<int64_t>(o.max_new_pieces, span_granules);
      const int64_t fewest = len == 1 ? 2 : 1;
      if (most < fewest) continue;
      for (size_t k = first; k < first + len; ++k) finish(live[k], time);
      int64_t off = lo;
      for (int64_t size : random_cuts(rng, span_granules, int(rng.range(fewest, most)))) {
        next.push_back({off, size * o.granule, time});
        off += size * o.granule;
        ++made_count;
      }
      for (size_t k = first; k < first + len; ++k) taken[k] = 2;  // replaced
    }
    for (size_t k = 0; k < live.size(); ++k)
      if (taken[k] != 2) next.push_back(live[k]);
    std::sort(next.begin(), next.end(), [](const Piece& a, const Piece& b) { return a.offset < b.offset; });
    live = std::move(next);
  }
  time += rng.range(1, 3);
  for (const Piece& p : live) finish(p, time);
  // Shuffle, then number the buffers in their new order.
  for (size_t i = made.size(); i > 1; --i) std::swap(made[i - 1], made[size_t(rng.below(i))]);
  for (size_t i = 0; i < made.size(); ++i) {
    made[i].first.id = std::to_string(i);
    t.instance.buffers.push_back(made[i].first);
    t.witness.push_back(made[i].second);
  }
  return t;
}

}  // namespace tensorgym
