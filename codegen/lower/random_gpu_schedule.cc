#include "codegen/lower/random_gpu_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "codegen/lower/gpu_shared_tile.h"

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

}  // namespace

Expected<Schedule> random_gpu_schedule(const ProgramPtr& program, const LoweringTarget& target, Rng& rng,
                                       int max_attempts) {
  Status last = failed_precondition("no attempt");
  for (int attempt = 0; attempt < max_attempts; ++attempt) {
    Schedule s(program);
    // An injective producer inlined into its readers half the time.
    for (const StageDef& stage : program->stages)
      if (rng.chance(0.5)) try_apply(s, fmt::format("compute_inline({})", stage.name));
    // Consumers first: a shared-memory tile may inline its producer into its copy.
    std::vector<std::string> stages;
    for (const StageSchedule& st : s.state().stages())
      if (st.attach == AttachKind::kRoot) stages.insert(stages.begin(), st.name());
    bool bindable = true;
    for (const std::string& stage : stages) {
      if (s.state().find_stage(stage)->attach != AttachKind::kRoot) continue;
      // A reduction (a matrix multiplication, a convolution) in shared-memory and
      // register tiles half the time.
      if (gpu_shared_tile_applies(s, stage) && rng.chance(0.5)) {
        Expected<GpuSharedTile> tile = random_gpu_shared_tile(s, stage, rng);
        Schedule tiled = s;
        if (tile.ok() && apply_gpu_shared_tile(tiled, stage, *tile).ok()) {
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
