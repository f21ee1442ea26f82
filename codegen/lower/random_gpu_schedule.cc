#include "codegen/lower/random_gpu_schedule.h"

#include <fmt/format.h>

#include <initializer_list>
#include <algorithm>
#include <string>
#include <vector>

#include "codegen/schedule/naming.h"

namespace tensorgym {
namespace {

// Applies `text` (one primitive) when it applies; a refused draw is skipped.
bool try_apply(Schedule& s, const std::string& text) {
  Schedule copy = s;
  if (!copy.apply_text(text).ok()) return false;
  s = std::move(copy);
  return true;
}

// A power of two in [lo, min(hi, extent)], the middle ones likelier; 1 when extent is 1.
int64_t pick_width(Rng& rng, int64_t lo, int64_t hi, int64_t extent) {
  std::vector<int64_t> widths;
  for (int64_t w = lo; w <= hi && w <= std::max<int64_t>(extent, lo); w *= 2) widths.push_back(w);
  if (widths.empty() || extent <= 1) return 1;
  // Two draws, the smaller index kept half the time: a bias towards the widths in the middle.
  const size_t a = size_t(rng.below(widths.size())), b = size_t(rng.below(widths.size()));
  return widths[rng.chance(0.5) ? std::min(a, b) : std::max(a, b)];
}

// The leaf loops of stage `stage`, outermost first.
std::vector<std::string> leaf_names(const Schedule& s, const std::string& stage) {
  std::vector<std::string> names;
  for (const StageSchedule& st : s.state().stages()) {
    if (st.name() != stage) continue;
    for (int l : st.leaf) names.push_back(st.loops[size_t(l)].name);
  }
  return names;
}

// One stage's tiling over blocks and threads. Returns false when the stage has no
// spatial loop to bind (it cannot run on more than one thread).
bool tile_stage(Schedule& s, const std::string& stage, Rng& rng) {
  std::vector<std::string> spatial;
  std::vector<int64_t> extents;
  for (const StageSchedule& st : s.state().stages()) {
    if (st.name() != stage) continue;
    for (int l : st.leaf) {
      const Loop& loop = st.loops[size_t(l)];
      if (!loop.is_reduce && loop.extent > 1) {
        spatial.push_back(loop.name);
        extents.push_back(loop.extent);
      }
    }
  }
  if (spatial.empty()) return false;
  // threadIdx.x: the innermost spatial loop (contiguous outputs) eight times in ten.
  const size_t x = rng.chance(0.8) ? spatial.size() - 1 : size_t(rng.below(spatial.size()));
  const int64_t tx = pick_width(rng, 8, 512, extents[x]);
  std::vector<std::string> blocks, threads;
  auto tile = [&](size_t i, int64_t width, const char* block_tag, const char* thread_tag) {
    const std::string& l = spatial[i];
    if (width > 1 && try_apply(s, fmt::format("split({}.{}, {}, {}_b, {}_t)", stage, l, width, l, l))) {
      blocks.push_back(fmt::format("bind({}.{}_b, {})", stage, l, block_tag));
      threads.push_back(fmt::format("bind({}.{}_t, {})", stage, l, thread_tag));
      return std::make_pair(l + "_b", l + "_t");
    }
    blocks.push_back(fmt::format("bind({}.{}, {})", stage, l, block_tag));
    return std::make_pair(l, std::string());
  };
  auto [xb, xt] = tile(x, tx, "blockIdx.x", "threadIdx.x");
  std::vector<std::string> order_blocks = {xb}, order_threads;
  if (!xt.empty()) order_threads.push_back(xt);
  // threadIdx.y on another spatial loop six times in ten, within 1024 threads a block.
  std::vector<size_t> others;
  for (size_t i = 0; i < spatial.size(); ++i)
    if (i != x) others.push_back(i);
  if (!others.empty() && rng.chance(0.6)) {
    const size_t y = others[size_t(rng.below(others.size()))];
    others.erase(std::find(others.begin(), others.end(), y));
    const int64_t ty = pick_width(rng, 1, std::max<int64_t>(1, 1024 / std::max<int64_t>(tx, 1)), extents[y]);
    auto [yb, yt] = tile(y, ty, "blockIdx.y", "threadIdx.y");
    order_blocks.insert(order_blocks.begin(), yb);
    if (!yt.empty()) order_threads.insert(order_threads.begin(), yt);
  }
  // blockIdx.z on a third loop half the time (its extent within CUDA's 65535).
  if (!others.empty() && rng.chance(0.5)) {
    const size_t z = others[size_t(rng.below(others.size()))];
    if (extents[z] <= 65535) {
      blocks.push_back(fmt::format("bind({}.{}, blockIdx.z)", stage, spatial[z]));
      order_blocks.insert(order_blocks.begin(), spatial[z]);
    }
  }
  // Blocks outermost, then threads, then every other loop in its order.
  std::vector<std::string> order = order_blocks;
  order.insert(order.end(), order_threads.begin(), order_threads.end());
  for (const std::string& l : leaf_names(s, stage))
    if (std::find(order.begin(), order.end(), l) == order.end()) order.push_back(l);
  std::string reorder = "reorder(" + stage;
  for (const std::string& l : order) reorder += ", " + l;
  try_apply(s, reorder + ")");
  for (const std::string& b : blocks) try_apply(s, b);
  for (const std::string& t : threads) try_apply(s, t);
  // Inside a thread: now and then the innermost reduction split, its inner part unrolled.
  for (const StageSchedule& st : s.state().stages()) {
    if (st.name() != stage || !rng.chance(0.4)) continue;
    for (auto it = st.leaf.rbegin(); it != st.leaf.rend(); ++it) {
      const Loop& loop = st.loops[size_t(*it)];
      if (!loop.is_reduce || loop.extent < 4) continue;
      const int64_t f = pick_width(rng, 2, 8, loop.extent);
      const std::string name = loop.name;
      if (try_apply(s, fmt::format("split({}.{}, {}, {}_o, {}_u)", stage, name, f, name, name)))
        try_apply(s, fmt::format("unroll({}.{}_u)", stage, name));
      break;
    }
    break;
  }
  return true;
}

// The loops of a stage: spatial ones (name, extent) in order, and reduction ones.
struct StageLoops {
  std::vector<std::pair<std::string, int64_t>> spatial, reduce;
};
StageLoops stage_loops(const Schedule& s, const std::string& stage) {
  StageLoops out;
  for (const StageSchedule& st : s.state().stages()) {
    if (st.name() != stage) continue;
    for (int l : st.leaf) {
      const Loop& loop = st.loops[size_t(l)];
      (loop.is_reduce ? out.reduce : out.spatial).push_back({loop.name, loop.extent});
    }
  }
  return out;
}

// One of `choices` that divides `extent`, at random; 0 when none does.
int64_t pick_divisor(Rng& rng, std::initializer_list<int64_t> choices, int64_t extent) {
  std::vector<int64_t> fit;
  for (int64_t c : choices)
    if (c <= extent && extent % c == 0) fit.push_back(c);
  return fit.empty() ? 0 : fit[size_t(rng.below(fit.size()))];
}

// The register-tiled, shared-memory form of a reduction over one axis with two inner
// spatial axes (a matrix multiplication, batched or not): blocks of BI x BJ outputs,
// TY x TX threads of YI x XI outputs each in registers (a local cache computed at the
// block loop), k in tiles of KT whose inputs the block's threads load into shared
// memory together (docs/gpu.md, datasets/ops/gemm_1024.cuda.sched). Tile sizes are
// drawn among those that divide the extents. False when the stage has another shape or
// no sizes fit; `s` may then be half-scheduled (the caller keeps a copy).
bool shared_tile_stage(Schedule& s, const std::string& stage, Rng& rng) {
  const StageLoops loops = stage_loops(s, stage);
  if (loops.reduce.size() != 1 || loops.spatial.size() < 2 || loops.spatial.size() > 3) return false;
  const auto& [i, ei] = loops.spatial[loops.spatial.size() - 2];
  const auto& [j, ej] = loops.spatial.back();
  const auto& [k, ek] = loops.reduce[0];
  // 64 to 512 threads a block.
  const int64_t tx = pick_divisor(rng, {8, 16, 32}, ej);
  if (!tx) return false;
  const int64_t ty = tx == 8 ? pick_divisor(rng, {8, 16}, ei) : pick_divisor(rng, {4, 8, 16}, ei);
  if (!ty) return false;
  const int64_t xi = pick_divisor(rng, {1, 2, 4}, ej / tx), yi = pick_divisor(rng, {1, 2, 4, 8}, ei / ty);
  const int64_t kt = pick_divisor(rng, {4, 8, 16}, ek);
  if (!xi || !yi || !kt) return false;
  const std::string cache = stage + "_reg";
  std::vector<std::string> steps = {
      fmt::format("split({}.{}, {}, {}_b, {}_r)", stage, i, ty * yi, i, i),
      fmt::format("split({}.{}_r, {}, {}_t, {}_v)", stage, i, yi, i, i),
      fmt::format("split({}.{}, {}, {}_b, {}_r)", stage, j, tx * xi, j, j),
      fmt::format("split({}.{}_r, {}, {}_v, {}_t)", stage, j, tx, j, j),
  };
  std::string order = "reorder(" + stage;
  if (loops.spatial.size() == 3) order += ", " + loops.spatial[0].first;
  order += fmt::format(", {0}_b, {1}_b, {0}_t, {1}_t, {0}_v, {1}_v)", i, j);
  steps.push_back(order);
  if (loops.spatial.size() == 3) steps.push_back(fmt::format("bind({}.{}, blockIdx.z)", stage, loops.spatial[0].first));
  for (const std::string& t :
       {fmt::format("bind({}.{}_b, blockIdx.y)", stage, i), fmt::format("bind({}.{}_b, blockIdx.x)", stage, j),
        fmt::format("bind({}.{}_t, threadIdx.y)", stage, i), fmt::format("bind({}.{}_t, threadIdx.x)", stage, j),
        fmt::format("unroll({}.{}_v)", stage, i), fmt::format("unroll({}.{}_v)", stage, j),
        // The accumulators: each thread's YI x XI, across every k tile.
        fmt::format("cache_write({}, {}, local)", stage, cache),
        fmt::format("compute_at({}, {}.{}_b)", cache, stage, j),
        fmt::format("split({}.{}, {}, {}_t, {}_v)", cache, i, yi, i, i),
        fmt::format("split({}.{}, {}, {}_v, {}_t)", cache, j, tx, j, j),
        fmt::format("split({}.{}, {}, {}_o, {}_i)", cache, k, kt, k, k),
        fmt::format("reorder({0}, {1}_o, {2}_t, {3}_t, {1}_i, {2}_v, {3}_v)", cache, k, i, j),
        fmt::format("bind({}.{}_t, threadIdx.y)", cache, i), fmt::format("bind({}.{}_t, threadIdx.x)", cache, j),
        fmt::format("unroll({}.{}_i)", cache, k), fmt::format("unroll({}.{}_v)", cache, i),
        fmt::format("unroll({}.{}_v)", cache, j)})
    steps.push_back(t);
  for (const std::string& t : steps)
    if (!try_apply(s, t)) return false;
  // Each input's tile in shared memory, loaded by all TY x TX threads: its axes fused,
  // then split over them.
  // (Copies: applying a primitive replaces the state the stages live in.)
  const StageSchedule* reg = s.state().find_stage(cache);
  if (!reg) return false;
  const std::vector<std::string> inputs = s.state().program().reads_of(reg->def);
  for (const std::string& input : inputs) {
    const std::string tile = fresh_tensor_name(s.state(), input + "_shared");
    if (!try_apply(s, fmt::format("cache_read({}, {}, {}, shared)", input, cache, tile)) ||
        !try_apply(s, fmt::format("compute_at({}, {}.{}_o)", tile, cache, k)))
      return false;
    std::string fused = "ax0";
    const StageSchedule* t = s.state().find_stage(tile);
    const size_t axes = t ? t->def->axes.size() : 0;
    for (size_t a = 1; a < axes; ++a) {
      const std::string next = "f" + std::to_string(a);
      if (!try_apply(s, fmt::format("fuse({0}.{1}, {0}.ax{2}, {3})", tile, fused, a, next))) return false;
      fused = next;
    }
    for (const std::string& step : {fmt::format("split({}.{}, {}, o, t)", tile, fused, tx * ty),
                                    fmt::format("split({}.t, {}, ty, tx)", tile, tx),
                                    fmt::format("bind({}.ty, threadIdx.y)", tile),
                                    fmt::format("bind({}.tx, threadIdx.x)", tile)})
      if (!try_apply(s, step)) return false;
  }
  return true;
}

}  // namespace

Expected<Schedule> random_gpu_schedule(const ProgramPtr& program, const LoweringTarget& target, Rng& rng,
                                       int max_attempts) {
  Status last = failed_precondition("no attempt");
  for (int attempt = 0; attempt < max_attempts; ++attempt) {
    Schedule s(program);
    // An injective producer inlined into its readers half the time.
    for (const StageDef& stage : program->stages)
      if (rng.chance(0.5)) try_apply(s, fmt::format("compute_inline({})", stage.name));
    std::vector<std::string> stages;
    for (const StageSchedule& st : s.state().stages())
      if (st.attach == AttachKind::kRoot) stages.push_back(st.name());
    bool bindable = true;
    for (const std::string& stage : stages) {
      // A matrix multiplication in shared-memory and register tiles half the time.
      if (rng.chance(0.5)) {
        Schedule tiled = s;
        if (shared_tile_stage(tiled, stage, rng)) {
          s = std::move(tiled);
          continue;
        }
      }
      bindable = tile_stage(s, stage, rng) && bindable;
    }
    Expected<LoopNest> lowered = lower(s, target);
    if (lowered.ok()) return s;
    last = lowered.status();
    if (!bindable) break;  // the same stage cannot be bound on any draw
  }
  return failed_precondition("no random GPU schedule of this program lowers for " + target.name + ": " +
                             last.message());
}

}  // namespace tensorgym
