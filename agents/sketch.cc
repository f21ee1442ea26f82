#include "agents/sketch.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "codegen/ir/ir_visitor.h"

namespace tensorgym {
namespace {

constexpr int64_t kMaxLanes = 64;      // vectorize accepts at most 64 lanes
constexpr int64_t kMaxRegisterTile = 16;  // sampled S3 factor of a non-vector axis
// Register tile of a random genome: the product of the S3 factors (vector lanes
// included) at most this many elements (32 AVX-512 registers of 16 floats).
constexpr int64_t kMaxTileElements = 512;

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

bool is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d) continue;
    out.push_back(d);
    if (d != n / d) out.push_back(n / d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Power-of-two divisors of n in [lo, hi].
std::vector<int64_t> pow2_divisors(int64_t n, int64_t lo, int64_t hi) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= hi && d <= n; d *= 2)
    if (d >= lo && n % d == 0) out.push_back(d);
  return out;
}

// Whether `consumer` reads `producer` only at its own axes, in order (an elementwise
// use of the same point), with the same extents.
bool reads_pointwise(const StageDef& consumer, const StageDef& producer) {
  if (consumer.is_reduction() || consumer.axes.size() != producer.axes.size()) return false;
  for (size_t a = 0; a < consumer.axes.size(); ++a)
    if (consumer.axes[a].extent != producer.axes[a].extent) return false;
  bool ok = true, seen = false;
  visit_exprs(consumer.body, [&](const Expr& e) {
    const Load* load = e.as<Load>();
    if (!load || load->name != producer.name) return;
    seen = true;
    if (load->indices.size() != consumer.axes.size()) {
      ok = false;
      return;
    }
    for (size_t a = 0; a < load->indices.size(); ++a) {
      const Variable* v = load->indices[a].as<Variable>();
      if (!v || v->name != consumer.axes[a].name) ok = false;
    }
  });
  return ok && seen;
}

// A random factorization of `extent` into levels, innermost first: inner[0] is drawn
// from `innermost` (divisors of extent), the others from the divisors of what remains.
template <size_t N>
std::array<int64_t, N> random_split(int64_t extent, const std::vector<int64_t>& innermost, Rng& rng) {
  std::array<int64_t, N> f;
  f.fill(1);
  int64_t rest = extent;
  int64_t inner = innermost.empty() ? 1 : rng.pick(innermost);
  f[N - 1] = inner;
  rest /= inner;
  for (size_t level = N - 1; level-- > 1;) {
    int64_t d = rng.pick(divisors(rest));
    f[level] = d;
    rest /= d;
  }
  f[0] = rest;
  return f;
}

// An axis's divisors in 2..64 that are powers of two (twice: drawn twice as often, they
// fill whole registers) or multiples of 4 from 12 up (28 runs as 16 + 12 lanes).
// Widths such as 7 or 14 run as one partial vector of 8 or 16 lanes (vectorize_loops.cc),
// a register's lanes idle, so they are left out here.
std::vector<int64_t> register_widths(int64_t extent) {
  std::vector<int64_t> out;
  for (int64_t d : divisors(extent)) {
    if (d < 2 || d > kMaxLanes) continue;
    if (is_pow2(d)) out.push_back(d), out.push_back(d);
    else if (d % 4 == 0 && d >= 12) out.push_back(d);
  }
  return out;
}

// Whether the whole axis is a vector width: 4 to 64 lanes with no width of 8 or more.
bool whole_axis_width(int64_t extent) {
  if (extent < 4 || extent > kMaxLanes || is_pow2(extent)) return false;
  const std::vector<int64_t> w = register_widths(extent);
  return w.empty() || *std::max_element(w.begin(), w.end()) < 8;
}

// Vector widths for an axis: register_widths, plus the whole axis where it is one (a
// 7 x 7 image's rows: a partial vector beats none, and beats vectorizing the channels
// of an NCHW tensor, which only a packed copy makes contiguous). {1} when there is none.
std::vector<int64_t> vector_choices(int64_t extent) {
  std::vector<int64_t> out = register_widths(extent);
  if (whole_axis_width(extent)) out.push_back(extent);
  if (out.empty()) out.push_back(1);
  return out;
}

// Whether an axis can carry the vector loop: it has a width of at least 8 lanes, or
// (`small`) the whole axis is its width.
bool vectorizable(int64_t extent, bool small = false) {
  if (small) return whole_axis_width(extent);
  const std::vector<int64_t> w = register_widths(extent);
  return !w.empty() && *std::max_element(w.begin(), w.end()) >= 8;
}

std::vector<int64_t> innermost_choices(int64_t extent, bool vector_axis) {
  if (vector_axis) return vector_choices(extent);
  std::vector<int64_t> out;
  for (int64_t d : divisors(extent))
    if (d <= kMaxRegisterTile) out.push_back(d);
  return out;
}

bool indexes_away_from_innermost(const StagePlan& sp, size_t j, int a);

// The axes that can carry the vector loop: with a full width (8 lanes or more), and the
// small ones whose whole extent is the width. Where there are full ones, `small` holds
// only the last axis, and only if vectorizing every full axis makes some tensor that
// the last axis reads in its innermost dimension strided (a packed copy's job).
void vector_axes(const StagePlan& sp, std::vector<int>* full, std::vector<int>* small) {
  const int n = int(sp.axes.size());
  std::vector<int> all_small;
  for (int a = 0; a < n; ++a) {
    if (vectorizable(sp.axis_extents[size_t(a)])) full->push_back(a);
    if (vectorizable(sp.axis_extents[size_t(a)], true)) all_small.push_back(a);
  }
  if (full->empty()) {
    *small = std::move(all_small);
    return;
  }
  if (all_small.empty() || all_small.back() != n - 1) return;
  for (int a : *full) {
    bool conflict = false;
    for (size_t j = 0; j < sp.read_inner.size(); ++j)
      conflict |= sp.read_inner[j][size_t(n - 1)] && indexes_away_from_innermost(sp, j, a);
    if (!conflict) return;
  }
  small->push_back(n - 1);
}

int default_vec_axis(const StagePlan& sp, Rng& rng) {
  int n = int(sp.axes.size());
  std::vector<int> usable, small;
  vector_axes(sp, &usable, &small);
  if (usable.empty()) return small.empty() ? n - 1 : rng.pick(small);
  // A small last axis (an image's short rows) half the time: the alternatives need a
  // transposed copy of what the rows read, and short rows run as one partial vector
  // each, or flattened into full ones.
  if (!small.empty() && rng.chance(0.5)) return small.back();
  // Mostly the last usable axis (unit stride in row-major layouts).
  if (usable.size() == 1 || rng.chance(0.6)) return usable.back();
  usable.pop_back();
  return rng.pick(usable);
}

// Whether the stage's axis `a` indexes read tensor `j` at a dimension other than its
// innermost (vector loads along `a` are strided unless the tensor is packed with the
// layout rewrite).
bool indexes_away_from_innermost(const StagePlan& sp, size_t j, int a) {
  if (j >= sp.read_dims.size() || a < 0 || size_t(a) >= sp.read_dims[j].size()) return false;
  const int dim = sp.read_dims[j][size_t(a)];
  return dim >= 0 && dim + 1 < sp.read_ranks[j];
}

// Rows shorter than this may be flattened with the axis before them.
constexpr int64_t kShortRow = 16;

// Whether `g` may fuse the S3 loops of the last two axes into its vector loop: the
// vector axis is the last one, short, and whole in S3 (whole rows), and the rows fit
// in 64 lanes.
bool can_flatten(const StagePlan& sp, const StageGenes& g) {
  const int n = int(sp.axes.size());
  if (n < 2 || g.vec_axis != n - 1 || g.spatial.size() != size_t(n)) return false;
  const int64_t row = sp.axis_extents[size_t(n - 1)];
  const int64_t rows = g.spatial[size_t(n - 2)][3];
  return row < kShortRow && g.spatial[size_t(n - 1)][3] == row && rows > 1 && rows * row <= kMaxLanes;
}

// Makes `g` flattened: the last axis vectorized whole, a random S3 of more than one row
// for the axis before, the register tile within kMaxTileElements. False (and `g`
// unchanged) where the rows do not fit.
bool make_flattened(const StagePlan& sp, StageGenes* g, Rng& rng) {
  const int n = int(sp.axes.size());
  if (n < 2) return false;
  const int64_t row = sp.axis_extents[size_t(n - 1)];
  if (row >= kShortRow) return false;
  int64_t others = 1;  // the rest of the register tile
  for (int a = 0; a < n - 2; ++a) others *= g->spatial[size_t(a)][3];
  std::vector<int64_t> rows;
  for (int64_t d : divisors(sp.axis_extents[size_t(n - 2)]))
    if (d > 1 && d * row <= kMaxLanes && others * d * row <= kMaxTileElements) rows.push_back(d);
  if (rows.empty()) return false;
  g->vec_axis = n - 1;
  g->spatial[size_t(n - 1)] = {1, 1, 1, row};
  g->spatial[size_t(n - 2)] = random_split<4>(sp.axis_extents[size_t(n - 2)], rows, rng);
  g->flatten = true;
  return true;
}

int64_t register_tile(const StageGenes& g) {
  int64_t p = 1;
  for (const auto& f : g.spatial) p *= f[3];
  return p;
}

bool tiles_valid(const StagePlan& sp, const StageGenes& g) {
  for (size_t a = 0; a < sp.axes.size(); ++a) {
    const auto& f = g.spatial[a];
    if (f[0] * f[1] * f[2] * f[3] != sp.axis_extents[a]) return false;
    if (f[3] > kMaxLanes) return false;
  }
  for (size_t r = 0; r < sp.reduce_axes.size(); ++r)
    if (g.reduce[r][0] * g.reduce[r][1] != sp.reduce_extents[r]) return false;
  return true;
}

StageGenes random_stage_genes(const StagePlan& sp, Rng& rng) {
  StageGenes g;
  const int n = int(sp.axes.size());
  switch (sp.rule) {
    case StageRule::kTiled: {
      g.fuse_consumer = !sp.consumer.empty() && rng.chance(0.5);
      g.vec_axis = default_vec_axis(sp, rng);
      for (int attempt = 0; attempt < 16; ++attempt) {
        g.spatial.clear();
        for (int a = 0; a < n; ++a) {
          int64_t e = sp.axis_extents[size_t(a)];
          g.spatial.push_back(random_split<4>(e, innermost_choices(e, a == g.vec_axis), rng));
        }
        if (register_tile(g) <= kMaxTileElements) break;
      }
      for (int64_t e : sp.reduce_extents) g.reduce.push_back(random_split<2>(e, divisors(e), rng));
      g.compute_level = int(rng.below(2));
      const bool inner_vector = g.vec_axis == n - 1;
      g.layout = rng.chance(inner_vector ? 0.5 : 0.9);
      for (size_t i = 0; i < sp.reads.size(); ++i) {
        const bool needs_pack = g.layout && indexes_away_from_innermost(sp, i, g.vec_axis);
        g.pack.push_back(rng.chance(needs_pack ? 0.1 : 0.5) ? 0 : int(rng.range(1, 4)));
      }
      // Short whole rows that carry the vectors are flattened with the rows before
      // them half the time (retiled to more than one row where needed).
      if (g.vec_axis == n - 1 && rng.chance(0.5)) g.flatten = can_flatten(sp, g) || make_flattened(sp, &g, rng);
      g.parallel = int(rng.range(0, (g.compute_level + 1) * n));
      g.unroll = int(rng.below(4));
      break;
    }
    case StageRule::kPrologue: {
      // inline 40%, root 20%, computed at a tile loop 40%
      uint64_t r = rng.below(10);
      g.location = r < 4 ? 0 : r < 6 ? 1 : int(2 + rng.below(3));
      [[fallthrough]];
    }
    case StageRule::kFusable:
    case StageRule::kSimple: {
      if (n > 0) {
        std::vector<int64_t> v = pow2_divisors(sp.axis_extents.back(), 1, kMaxLanes);
        g.vector = rng.pick(v);
      }
      g.parallel = int(rng.range(0, n));
      g.unroll = int(rng.below(4));
      break;
    }
    case StageRule::kRFactor: {
      g.use_rfactor = rng.chance(0.8);
      std::vector<int64_t> v = pow2_divisors(product(sp.reduce_extents), 2, kMaxLanes);
      g.rfactor_inner = v.empty() ? 1 : rng.pick(v);
      if (n > 0) g.vector = rng.pick(pow2_divisors(sp.axis_extents.back(), 1, kMaxLanes));
      g.parallel = int(rng.range(0, 1));
      g.unroll = int(rng.below(4));
      break;
    }
    case StageRule::kEpilogue:
      break;
  }
  return g;
}

// ---- rendering ----------------------------------------------------------------------

struct TiledInfo {
  std::string outer, inner;         // O and I
  std::vector<std::string> o_loop;  // O's loops of levels 0 and 1, by position (after fusion)
  std::string i_r0;                 // I's innermost R0 loop, or empty
  int n = 0;
};

class Renderer {
 public:
  explicit Renderer(const ProgramPtr& program) : s_(program) {}

  Schedule& schedule() { return s_; }

  // Applies a step that must succeed.
  Status must(const std::string& name, std::vector<std::string> args) {
    Primitive p{name, std::move(args), {}};
    PrimitiveResult r = s_.apply(p);
    if (!r.ok()) return Status(r.status().code(), p.to_string() + ": " + r.status().message());
    return Status();
  }
  // Applies an optional step; false (and nothing changed) when rejected.
  bool optional(const std::string& name, std::vector<std::string> args) {
    return s_.apply(Primitive{name, std::move(args), {}}).ok();
  }
  // Applies both steps or neither.
  bool optional_pair(const Primitive& a, const Primitive& b) {
    Schedule copy = s_;
    if (!copy.apply(a).ok() || !copy.apply(b).ok()) return false;
    s_ = std::move(copy);
    return true;
  }

  const StageSchedule* stage(const std::string& name) const { return s_.state().find_stage(name); }
  bool inlined(const std::string& name) const {
    const StageSchedule* st = stage(name);
    return st && st->attach == AttachKind::kInline;
  }

  // A tensor name not yet taken.
  std::string fresh_tensor(const std::string& base) const {
    std::string name = base;
    for (int i = 1; s_.state().has_tensor(name); ++i) name = fmt::format("{}{}", base, i);
    return name;
  }
  // A loop name not yet used by `stage`.
  std::string fresh_loop(const std::string& stage_name, const std::string& base) const {
    const StageSchedule* st = stage(stage_name);
    std::string name = base;
    for (int i = 1; st && st->find_loop(name) >= 0; ++i) name = fmt::format("{}_{}", base, i);
    return name;
  }
  std::string leaf_name(const std::string& stage_name, size_t pos) const {
    const StageSchedule* st = stage(stage_name);
    return st->loops[size_t(st->leaf[pos])].name;
  }

 private:
  Schedule s_;
};

std::string ref(const std::string& stage, const std::string& loop) { return stage + "." + loop; }

// Fuses the first `count` of `order` (adjacent leaf loops of `stage`) and marks the
// result parallel. Returns the loop names by position afterwards.
std::vector<std::string> fuse_parallel(Renderer& r, const std::string& stage, std::vector<std::string> order,
                                       int count) {
  if (count <= 0) return order;
  std::string cur = order[0];
  int fused = 1;
  for (int k = 1; k < count && k < int(order.size()); ++k) {
    std::string name = r.fresh_loop(stage, "fused");
    if (!r.optional("fuse", {ref(stage, cur), ref(stage, order[size_t(k)]), name})) break;
    cur = name;
    fused = k + 1;
  }
  r.optional("parallel", {ref(stage, cur)});
  for (int k = 0; k < fused; ++k) order[size_t(k)] = cur;
  return order;
}

Status render_tiled(Renderer& r, const StagePlan& sp, const StageGenes& g, TiledInfo* info) {
  const int n = int(sp.axes.size());
  const int m = int(sp.reduce_axes.size());
  const bool fuse = g.fuse_consumer && !sp.consumer.empty();
  std::string O, I;
  std::vector<std::string> o_axes;
  if (fuse) {
    O = sp.consumer;
    I = sp.name;
    o_axes = sp.consumer_axes;
  } else {
    I = r.fresh_tensor(sp.name + "_local");
    TG_RETURN_IF_ERROR(r.must("cache_write", {sp.name, I}));
    O = sp.name;
    o_axes = sp.axes;
  }
  const int cl = g.compute_level == 0 ? 0 : 1;

  // O: S0 S1 | the tile
  const size_t ns = static_cast<size_t>(n);
  std::vector<std::string> l0(ns), l1(ns), l2(ns);
  for (int a = 0; a < n; ++a) {
    const auto& f = g.spatial[size_t(a)];
    const std::string& ax = o_axes[size_t(a)];
    std::string rest = r.fresh_loop(O, ax + "_t");
    l0[size_t(a)] = r.fresh_loop(O, ax + "0");
    TG_RETURN_IF_ERROR(r.must("split", {ref(O, ax), std::to_string(f[1] * f[2] * f[3]), l0[size_t(a)], rest}));
    l1[size_t(a)] = r.fresh_loop(O, ax + "1");
    l2[size_t(a)] = r.fresh_loop(O, ax + "2");
    TG_RETURN_IF_ERROR(r.must("split", {ref(O, rest), std::to_string(f[2] * f[3]), l1[size_t(a)], l2[size_t(a)]}));
  }
  std::vector<std::string> order;
  for (auto* level : {&l0, &l1, &l2}) order.insert(order.end(), level->begin(), level->end());
  std::vector<std::string> args = {O};
  args.insert(args.end(), order.begin(), order.end());
  TG_RETURN_IF_ERROR(r.must("reorder", args));

  // Parallel outer loops (at most up to the loop I is computed at), then compute_at.
  const int target = (cl + 1) * n - 1;
  std::vector<std::string> outer(order.begin(), order.begin() + 2 * n);
  outer = fuse_parallel(r, O, outer, std::min(g.parallel, target + 1));
  TG_RETURN_IF_ERROR(r.must("compute_at", {I, ref(O, outer[size_t(target)])}));

  // I: [S1] R0 S2 R1 S3 over its tile.
  std::vector<std::string> i1, i2, i3(ns), r0, r1;
  for (int a = 0; a < n; ++a) {
    const auto& f = g.spatial[size_t(a)];
    std::string ax = sp.axes[size_t(a)];
    if (cl == 0) {
      std::string rest = r.fresh_loop(I, ax + "_t");
      i1.push_back(r.fresh_loop(I, ax + "1"));
      TG_RETURN_IF_ERROR(r.must("split", {ref(I, ax), std::to_string(f[2] * f[3]), i1.back(), rest}));
      ax = rest;
    }
    i2.push_back(r.fresh_loop(I, sp.axes[size_t(a)] + "2"));
    i3[size_t(a)] = r.fresh_loop(I, sp.axes[size_t(a)] + "3");
    TG_RETURN_IF_ERROR(r.must("split", {ref(I, ax), std::to_string(f[3]), i2.back(), i3[size_t(a)]}));
  }
  for (int k = 0; k < m; ++k) {
    const std::string& rx = sp.reduce_axes[size_t(k)];
    r0.push_back(r.fresh_loop(I, rx + "0"));
    r1.push_back(r.fresh_loop(I, rx + "1"));
    TG_RETURN_IF_ERROR(r.must("split", {ref(I, rx), std::to_string(g.reduce[size_t(k)][1]), r0.back(), r1.back()}));
  }
  std::vector<std::string> iorder = i1;
  iorder.insert(iorder.end(), r0.begin(), r0.end());
  iorder.insert(iorder.end(), i2.begin(), i2.end());
  iorder.insert(iorder.end(), r1.begin(), r1.end());
  const int vec = std::clamp(g.vec_axis, 0, n - 1);
  for (int a = 0; a < n; ++a)
    if (a != vec) iorder.push_back(i3[size_t(a)]);
  iorder.push_back(i3[size_t(vec)]);
  args = {I};
  args.insert(args.end(), iorder.begin(), iorder.end());
  TG_RETURN_IF_ERROR(r.must("reorder", args));

  // Layout: the vector axis innermost in I's buffer.
  if (g.layout && vec != n - 1) {
    std::vector<std::string> dims = {I};
    for (int a = 0; a < n; ++a)
      if (a != vec) dims.push_back(sp.axes[size_t(a)]);
    dims.push_back(sp.axes[size_t(vec)]);
    r.optional("reorder_storage", dims);
  }
  // Annotations.
  const bool flatten = g.flatten && can_flatten(sp, g);
  if (flatten) {
    const std::string rows = r.fresh_loop(I, sp.axes[ns - 2] + sp.axes[ns - 1] + "3");
    if (r.optional("fuse", {ref(I, i3[ns - 2]), ref(I, i3[ns - 1]), rows})) r.optional("vectorize", {ref(I, rows)});
  } else if (g.spatial[size_t(vec)][3] > 1) {
    r.optional("vectorize", {ref(I, i3[size_t(vec)])});
  }
  int64_t step = kUnrollSteps[std::clamp(g.unroll, 0, 3)];
  if (step > 0) r.optional("pragma", {ref(I, iorder[0]), "auto_unroll_max_step", std::to_string(step)});
  {
    const auto& f = g.spatial[size_t(n - 1)];
    int64_t w = f[2] * f[3];
    // O's copy of a flattened tile: its whole rows in one vector loop too.
    const int64_t rows = n >= 2 ? g.spatial[ns - 2][2] * g.spatial[ns - 2][3] : 1;
    const std::string both = flatten ? r.fresh_loop(O, o_axes[ns - 2] + o_axes[ns - 1] + "2") : "";
    if (flatten && w == sp.axis_extents[ns - 1] && rows * w <= kMaxLanes &&
        r.optional("fuse", {ref(O, l2[ns - 2]), ref(O, l2[ns - 1]), both})) {
      r.optional("vectorize", {ref(O, both)});
    } else if (w > 1 && w <= kMaxLanes) {
      r.optional("vectorize", {ref(O, l2[size_t(n - 1)])});
    }
  }

  info->outer = O;
  info->inner = I;
  info->o_loop = outer;
  info->i_r0 = m > 0 ? r0.back() : "";
  info->n = n;

  // Packing of the tensors the stage reads.
  for (size_t j = 0; j < sp.reads.size() && j < g.pack.size(); ++j) {
    const std::string& X = sp.reads[j];
    int loc = g.pack[j];
    if (loc == 0 || r.inlined(X)) continue;
    std::string at;
    if (loc == 1) at = ref(O, outer[size_t(n - 1)]);
    if (loc == 2) at = ref(O, outer[size_t(2 * n - 1)]);
    if (loc == 3 && !info->i_r0.empty()) at = ref(I, info->i_r0);
    std::string name = r.fresh_tensor(X + "_" + I);
    if (loc == 4) {
      if (!r.optional("cache_read", {X, I, name})) continue;
    } else if (at.empty() ||
               !r.optional_pair(Primitive{"cache_read", {X, I, name}, {}}, Primitive{"compute_at", {name, at}, {}})) {
      continue;
    }
    // Layout: the dimension the vector axis indexes innermost in the packed copy.
    int dim = g.layout && j < sp.read_dims.size() ? sp.read_dims[j][size_t(vec)] : -1;
    const StageSchedule* packed = r.stage(name);
    if (dim >= 0 && packed && dim + 1 < int(packed->def->axes.size())) {
      std::vector<std::string> dims = {name};
      for (size_t a = 0; a < packed->def->axes.size(); ++a)
        if (int(a) != dim) dims.push_back(packed->def->axes[a].name);
      dims.push_back(packed->def->axes[size_t(dim)].name);
      // The copy's loops in the new storage order, so that it writes contiguously (a
      // transposing copy that writes with a stride ran the 7x7, 512-channel conv at
      // half speed).
      if (r.optional("reorder_storage", dims)) r.optional("reorder", dims);
    }
  }
  return Status();
}

// Parallel outer loops, a vectorized innermost spatial loop, an unroll pragma.
void render_simple(Renderer& r, const StagePlan& sp, const StageGenes& g) {
  const StageSchedule* st = r.stage(sp.name);
  if (!st || st->attach != AttachKind::kRoot) return;
  const int n = int(sp.axes.size());
  if (n == 0) return;
  const std::string S = sp.name;
  std::vector<std::string> spatial = sp.axes;
  if (g.vector > 1 && sp.axis_extents.back() % g.vector == 0 && g.vector <= kMaxLanes) {
    std::string vo = r.fresh_loop(S, sp.axes.back() + "_o"), vi = r.fresh_loop(S, sp.axes.back() + "_v");
    if (r.optional("split", {ref(S, sp.axes.back()), std::to_string(g.vector), vo, vi})) {
      spatial.back() = vo;
      std::vector<std::string> args = {S};
      args.insert(args.end(), spatial.begin(), spatial.end());
      args.insert(args.end(), sp.reduce_axes.begin(), sp.reduce_axes.end());
      args.push_back(vi);
      r.optional("reorder", args);
      r.optional("vectorize", {ref(S, vi)});
    }
  }
  int p = std::min(g.parallel, n);
  if (p > 0) spatial = fuse_parallel(r, S, spatial, p);
  int64_t step = kUnrollSteps[std::clamp(g.unroll, 0, 3)];
  if (step > 0) r.optional("pragma", {ref(S, spatial[0]), "auto_unroll_max_step", std::to_string(step)});
}

Status render_rfactor(Renderer& r, const StagePlan& sp, const StageGenes& g) {
  const std::string S = sp.name;
  std::string red = sp.reduce_axes[0];
  for (size_t k = 1; k < sp.reduce_axes.size(); ++k) {
    std::string name = r.fresh_loop(S, "rfused");
    TG_RETURN_IF_ERROR(r.must("fuse", {ref(S, red), ref(S, sp.reduce_axes[k]), name}));
    red = name;
  }
  std::string ro = r.fresh_loop(S, "r_o"), ri = r.fresh_loop(S, "r_i");
  TG_RETURN_IF_ERROR(r.must("split", {ref(S, red), std::to_string(g.rfactor_inner), ro, ri}));
  std::string rf = r.fresh_tensor(S + "_rf");
  TG_RETURN_IF_ERROR(r.must("rfactor", {ref(S, ri), rf}));
  // rf's loops: ri, the spatial axes, ro. Partial sums innermost and vectorized.
  std::vector<std::string> args = {rf};
  args.insert(args.end(), sp.axes.begin(), sp.axes.end());
  args.push_back(ro);
  args.push_back(ri);
  r.optional("reorder", args);
  r.optional("vectorize", {ref(rf, ri)});
  if (g.parallel > 0 && !sp.axes.empty() && product(sp.axis_extents) > 1) r.optional("parallel", {ref(rf, sp.axes[0])});
  int64_t step = kUnrollSteps[std::clamp(g.unroll, 0, 3)];
  if (step > 0) {
    const StageSchedule* st = r.stage(rf);
    if (st) r.optional("pragma", {ref(rf, r.leaf_name(rf, 0)), "auto_unroll_max_step", std::to_string(step)});
  }
  return Status();
}

}  // namespace

const StagePlan* SketchPlan::find(const std::string& name) const {
  for (const StagePlan& s : stages)
    if (s.name == name) return &s;
  return nullptr;
}

int SketchPlan::index_of(const std::string& name) const {
  for (size_t i = 0; i < stages.size(); ++i)
    if (stages[i].name == name) return int(i);
  return -1;
}

SketchPlan make_sketch_plan(const Program& program) {
  SketchPlan plan;
  std::map<std::string, std::vector<std::string>> readers;
  for (const StageDef& d : program.stages)
    for (const std::string& t : program.reads_of(d)) readers[t].push_back(d.name);
  for (const StageDef& d : program.stages) {
    StagePlan sp;
    sp.name = d.name;
    for (const IterVar& v : d.axes) {
      sp.axes.push_back(v.name);
      sp.axis_extents.push_back(v.extent);
    }
    for (const IterVar& v : d.reduce_axes) {
      sp.reduce_axes.push_back(v.name);
      sp.reduce_extents.push_back(v.extent);
    }
    const bool output = program.is_output(d.name);
    if (d.is_reduction() && !sp.axes.empty()) {
      if (product(sp.axis_extents) <= 16 && product(sp.reduce_extents) >= 64) {
        sp.rule = StageRule::kRFactor;
      } else {
        sp.rule = StageRule::kTiled;
        sp.reads = program.reads_of(d);
        for (const std::string& t : sp.reads) {
          std::vector<int> dims(sp.axes.size(), -1);
          std::vector<bool> inner(sp.axes.size(), false);
          int rank = 0;
          visit_exprs(d.body, [&](const Expr& e) {
            const Load* load = e.as<Load>();
            if (!load || load->name != t) return;
            rank = int(load->indices.size());
            for (size_t i = 0; i < load->indices.size(); ++i) {
              const Variable* v = load->indices[i].as<Variable>();
              for (size_t a = 0; v && a < sp.axes.size(); ++a)
                if (v->name == sp.axes[a]) dims[a] = int(i);
            }
            if (load->indices.empty()) return;
            visit_exprs(load->indices.back(), [&](const Expr& x) {
              const Variable* v = x.as<Variable>();
              for (size_t a = 0; v && a < sp.axes.size(); ++a)
                if (v->name == sp.axes[a]) inner[a] = true;
            });
          });
          sp.read_dims.push_back(std::move(dims));
          sp.read_ranks.push_back(rank);
          sp.read_inner.push_back(std::move(inner));
        }
      }
    } else if (d.is_reduction()) {
      sp.rule = StageRule::kSimple;
    } else {
      sp.rule = output ? StageRule::kSimple : StageRule::kPrologue;
    }
    plan.stages.push_back(std::move(sp));
  }
  // Epilogue chains and the consumers tiled stages may fuse into.
  for (StagePlan& sp : plan.stages) {
    if (sp.rule != StageRule::kTiled) continue;
    std::string cur = sp.name;
    std::vector<int> chain;
    for (;;) {
      const std::vector<std::string>& rs = readers[cur];
      if (rs.size() != 1) break;
      const StageDef* c = program.find_stage(rs[0]);
      const StageDef* p = program.find_stage(cur);
      if (!c || !p || !reads_pointwise(*c, *p)) break;
      int ci = plan.index_of(c->name);
      if (program.is_output(c->name)) {
        for (int k : chain) plan.stages[size_t(k)].rule = StageRule::kEpilogue;
        plan.stages[size_t(ci)].rule = StageRule::kFusable;
        sp.consumer = c->name;
        for (const IterVar& v : c->axes) sp.consumer_axes.push_back(v.name);
        break;
      }
      if (plan.stages[size_t(ci)].rule != StageRule::kPrologue) break;
      chain.push_back(ci);
      cur = c->name;
    }
  }
  // Prologues read by a tiled stage may be computed at its tiles.
  for (StagePlan& sp : plan.stages) {
    if (sp.rule != StageRule::kPrologue) continue;
    for (const std::string& reader : readers[sp.name]) {
      const StagePlan* rp = plan.find(reader);
      if (rp && rp->rule == StageRule::kTiled) {
        sp.tiled_reader = reader;
        break;
      }
    }
  }
  return plan;
}

Genome random_genome(const SketchPlan& plan, Rng& rng) {
  Genome g;
  for (const StagePlan& sp : plan.stages) g.stages.push_back(random_stage_genes(sp, rng));
  // A flattened reader's vector loads are contiguous only where the rows it reads are
  // as wide as its own, which an inlined padding keeps (a materialized one is wider):
  // such a prologue is inlined more often (70% instead of 40%).
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const StagePlan& sp = plan.stages[i];
    const int reader = sp.rule == StageRule::kPrologue ? plan.index_of(sp.tiled_reader) : -1;
    if (reader >= 0 && g.stages[size_t(reader)].flatten && rng.chance(0.5)) g.stages[i].location = 0;
  }
  return g;
}

Genome mutate_genome(const SketchPlan& plan, const Genome& parent, Rng& rng) {
  // The mutations that apply to this plan, with Ansor-like weights.
  enum Kind { kTile, kParallel, kUnroll, kLocation, kPack, kVecAxis, kLayout, kStructure, kVector, kFlatten };
  std::vector<std::pair<Kind, int>> kinds;  // (kind, stage)
  std::vector<double> weights;
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const StagePlan& sp = plan.stages[i];
    int si = int(i);
    switch (sp.rule) {
      case StageRule::kTiled:
        kinds.push_back({kTile, si}), weights.push_back(6);
        kinds.push_back({kParallel, si}), weights.push_back(1);
        kinds.push_back({kUnroll, si}), weights.push_back(1);
        kinds.push_back({kLocation, si}), weights.push_back(1);
        if (!sp.reads.empty()) kinds.push_back({kPack, si}), weights.push_back(1);
        if (sp.axes.size() > 1) kinds.push_back({kVecAxis, si}), weights.push_back(0.5);
        kinds.push_back({kLayout, si}), weights.push_back(0.5);
        if (sp.axes.size() > 1 && sp.axis_extents.back() < kShortRow) kinds.push_back({kFlatten, si}), weights.push_back(0.5);
        if (!sp.consumer.empty()) kinds.push_back({kStructure, si}), weights.push_back(0.3);
        break;
      case StageRule::kPrologue:
        kinds.push_back({kLocation, si}), weights.push_back(1);
        [[fallthrough]];
      case StageRule::kFusable:
      case StageRule::kSimple:
        kinds.push_back({kVector, si}), weights.push_back(0.5);
        kinds.push_back({kParallel, si}), weights.push_back(0.3);
        kinds.push_back({kUnroll, si}), weights.push_back(0.3);
        break;
      case StageRule::kRFactor:
        kinds.push_back({kStructure, si}), weights.push_back(0.3);
        kinds.push_back({kVector, si}), weights.push_back(1);
        kinds.push_back({kUnroll, si}), weights.push_back(0.5);
        break;
      case StageRule::kEpilogue:
        break;
    }
  }
  if (kinds.empty()) return parent;
  double total = 0;
  for (double w : weights) total += w;

  for (int attempt = 0; attempt < 16; ++attempt) {
    Genome g = parent;
    double x = rng.uniform() * total;
    size_t pick = 0;
    while (pick + 1 < kinds.size() && x >= weights[pick]) x -= weights[pick++];
    auto [kind, si] = kinds[pick];
    const StagePlan& sp = plan.stages[size_t(si)];
    StageGenes& s = g.stages[size_t(si)];
    const int n = int(sp.axes.size());
    switch (kind) {
      case kTile: {
        // Move a factor from one level of an axis to another (the product stays).
        int axes = n + int(sp.reduce_axes.size());
        if (axes == 0) break;
        int a = int(rng.below(uint64_t(axes)));
        int64_t* f = a < n ? s.spatial[size_t(a)].data() : s.reduce[size_t(a - n)].data();
        int levels = a < n ? 4 : 2;
        std::vector<int> from;
        for (int l = 0; l < levels; ++l)
          if (f[l] > 1) from.push_back(l);
        if (from.empty()) break;
        int src = rng.pick(from);
        int dst = int(rng.below(uint64_t(levels - 1)));
        if (dst >= src) ++dst;
        std::vector<int64_t> ds = divisors(f[src]);
        ds.erase(ds.begin());  // not 1
        int64_t d = rng.pick(ds);
        f[src] /= d;
        f[dst] *= d;
        break;
      }
      case kParallel: {
        int hi = sp.rule == StageRule::kTiled ? (s.compute_level + 1) * n : n;
        s.parallel = int(rng.range(0, std::max(0, hi)));
        break;
      }
      case kUnroll:
        s.unroll = int(rng.below(4));
        break;
      case kLocation:
        if (sp.rule == StageRule::kTiled) {
          s.compute_level = 1 - s.compute_level;
          s.parallel = std::min(s.parallel, (s.compute_level + 1) * n);
        } else {
          s.location = int(rng.below(5));
        }
        break;
      case kPack: {
        size_t j = size_t(rng.below(s.pack.size()));
        s.pack[j] = int(rng.below(5));
        break;
      }
      case kVecAxis: {
        std::vector<int> usable, small;
        vector_axes(sp, &usable, &small);
        usable.insert(usable.end(), small.begin(), small.end());
        if (usable.empty()) break;
        int a = rng.pick(usable);
        std::vector<int64_t> lanes = vector_choices(sp.axis_extents[size_t(a)]);
        s.vec_axis = a;
        // Its S3 becomes a power of two: redistribute the axis from scratch.
        s.spatial[size_t(a)] = random_split<4>(sp.axis_extents[size_t(a)], lanes, rng);
        break;
      }
      case kLayout:
        s.layout = !s.layout;
        break;
      case kFlatten:
        if (s.flatten) {
          s.flatten = false;
        } else if (can_flatten(sp, s)) {
          s.flatten = true;
        } else {
          make_flattened(sp, &s, rng);
        }
        break;
      case kStructure:
        if (sp.rule == StageRule::kTiled) s.fuse_consumer = !s.fuse_consumer;
        if (sp.rule == StageRule::kRFactor) s.use_rfactor = !s.use_rfactor;
        break;
      case kVector:
        if (sp.rule == StageRule::kRFactor) {
          std::vector<int64_t> v = pow2_divisors(product(sp.reduce_extents), 2, kMaxLanes);
          if (!v.empty()) s.rfactor_inner = rng.pick(v);
        } else if (n > 0) {
          s.vector = rng.pick(pow2_divisors(sp.axis_extents.back(), 1, kMaxLanes));
        }
        break;
    }
    if (sp.rule == StageRule::kTiled && !tiles_valid(sp, s)) continue;
    if (!(g == parent)) return g;
  }
  return parent;
}

Genome crossover_genomes(const SketchPlan& plan, const Genome& a, const Genome& b, Rng& rng) {
  Genome g = a;
  for (size_t i = 0; i < plan.stages.size() && i < b.stages.size(); ++i)
    if (rng.chance(0.5)) g.stages[i] = b.stages[i];
  return g;
}

Expected<Schedule> render_genome(const SketchPlan& plan, const Genome& g, const ProgramPtr& program) {
  if (g.stages.size() != plan.stages.size()) return invalid_argument("genome does not match the sketch plan");
  Renderer r(program);
  // 1. Epilogues are inlined, so tiled stages see their fusable consumer.
  for (size_t i = 0; i < plan.stages.size(); ++i)
    if (plan.stages[i].rule == StageRule::kEpilogue)
      TG_RETURN_IF_ERROR(r.must("compute_inline", {plan.stages[i].name}));
  // 2. Multi-level tiling, consumers before producers.
  std::map<std::string, TiledInfo> tiled;
  for (size_t i = plan.stages.size(); i-- > 0;) {
    const StagePlan& sp = plan.stages[i];
    if (sp.rule != StageRule::kTiled) continue;
    TiledInfo info;
    TG_RETURN_IF_ERROR(render_tiled(r, sp, g.stages[i], &info));
    tiled[sp.name] = info;
  }
  // 3. Reductions with a small spatial extent.
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const StagePlan& sp = plan.stages[i];
    if (sp.rule == StageRule::kRFactor && g.stages[i].use_rfactor)
      TG_RETURN_IF_ERROR(render_rfactor(r, sp, g.stages[i]));
  }
  // 4. Prologues: inlined, at root, or at a tile loop of their tiled reader.
  for (size_t i = plan.stages.size(); i-- > 0;) {
    const StagePlan& sp = plan.stages[i];
    if (sp.rule != StageRule::kPrologue) continue;
    const StageGenes& s = g.stages[i];
    bool placed = false;
    if (s.location == 0) {
      placed = r.optional("compute_inline", {sp.name});
    } else if (s.location >= 2 && tiled.count(sp.tiled_reader)) {
      const TiledInfo& t = tiled[sp.tiled_reader];
      std::string at;
      if (s.location == 2) at = ref(t.outer, t.o_loop[size_t(t.n - 1)]);
      if (s.location == 3) at = ref(t.outer, t.o_loop[size_t(2 * t.n - 1)]);
      if (s.location == 4 && !t.i_r0.empty()) at = ref(t.inner, t.i_r0);
      placed = !at.empty() && r.optional("compute_at", {sp.name, at});
    }
    if (!placed) render_simple(r, sp, s);
  }
  // 5. Everything else that is still untouched at root.
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const StagePlan& sp = plan.stages[i];
    const StageGenes& s = g.stages[i];
    bool fused_away = false;
    if (sp.rule == StageRule::kFusable) {
      for (const StagePlan& t : plan.stages) {
        if (t.rule != StageRule::kTiled || t.consumer != sp.name) continue;
        fused_away = g.stages[size_t(plan.index_of(t.name))].fuse_consumer;
      }
    }
    if (sp.rule == StageRule::kSimple || (sp.rule == StageRule::kFusable && !fused_away) ||
        (sp.rule == StageRule::kRFactor && !s.use_rfactor))
      render_simple(r, sp, s);
  }
  return std::move(r.schedule());
}

std::string genome_to_text(const Genome& g) {
  std::ostringstream o;
  for (const StageGenes& s : g.stages) {
    o << s.fuse_consumer << ' ' << s.compute_level << ' ' << s.vec_axis << ' ' << s.parallel << ' ' << s.unroll << ' '
      << s.vector << ' ' << s.use_rfactor << ' ' << s.rfactor_inner << ' ' << s.location << ' ' << s.layout << ' '
      << s.flatten << " ;";
    for (const auto& f : s.spatial) o << ' ' << f[0] << ' ' << f[1] << ' ' << f[2] << ' ' << f[3];
    o << " ;";
    for (const auto& f : s.reduce) o << ' ' << f[0] << ' ' << f[1];
    o << " ;";
    for (int p : s.pack) o << ' ' << p;
    o << '\n';
  }
  return o.str();
}

Expected<Genome> genome_from_text(const SketchPlan& plan, const std::string& text) {
  Genome g;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    size_t si = g.stages.size();
    if (si >= plan.stages.size()) return invalid_argument("genome has more stages than the program");
    const StagePlan& sp = plan.stages[si];
    std::vector<std::string> parts;
    for (size_t pos = 0;;) {
      size_t semi = line.find(';', pos);
      parts.push_back(line.substr(pos, semi == std::string::npos ? std::string::npos : semi - pos));
      if (semi == std::string::npos) break;
      pos = semi + 1;
    }
    if (parts.size() != 4) return invalid_argument("malformed genome line: " + line);
    StageGenes s;
    std::istringstream head(parts[0]);
    int fuse = 0, use_rf = 0, layout = 0;
    head >> fuse >> s.compute_level >> s.vec_axis >> s.parallel >> s.unroll >> s.vector >> use_rf >> s.rfactor_inner >>
        s.location >> layout;
    if (!head) return invalid_argument("malformed genome line: " + line);
    int flatten = 0;  // absent from genomes written before it existed
    if (!(head >> flatten)) flatten = 0;
    s.flatten = flatten != 0;
    s.fuse_consumer = fuse != 0;
    s.layout = layout != 0;
    s.use_rfactor = use_rf != 0;
    std::istringstream sps(parts[1]);
    std::array<int64_t, 4> f4;
    while (sps >> f4[0] >> f4[1] >> f4[2] >> f4[3]) s.spatial.push_back(f4);
    std::istringstream rps(parts[2]);
    std::array<int64_t, 2> f2;
    while (rps >> f2[0] >> f2[1]) s.reduce.push_back(f2);
    std::istringstream pks(parts[3]);
    int p;
    while (pks >> p) s.pack.push_back(p);
    if (sp.rule == StageRule::kTiled &&
        (s.spatial.size() != sp.axes.size() || s.reduce.size() != sp.reduce_axes.size() ||
         s.pack.size() != sp.reads.size() || !tiles_valid(sp, s)))
      return invalid_argument("genome does not fit stage " + sp.name);
    g.stages.push_back(std::move(s));
  }
  if (g.stages.size() != plan.stages.size()) return invalid_argument("genome has fewer stages than the program");
  return g;
}

}  // namespace tensorgym
