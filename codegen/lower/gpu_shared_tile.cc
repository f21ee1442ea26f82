#include "codegen/lower/gpu_shared_tile.h"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/schedule/bound_inference.h"
#include "codegen/schedule/naming.h"

namespace tensorgym {
namespace {

// The leaf loops of a stage at the root: spatial and reduction ones (name, extent).
struct StageAxes {
  std::vector<std::string> spatial, reduce;
  std::vector<int64_t> spatial_extents, reduce_extents;
};

StageAxes stage_axes(const Schedule& s, const std::string& stage) {
  StageAxes out;
  const StageSchedule* st = s.state().find_stage(stage);
  if (!st) return out;
  for (int l : st->leaf) {
    const Loop& loop = st->loops[size_t(l)];
    (loop.is_reduce ? out.reduce : out.spatial).push_back(loop.name);
    (loop.is_reduce ? out.reduce_extents : out.spatial_extents).push_back(loop.extent);
  }
  return out;
}

Status step(Schedule& s, const std::string& text) {
  Status st = s.apply_text(text);
  if (!st.ok()) return Status(st.code(), "the GPU shared-memory template: " + text + ": " + st.message());
  return st;
}

std::vector<int64_t> divisors_in(int64_t n, int64_t lo, int64_t hi) {
  std::vector<int64_t> out;
  for (int64_t d = lo; d <= std::min(n, hi); ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

// Each spatial axis's loops after the splits: block, thread, per-thread ("" when the
// level is 1). The innermost thread axis puts its thread loop inside (a warp's lanes
// on neighbouring outputs), the others outside their outputs per thread.
struct AxisLoops {
  std::string block, thread, reg;
};

// Splits axis `name` of `stage` into its thread and per-thread parts: `block` the loop
// to split (the axis itself in the local cache, whose extent is one block's).
Status split_inner(Schedule& s, const std::string& stage, const std::string& name, const std::string& outer,
                   int64_t threads, int64_t regs, bool thread_inside, AxisLoops* out) {
  const std::string t = name + "_t", v = name + "_v";
  if (threads > 1 && regs > 1) {
    TG_RETURN_IF_ERROR(thread_inside
                           ? step(s, fmt::format("split({}.{}, {}, {}, {})", stage, outer, threads, v, t))
                           : step(s, fmt::format("split({}.{}, {}, {}, {})", stage, outer, regs, t, v)));
    out->thread = t, out->reg = v;
  } else if (threads > 1) {
    out->thread = outer;
  } else if (regs > 1) {
    out->reg = outer;
  }
  return Status();
}

}  // namespace

std::vector<std::string> gpu_shared_tile_inputs(const Schedule& s, const std::string& stage) {
  std::vector<std::string> out;
  const StageSchedule* st = s.state().find_stage(stage);
  if (!st) return out;
  for (const std::string& t : s.state().program().reads_of(st->def)) {
    const StageSchedule* producer = s.state().find_stage(t);
    if (!producer || producer->attach != AttachKind::kInline) out.push_back(t);
  }
  return out;
}

std::vector<size_t> gpu_thread_axes(const std::vector<int64_t>& extents) {
  std::vector<size_t> out;
  for (size_t a = extents.size(); a-- > 0 && out.size() < 3;)
    if (extents[a] > 1) out.insert(out.begin(), a);
  return out;
}

bool gpu_shared_tile_applies(const Schedule& s, const std::string& stage) {
  const StageAxes axes = stage_axes(s, stage);
  return !axes.reduce.empty() && !gpu_thread_axes(axes.spatial_extents).empty();
}

Status apply_gpu_shared_tile(Schedule& s, const std::string& stage, const GpuSharedTile& tile) {
  const StageAxes axes = stage_axes(s, stage);
  const size_t n = axes.spatial.size();
  if (tile.spatial.size() != n || tile.reduce.size() != axes.reduce.size())
    return invalid_argument("the GPU tile of stage " + stage + " does not match its axes");
  // Thread tags from the innermost axis with threads outwards.
  static const char* const kThreadTags[] = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};
  std::vector<std::string> tag(n);
  std::vector<int64_t> tag_threads;  // x, y, z
  for (size_t a = n, t = 0; a-- > 0;) {
    if (tile.spatial[a][1] <= 1) continue;
    if (t == 3) return invalid_argument("the GPU tile of stage " + stage + " has threads along more than 3 axes");
    tag[a] = kThreadTags[t++];
    tag_threads.push_back(tile.spatial[a][1]);
  }
  if (tag_threads.empty()) return invalid_argument("the GPU tile of stage " + stage + " has no threads");

  // The stage's own loops: blocks outermost, then threads, then each thread's outputs.
  std::vector<AxisLoops> loops(n);
  for (size_t a = 0; a < n; ++a) {
    const auto& [blocks, threads, regs] = tile.spatial[a];
    if (blocks * threads * regs != axes.spatial_extents[a])
      return invalid_argument(fmt::format("the GPU tile of {}.{} does not cover its extent", stage, axes.spatial[a]));
    const std::string& l = axes.spatial[a];
    loops[a].block = l;
    if (threads * regs == 1) continue;
    const std::string inner = threads > 1 && regs > 1 ? l + "_r" : threads > 1 ? l + "_t" : l + "_v";
    TG_RETURN_IF_ERROR(step(s, fmt::format("split({}.{}, {}, {}_b, {})", stage, l, threads * regs, l, inner)));
    loops[a].block = l + "_b";
    TG_RETURN_IF_ERROR(split_inner(s, stage, l, inner, threads, regs, tag[a] == kThreadTags[0], &loops[a]));
  }
  // Without a local cache the stage accumulates itself: its reduction tiles go between
  // the blocks and the threads.
  const std::string acc = tile.local ? stage + "_local" : stage;
  auto order_of = [&](const std::vector<AxisLoops>& ls, const std::vector<std::string>& outer,
                      const std::vector<std::string>& inner, bool blocks) {
    std::vector<std::string> order;
    if (blocks)
      for (const AxisLoops& l : ls) order.push_back(l.block);
    order.insert(order.end(), outer.begin(), outer.end());
    for (const AxisLoops& l : ls)
      if (!l.thread.empty()) order.push_back(l.thread);
    order.insert(order.end(), inner.begin(), inner.end());
    for (const AxisLoops& l : ls)
      if (!l.reg.empty()) order.push_back(l.reg);
    return order;
  };
  auto reorder = [&](const std::string& st, const std::vector<std::string>& order) {
    std::string text = "reorder(" + st;
    for (const std::string& l : order) text += ", " + l;
    return step(s, text + ")");
  };
  // The reduction axes of the accumulating stage: tiles (outer) and a tile (inner).
  std::vector<std::string> tiles, tile_loops;
  auto split_reduce = [&]() -> Status {
    for (size_t r = 0; r < axes.reduce.size(); ++r) {
      const auto& [count, size] = tile.reduce[r];
      const std::string& k = axes.reduce[r];
      if (count * size != axes.reduce_extents[r])
        return invalid_argument(fmt::format("the GPU tile of {}.{} does not cover its extent", stage, k));
      if (count > 1 && size > 1) {
        TG_RETURN_IF_ERROR(step(s, fmt::format("split({}.{}, {}, {}_o, {}_i)", acc, k, size, k, k)));
        tiles.push_back(k + "_o"), tile_loops.push_back(k + "_i");
      } else {
        (count > 1 ? tiles : tile_loops).push_back(k);
      }
    }
    return Status();
  };
  if (tile.local) {
    TG_RETURN_IF_ERROR(reorder(stage, order_of(loops, {}, {}, true)));
  } else {
    TG_RETURN_IF_ERROR(split_reduce());
    TG_RETURN_IF_ERROR(reorder(stage, order_of(loops, tiles, tile_loops, true)));
  }
  // Blocks: the last axis on blockIdx.x, the one before on .y, the others fused on .z.
  std::string z;
  for (size_t a = 0; a + 2 < n; ++a) {
    if (!z.empty()) {
      const std::string fused = fmt::format("bz{}", a);
      TG_RETURN_IF_ERROR(step(s, fmt::format("fuse({0}.{1}, {0}.{2}, {3})", stage, z, loops[a].block, fused)));
      z = fused;
    } else {
      z = loops[a].block;
    }
  }
  for (size_t a = 0; a + 2 < n; ++a) loops[a].block = z;
  if (!z.empty()) TG_RETURN_IF_ERROR(step(s, fmt::format("bind({}.{}, blockIdx.z)", stage, z)));
  if (n >= 2) TG_RETURN_IF_ERROR(step(s, fmt::format("bind({}.{}, blockIdx.y)", stage, loops[n - 2].block)));
  TG_RETURN_IF_ERROR(step(s, fmt::format("bind({}.{}, blockIdx.x)", stage, loops[n - 1].block)));
  auto bind_threads = [&](const std::string& st, const std::vector<AxisLoops>& ls) -> Status {
    for (size_t a = 0; a < n; ++a) {
      if (!ls[a].thread.empty()) TG_RETURN_IF_ERROR(step(s, fmt::format("bind({}.{}, {})", st, ls[a].thread, tag[a])));
      if (!ls[a].reg.empty()) TG_RETURN_IF_ERROR(step(s, fmt::format("unroll({}.{})", st, ls[a].reg)));
    }
    return Status();
  };
  TG_RETURN_IF_ERROR(bind_threads(stage, loops));

  if (tile.local) {
    // The accumulators: each thread's outputs, across every reduction tile.
    TG_RETURN_IF_ERROR(step(s, fmt::format("cache_write({}, {}, local)", stage, acc)));
    // At the innermost block loop of more than one block (a loop of one is no loop).
    size_t at = n;
    for (size_t a = 0; a < n; ++a)
      if (tile.spatial[a][0] > 1) at = a;
    if (at == n) return invalid_argument("the GPU tile of stage " + stage + " has a single block");
    TG_RETURN_IF_ERROR(step(s, fmt::format("compute_at({}, {}.{})", acc, stage, loops[at].block)));
    std::vector<AxisLoops> local(n);
    for (size_t a = 0; a < n; ++a)
      TG_RETURN_IF_ERROR(split_inner(s, acc, axes.spatial[a], axes.spatial[a], tile.spatial[a][1], tile.spatial[a][2],
                                     tag[a] == kThreadTags[0], &local[a]));
    TG_RETURN_IF_ERROR(split_reduce());
    // Its axes of one output per block (extent 1) lead.
    std::vector<std::string> order;
    for (size_t a = 0; a < n; ++a)
      if (tile.spatial[a][1] * tile.spatial[a][2] == 1) order.push_back(axes.spatial[a]);
    for (const std::string& l : order_of(local, tiles, tile_loops, false)) order.push_back(l);
    TG_RETURN_IF_ERROR(reorder(acc, order));
    TG_RETURN_IF_ERROR(bind_threads(acc, local));
  }
  if (tile.unroll_reduce)
    for (const std::string& k : tile_loops) TG_RETURN_IF_ERROR(step(s, fmt::format("unroll({}.{})", acc, k)));

  // Each input cached in shared memory at the innermost tile loop, its axes fused and
  // spread over the block's threads (z, y, x), VECTOR lanes a thread.
  const std::vector<std::string> inputs = gpu_shared_tile_inputs(s, acc);
  if (tile.shared.size() != inputs.size())
    return invalid_argument("the GPU tile of stage " + stage + " does not match its inputs");
  int64_t threads = 1;
  for (int64_t t : tag_threads) threads *= t;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!tile.shared[i]) continue;
    if (tiles.empty()) return invalid_argument("the GPU tile of stage " + stage + " has no reduction tile loop");
    const std::string cache = fresh_tensor_name(s.state(), inputs[i] + "_shared");
    TG_RETURN_IF_ERROR(step(s, fmt::format("cache_read({}, {}, {}, shared)", inputs[i], acc, cache)));
    TG_RETURN_IF_ERROR(step(s, fmt::format("compute_at({}, {}.{})", cache, acc, tiles.back())));
    // An injective producer (a convolution's padding) computed in the copy (TVM's GPU
    // convolutions): refused for one that reduces, which stays where it is.
    if (s.state().find_stage(inputs[i])) (void)s.apply_text(fmt::format("compute_inline({})", inputs[i]));
    const StageSchedule* c = s.state().find_stage(cache);
    const size_t rank = c ? c->def->axes.size() : 0;
    std::string fused = "ax0";
    for (size_t a = 1; a < rank; ++a) {
      const std::string next = "f" + std::to_string(a);
      TG_RETURN_IF_ERROR(step(s, fmt::format("fuse({0}.{1}, {0}.ax{2}, {3})", cache, fused, a, next)));
      fused = next;
    }
    // Every thread stores into the tile (the launch's thread dimensions all index it),
    // so it needs at least an element a thread; vectors only where it holds them.
    TG_ASSIGN_OR_RETURN(ScheduleBounds bounds, infer_bounds(s.state()));
    int64_t elements = 1;
    for (int64_t e : bounds.regions.at(cache).extent) elements *= e;
    if (elements < threads)
      return invalid_argument(fmt::format("the shared tile {} of stage {} has {} elements for {} threads", cache,
                                          stage, elements, threads));
    const int64_t vector = elements >= threads * tile.vector ? tile.vector : 1;
    TG_RETURN_IF_ERROR(step(s, fmt::format("split({}.{}, {}, o, t)", cache, fused, threads * vector)));
    std::string cur = "t";
    if (vector > 1) {
      TG_RETURN_IF_ERROR(step(s, fmt::format("split({}.t, {}, tt, vec)", cache, vector)));
      TG_RETURN_IF_ERROR(step(s, fmt::format("vectorize({}.vec)", cache)));
      cur = "tt";
    }
    // Peel the thread dimensions from the outermost (z) in.
    int64_t rest = threads;
    for (size_t d = tag_threads.size(); d-- > 0;) {
      const std::string name = fmt::format("t{}", "xyz"[d]);
      if (d > 0) {
        rest /= tag_threads[d];
        TG_RETURN_IF_ERROR(step(s, fmt::format("split({}.{}, {}, {}, r{})", cache, cur, rest, name, d)));
        cur = fmt::format("r{}", d);
        TG_RETURN_IF_ERROR(step(s, fmt::format("bind({}.{}, {})", cache, name, kThreadTags[d])));
      } else {
        TG_RETURN_IF_ERROR(step(s, fmt::format("bind({}.{}, {})", cache, cur, kThreadTags[0])));
      }
    }
  }
  return Status();
}

namespace {

GpuSharedTile draw_tile(const Schedule& s, const std::string& stage, Rng& rng) {
  const StageAxes axes = stage_axes(s, stage);
  const std::vector<size_t> thread_axes = gpu_thread_axes(axes.spatial_extents);
  GpuSharedTile tile;
  const size_t n = axes.spatial.size();
  // Threads: x on the innermost thread axis, then y and z, within 1024 a block; a few
  // draws for at least a warp where the extents allow.
  std::vector<int64_t> threads(n, 1);
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::fill(threads.begin(), threads.end(), 1);
    int64_t total = 1;
    for (size_t i = thread_axes.size(); i-- > 0;) {
      const size_t a = thread_axes[i];
      const int64_t cap = i + 1 == thread_axes.size() ? 16 : i + 2 == thread_axes.size() ? 16 : 4;
      const std::vector<int64_t> fit = divisors_in(axes.spatial_extents[a], 1, std::min(cap, 1024 / total));
      threads[a] = rng.pick(fit);
      total *= threads[a];
    }
    if (total >= 32) break;
  }
  // Outputs per thread: 1 to 8 along each thread axis, at most 64 a thread.
  int64_t per_thread = 1;
  for (size_t a = 0; a < n; ++a) {
    const int64_t rest = axes.spatial_extents[a] / threads[a];
    const bool thread_axis = std::find(thread_axes.begin(), thread_axes.end(), a) != thread_axes.end();
    std::vector<int64_t> fit;
    for (int64_t r : {1, 2, 4, 8})
      if (rest % r == 0 && per_thread * r <= 64 && (thread_axis || r == 1)) fit.push_back(r);
    const int64_t regs = rng.pick(fit);
    per_thread *= regs;
    tile.spatial.push_back({rest / regs, threads[a], regs});
  }
  // Reduction tiles of up to 16; the first axis of several iterations in more than one.
  bool tiled = false;
  for (int64_t e : axes.reduce_extents) {
    std::vector<int64_t> fit = divisors_in(e, 1, std::min<int64_t>(16, tiled || e == 1 ? e : e - 1));
    // The larger of two draws: a tile of the inputs for every thread.
    const int64_t size = fit.empty() ? 1 : std::max(rng.pick(fit), rng.pick(fit));
    tiled = tiled || e / size > 1;
    tile.reduce.push_back({e / size, size});
  }
  tile.shared.assign(gpu_shared_tile_inputs(s, stage).size(), true);
  tile.vector = std::array<int64_t, 3>{1, 2, 4}[rng.below(3)];
  tile.unroll_reduce = rng.chance(0.75);
  return tile;
}

}  // namespace

Expected<GpuSharedTile> random_gpu_shared_tile(const Schedule& s, const std::string& stage, Rng& rng) {
  if (!gpu_shared_tile_applies(s, stage))
    return failed_precondition("the GPU shared-memory template needs a reduction with a spatial axis: " + stage);
  // Drawn again while the template refuses it; an input whose tile has fewer elements
  // than the block has threads (a depthwise convolution's weights) is read from
  // global memory instead.
  Status last;
  for (int attempt = 0; attempt < 32; ++attempt) {
    GpuSharedTile tile = draw_tile(s, stage, rng);
    for (size_t off = tile.shared.size() + 1; off-- > 0;) {
      if (off < tile.shared.size()) tile.shared[off] = false;
      Schedule copy = s;
      last = apply_gpu_shared_tile(copy, stage, tile);
      if (last.ok()) return tile;
    }
  }
  return last;
}

}  // namespace tensorgym
