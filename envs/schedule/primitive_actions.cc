#include "envs/schedule/primitive_actions.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "codegen/schedule/primitive.h"
#include "envs/schedule/naming.h"

namespace tensorgym {
namespace {

using PA = PrimitiveActions;
constexpr int S = PA::kMaxStages, L = PA::kMaxLoops, F = PA::kFactorChoices, T = PA::kMaxReads, U = PA::kUnrollSteps;
constexpr std::array<int64_t, 6> kFactors = {2, 4, 8, 16, 32, 64};
constexpr std::array<int64_t, 3> kUnroll = {16, 64, 512};
constexpr int64_t kAlignFactor = 16, kAlignOffset = 1;

enum class Kind : uint8_t {
  kSplit, kSwapNext, kFuseNext, kVectorize, kParallel, kUnroll, kAutoUnroll, kCacheRead, kCacheWrite,
  kComputeAt, kComputeInline, kComputeRoot, kRFactor, kStorageAlign,
};

struct ActionBlock {
  Kind kind;
  const char* name;
  int per_stage;  // entries per stage: loops * choices
  int loops;      // loop slots (0 for stage-level actions)
  int choices;    // choices per loop (or per stage when loops == 0)
};

// The layout of the flat space, block after block.
constexpr std::array<ActionBlock, 14> kBlocks = {{
    {Kind::kSplit, "split", L * F, L, F},
    {Kind::kSwapNext, "reorder", L, L, 1},
    {Kind::kFuseNext, "fuse", L, L, 1},
    {Kind::kVectorize, "vectorize", L, L, 1},
    {Kind::kParallel, "parallel", L, L, 1},
    {Kind::kUnroll, "unroll", L, L, 1},
    {Kind::kAutoUnroll, "pragma", L * U, L, U},
    {Kind::kCacheRead, "cache_read", T, 0, T},
    {Kind::kCacheWrite, "cache_write", 1, 0, 1},
    {Kind::kComputeAt, "compute_at", L, L, 1},
    {Kind::kComputeInline, "compute_inline", 1, 0, 1},
    {Kind::kComputeRoot, "compute_root", 1, 0, 1},
    {Kind::kRFactor, "rfactor", L, L, 1},
    {Kind::kStorageAlign, "storage_align", L, L, 1},
}};

struct Decoded {
  const ActionBlock* block;
  int stage, loop, choice;
};

int64_t total_size() {
  int64_t n = 0;
  for (const ActionBlock& b : kBlocks) n += int64_t(S) * b.per_stage;
  return n;
}

bool decode_index(int64_t index, Decoded* d) {
  if (index < 0) return false;
  for (const ActionBlock& b : kBlocks) {
    int64_t n = int64_t(S) * b.per_stage;
    if (index < n) {
      d->block = &b;
      d->stage = int(index / b.per_stage);
      int64_t rest = index % b.per_stage;
      d->loop = b.loops ? int(rest / b.choices) : -1;
      d->choice = int(b.loops ? rest % b.choices : rest);
      return true;
    }
    index -= n;
  }
  return false;
}

int64_t block_offset(Kind k) {
  static const std::array<int64_t, kBlocks.size()> offsets = [] {
    std::array<int64_t, kBlocks.size()> o{};
    int64_t off = 0;
    for (size_t i = 0; i < kBlocks.size(); ++i) {
      o[i] = off;
      off += int64_t(S) * kBlocks[i].per_stage;
    }
    return o;
  }();
  return offsets[size_t(k)];
}

std::vector<int64_t> proper_divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t i = 2; i * i <= n; ++i) {
    if (n % i) continue;
    d.push_back(i);
    if (i != n / i) d.push_back(n / i);
  }
  std::sort(d.begin(), d.end());
  return d;
}

// The split factor of every choice for a loop of `extent` (0 where there is none).
std::array<int64_t, F> split_factors(int64_t extent) {
  std::array<int64_t, F> f{};
  for (size_t c = 0; c < kFactors.size(); ++c) f[c] = kFactors[c] < extent ? kFactors[c] : 0;
  std::vector<int64_t> d = proper_divisors(extent);
  for (size_t q = 1; q <= 3 && !d.empty(); ++q) {  // the 1/4, 1/2, 3/4 quantiles
    size_t i = std::min(d.size() - 1, size_t(std::floor(double(d.size() - 1) * double(q) / 4.0 + 0.5)));
    f[kFactors.size() + q - 1] = d[i];
  }
  return f;
}

bool annotated(const Loop& l) { return l.kind != ForKind::kSerial || !l.thread_tag.empty() || !l.pragmas.empty(); }

bool attached_at(const ScheduleState& state, const StageSchedule& s, const Loop& l) {
  for (const StageSchedule& t : state.stages())
    if (t.attach == AttachKind::kAt && t.attach_stage == s.name() && t.attach_loop == l.name) return true;
  return false;
}

// Whether leaf position p is inside (or is) a vectorized loop of its stage.
bool inside_vectorized(const StageSchedule& s, size_t p) {
  for (size_t q = 0; q <= p; ++q)
    if (s.loops[size_t(s.leaf[q])].kind == ForKind::kVectorized) return true;
  return false;
}

std::string loop_ref(const StageSchedule& s, int loop) { return s.name() + "." + s.loops[size_t(loop)].name; }

// The primitive of a decoded index, or an error when the state has no such stage/loop.
Expected<Primitive> to_primitive(const ScheduleState& state, const Decoded& d) {
  const auto& stages = state.stages();
  if (d.stage >= int(stages.size()))
    return invalid_argument(std::string(d.block->name) + " action names stage " + std::to_string(d.stage) +
                            " but the schedule has " + std::to_string(stages.size()) + " stages");
  const StageSchedule& s = stages[size_t(d.stage)];
  if (d.block->loops && d.loop >= int(s.leaf.size()) && d.block->kind != Kind::kStorageAlign &&
      d.block->kind != Kind::kComputeAt)
    return invalid_argument(std::string(d.block->name) + " action names loop " + std::to_string(d.loop) + " of " +
                            s.name() + ", which has " + std::to_string(s.leaf.size()) + " loops");
  int leaf = d.block->loops && d.loop < int(s.leaf.size()) ? s.leaf[size_t(d.loop)] : -1;
  Primitive p;
  p.name = d.block->name;
  switch (d.block->kind) {
    case Kind::kSplit: {
      const Loop& l = s.loops[size_t(leaf)];
      int64_t f = split_factors(l.extent)[size_t(d.choice)];
      if (!f) return invalid_argument("split choice " + std::to_string(d.choice) + " has no factor for " +
                                      loop_ref(s, leaf) + " (extent " + std::to_string(l.extent) + ")");
      p.args = {loop_ref(s, leaf), std::to_string(f), fresh_loop_name(s, l.name + "_o"), fresh_loop_name(s, l.name + "_i")};
      break;
    }
    case Kind::kSwapNext:
      if (d.loop + 1 >= int(s.leaf.size())) return invalid_argument("loop " + loop_ref(s, leaf) + " has no next loop");
      p.args = {s.name(), s.loops[size_t(s.leaf[size_t(d.loop) + 1])].name, s.loops[size_t(leaf)].name};
      break;
    case Kind::kFuseNext: {
      if (d.loop + 1 >= int(s.leaf.size())) return invalid_argument("loop " + loop_ref(s, leaf) + " has no next loop");
      int next = s.leaf[size_t(d.loop) + 1];
      p.args = {loop_ref(s, leaf), loop_ref(s, next),
                fresh_loop_name(s, s.loops[size_t(leaf)].name + "_" + s.loops[size_t(next)].name)};
      break;
    }
    case Kind::kVectorize:
    case Kind::kParallel:
    case Kind::kUnroll: p.args = {loop_ref(s, leaf)}; break;
    case Kind::kAutoUnroll:
      p.args = {loop_ref(s, leaf), "auto_unroll_max_step", std::to_string(kUnroll[size_t(d.choice)])};
      break;
    case Kind::kCacheRead: {
      // The tensors the stage's current body reads (earlier caches replaced some).
      std::vector<std::string> reads = state.program().reads_of(s.def);
      if (d.choice >= int(reads.size()))
        return invalid_argument("stage " + s.name() + " reads " + std::to_string(reads.size()) + " tensors, not " +
                                std::to_string(d.choice + 1));
      const std::string& t = reads[size_t(d.choice)];
      p.args = {t, s.name(), fresh_tensor_name(state, t + "_" + s.name())};
      break;
    }
    case Kind::kCacheWrite: p.args = {s.name(), fresh_tensor_name(state, s.name() + "_local")}; break;
    case Kind::kComputeAt: {
      std::vector<std::string> readers = state.readers_of(s.name());
      if (readers.empty()) return invalid_argument("stage " + s.name() + " has no reader to be computed at");
      const StageSchedule* r = state.find_stage(readers[0]);
      if (d.loop >= int(r->leaf.size()))
        return invalid_argument("compute_at action names loop " + std::to_string(d.loop) + " of " + r->name() +
                                ", which has " + std::to_string(r->leaf.size()) + " loops");
      p.args = {s.name(), loop_ref(*r, r->leaf[size_t(d.loop)])};
      break;
    }
    case Kind::kComputeInline:
    case Kind::kComputeRoot: p.args = {s.name()}; break;
    case Kind::kRFactor: p.args = {loop_ref(s, leaf), fresh_tensor_name(state, s.name() + "_rf")}; break;
    case Kind::kStorageAlign:
      if (d.loop >= int(s.def->axes.size()))
        return invalid_argument("stage " + s.name() + " has " + std::to_string(s.def->axes.size()) +
                                " dimensions, not " + std::to_string(d.loop + 1));
      p.args = {s.name() + "." + s.def->axes[size_t(d.loop)].name, std::to_string(kAlignFactor),
                std::to_string(kAlignOffset)};
      break;
  }
  return p;
}

}  // namespace

Space PrimitiveActions::space() {
  return Space::discrete("primitives", size())
      .set_description("flat (primitive, stage, loop, choice) index; see docs/schedule_env.md");
}

int64_t PrimitiveActions::size() {
  static const int64_t n = total_size();
  return n;
}

std::string PrimitiveActions::describe(int64_t index) {
  Decoded d;
  if (!decode_index(index, &d)) return "out of range";
  std::string s = std::string(d.block->name) + "(stage " + std::to_string(d.stage);
  if (d.block->loops) s += ", loop " + std::to_string(d.loop);
  if (d.block->choices > 1) s += ", choice " + std::to_string(d.choice);
  return s + ")";
}

Expected<Primitive> PrimitiveActions::decode(const ScheduleState& state, int64_t index) {
  Decoded d;
  if (!decode_index(index, &d))
    return invalid_argument("action " + std::to_string(index) + " is out of range for primitives (Discrete(" +
                            std::to_string(size()) + "))");
  return to_primitive(state, d);
}

std::vector<int64_t> PrimitiveActions::mask(const ScheduleState& state) {
  std::vector<int64_t> m(size_t(size()), 0);
  const auto& stages = state.stages();
  size_t ns = std::min<size_t>(stages.size(), S);
  auto set = [&](Kind k, size_t stage, int per_stage_index) {
    const ActionBlock& b = kBlocks[size_t(k)];  // kBlocks is in Kind order
    m[size_t(block_offset(k) + int64_t(stage) * b.per_stage + per_stage_index)] = 1;
  };
  for (size_t si = 0; si < ns; ++si) {
    const StageSchedule& s = stages[si];
    bool inlined = s.attach == AttachKind::kInline;
    bool has_attached = !state.attached_at(s.name()).empty();
    size_t nl = std::min<size_t>(s.leaf.size(), L);
    for (size_t p = 0; p < nl; ++p) {
      const Loop& l = s.loops[size_t(s.leaf[p])];
      bool here = attached_at(state, s, l);
      bool in_vec = inside_vectorized(s, p);
      if (!annotated(l) && !here) {
        std::array<int64_t, F> factors = split_factors(l.extent);
        for (int c = 0; c < F; ++c)
          if (factors[size_t(c)]) set(Kind::kSplit, si, int(p) * F + c);
      }
      if (p + 1 < s.leaf.size()) {
        const Loop& next = s.loops[size_t(s.leaf[p + 1])];
        bool vec_pair = l.kind == ForKind::kVectorized || next.kind == ForKind::kVectorized;
        if (!vec_pair) set(Kind::kSwapNext, si, int(p));
        if (!annotated(l) && !annotated(next) && l.is_reduce == next.is_reduce && !here &&
            !attached_at(state, s, next) && l.extent * next.extent <= kMaxLoopExtent)
          set(Kind::kFuseNext, si, int(p));
      }
      bool plain = l.kind == ForKind::kSerial && l.thread_tag.empty();
      if (plain && !l.is_reduce && l.extent <= kMaxVectorLanes && l.extent > 1 && !inlined) {
        bool ok = true;
        for (size_t q = p; q < s.leaf.size() && ok; ++q) {
          const Loop& inner = s.loops[size_t(s.leaf[q])];
          ok = !attached_at(state, s, inner) && inner.kind != ForKind::kParallel && inner.kind != ForKind::kVectorized;
        }
        if (ok) set(Kind::kVectorize, si, int(p));
      }
      if (plain && !l.is_reduce && !in_vec && l.extent > 1 && !inlined) set(Kind::kParallel, si, int(p));
      if (plain && l.extent <= kMaxUnrollExtent && l.extent > 1 && !inlined) set(Kind::kUnroll, si, int(p));
      for (int u = 0; u < U; ++u) {
        bool same = false;
        for (const auto& [k, v] : l.pragmas) same |= k == "auto_unroll_max_step" && v == kUnroll[size_t(u)];
        if (!same && !inlined) set(Kind::kAutoUnroll, si, int(p) * U + u);
      }
      if (l.is_reduce && !has_attached && !inlined) set(Kind::kRFactor, si, int(p));
    }
    if (!inlined) {
      std::vector<std::string> reads = state.program().reads_of(s.def);
      for (size_t t = 0; t < reads.size() && t < size_t(T); ++t) {
        const StageSchedule* producer = state.find_stage(reads[t]);
        if (!producer || producer->attach == AttachKind::kRoot) set(Kind::kCacheRead, si, int(t));
      }
      if (!has_attached) set(Kind::kCacheWrite, si, 0);
    }
    if (!s.is_output) {
      std::vector<std::string> readers = state.readers_of(s.name());
      if (!readers.empty()) {
        const StageSchedule* r = state.find_stage(readers[0]);
        if (r && r->attach != AttachKind::kInline) {
          for (size_t p = 0; p < r->leaf.size() && p < size_t(L); ++p) {
            int loop = r->leaf[p];
            bool all_within = true;
            for (const std::string& name : readers) all_within &= state.runs_within(*state.find_stage(name), *r, loop);
            bool same = s.attach == AttachKind::kAt && s.attach_stage == r->name() &&
                        s.attach_loop == r->loops[size_t(loop)].name;
            if (all_within && !same && !inside_vectorized(*r, p)) set(Kind::kComputeAt, si, int(p));
          }
        }
      }
      if (!inlined && !s.def->is_reduction() && !has_attached) set(Kind::kComputeInline, si, 0);
      for (size_t a = 0; a + 1 < s.def->axes.size() && a < size_t(L); ++a) {
        bool same = false;
        for (const StorageAlign& al : s.aligns) same |= al.axis == int(a) && al.factor == kAlignFactor && al.offset == kAlignOffset;
        if (!same && !inlined) set(Kind::kStorageAlign, si, int(a));
      }
    }
    if (s.attach != AttachKind::kRoot) set(Kind::kComputeRoot, si, 0);
  }
  return m;
}

}  // namespace tensorgym
