#include "codegen/fpga/schedule_tiling.h"

#include <fmt/format.h>

#include "codegen/schedule/loop_marks.h"

namespace tensorgym::fpga {
namespace {

// The root loop a loop derives from through splits; -1 through a fuse.
int root_of(const StageSchedule& s, int loop) {
  while (loop >= s.num_root_loops()) {
    int parent = -1;
    for (const LoopRelation& r : s.relations)
      if (r.kind == LoopRelation::kSplit && (r.outer == loop || r.inner == loop)) parent = r.parent;
    if (parent < 0) return -1;
    loop = parent;
  }
  return loop;
}

std::string loop_text(const StageSchedule& s, int loop) { return s.name() + "." + s.loops[size_t(loop)].name; }

Status refuse(const std::string& why) { return failed_precondition("the fpga target cannot compile it: " + why); }

// A stage in `scope` computed at `consumer`'s loop `loop`; null when none.
const StageSchedule* computed_at(const ScheduleState& state, const StageSchedule& consumer, int loop,
                                 MemoryScope scope) {
  for (const StageSchedule& s : state.stages())
    if (s.attach == AttachKind::kAt && s.attach_stage == consumer.name() &&
        s.attach_loop == consumer.loops[size_t(loop)].name && s.scope == scope)
      return &s;
  return nullptr;
}

Status check_transfer(const StageSchedule* s, const char* what, MemoryScope scope, const std::string& at) {
  if (s == nullptr)
    return refuse(fmt::format("no {} stage in {} is computed at {}: the {} is loaded once per chunk of input "
                              "channels (set_scope or cache_read ..., {}; compute_at at that loop)",
                              what, memory_scope_name(scope), at, what, memory_scope_name(scope)));
  if (s->leaf.empty() || !is_dma_copy(s->loops[size_t(s->leaf.front())]))
    return refuse(fmt::format("stage {} ({}) is not one DMA transfer: pragma({}, dma_copy) on its outermost loop", s->name(),
                              what, s->leaf.empty() ? s->name() : loop_text(*s, s->leaf.front())));
  return Status();
}

}  // namespace

Expected<Conv2dTiling> read_tiling(const ScheduleState& state, const AccelConfig& config) {
  // The tensorized convolution.
  const StageSchedule* conv = nullptr;
  int core = -1;
  for (const StageSchedule& s : state.stages())
    for (size_t p = 0; p < s.leaf.size(); ++p)
      if (is_tensorized(s.loops[size_t(s.leaf[p])])) conv = &s, core = int(p);
  if (conv == nullptr) return refuse("no stage is tensorized: tensorize(C.b, gemm) maps the convolution onto the core");
  const StageSchedule& c = *conv;
  if (c.def->axes.size() != 6 || c.def->reduce_axes.size() != 4)
    return refuse(fmt::format("stage {} is not a blocked convolution (6 spatial axes n, k, y, x, b, o and 4 "
                              "reduced c, r, s, i)",
                              c.name()));
  // The core's loops are the whole batch, output and input channel blocks.
  const int core_roots[3] = {4, 5, int(c.def->axes.size()) + 3};
  const int64_t core_extents[3] = {config.batch, config.block_out, config.block_in};
  for (int q = 0; q < 3; ++q) {
    const int loop = c.leaf[size_t(core + q)];
    if (loop != core_roots[q] || c.loops[size_t(loop)].extent != core_extents[q])
      return refuse(fmt::format("the GEMM core's loops must be {}'s whole b, o and i axes with extents {}, {} and {} "
                                "(the design's BATCH, BLOCK_OUT, BLOCK_IN); loop {} is not",
                                c.name(), config.batch, config.block_out, config.block_in, loop_text(c, loop)));
  }
  if (c.scope != MemoryScope::kAccBuffer)
    return refuse(fmt::format("stage {} accumulates on chip: set_scope({}, acc_buffer)", c.name(), c.name()));
  if (c.attach != AttachKind::kAt)
    return refuse(fmt::format("stage {} is computed per output tile: compute_at({}, Y.<innermost tile loop>)",
                              c.name(), c.name()));
  const StageSchedule* out = state.find_stage(c.attach_stage);
  if (out == nullptr || !out->is_output || out->def->axes.size() != 6)
    return refuse(fmt::format("stage {} is computed at {}, which is not the blocked output stage", c.name(),
                              c.attach_stage));
  const StageSchedule& y = *out;

  // The output's tile loops (outside the attach loop, in the order n, k, y, x) and the
  // tile inside.
  const int attach = y.find_loop(c.attach_loop);
  const int attach_pos = y.leaf_position(attach);
  Conv2dTiling t;
  t.virtual_threads = 1;
  int64_t inside[6] = {1, 1, 1, 1, 1, 1};
  int last_axis = -1;
  for (size_t p = 0; p < y.leaf.size(); ++p) {
    const int loop = y.leaf[p];
    const Loop& l = y.loops[size_t(loop)];
    const int axis = root_of(y, loop);
    if (axis < 0) return refuse(fmt::format("loop {} is fused; the fpga target tiles with splits", loop_text(y, loop)));
    if (int(p) > attach_pos) {
      inside[axis] *= l.extent;
      if (l.kind != ForKind::kSerial || !l.thread_tag.empty() || !l.pragmas.empty())
        return refuse(fmt::format("loop {} inside the tile is annotated; the tile's epilogue and stores are the "
                                  "target's own",
                                  loop_text(y, loop)));
      continue;
    }
    if (l.thread_tag == "vthread") {
      if (l.extent > 2)
        return refuse(fmt::format("loop {} makes {} virtual threads; the design interleaves 1 or 2", loop_text(y, loop),
                                  l.extent));
      t.virtual_threads = int(l.extent);
    } else if (!l.thread_tag.empty() || l.kind != ForKind::kSerial || !l.pragmas.empty()) {
      return refuse(fmt::format("tile loop {} is annotated ({}); only vthread applies on the accelerator",
                                loop_text(y, loop), l.thread_tag.empty() ? for_kind_name(l.kind) : l.thread_tag));
    }
    if (l.extent > 1 && axis < last_axis)
      return refuse(fmt::format("tile loop {} comes after a loop of a later axis; the target walks tiles in the "
                                "order n, k, y, x",
                                loop_text(y, loop)));
    if (l.extent > 1) last_axis = std::max(last_axis, axis);
  }
  if (inside[0] != 1 || inside[4] != config.batch || inside[5] != config.block_out)
    return refuse(fmt::format("the tile must hold one batch block and whole b and o axes ({}, {}); it holds {}, {} "
                              "and {}",
                              config.batch, config.block_out, inside[0], inside[4], inside[5]));
  t.tile_k = inside[1];
  t.tile_h = inside[2];
  t.tile_w = inside[3];

  // The convolution: the loads computed at one loop of it, outside which only chunks
  // of input channel blocks (c) iterate.
  const int reduce_c = int(c.def->axes.size());  // c, the first reduction axis
  int chunk_pos = -1;
  t.tile_c = 1;
  for (size_t p = 0; p < c.leaf.size(); ++p)
    if (chunk_pos < 0 && computed_at(state, c, c.leaf[p], MemoryScope::kWgtBuffer) != nullptr) chunk_pos = int(p);
  if (chunk_pos < 0 || chunk_pos >= core)
    return refuse(fmt::format("no wgt_buffer stage is computed at a loop of {} outside its GEMM core: cache_read the "
                              "weights into wgt_buffer and compute_at them at the loop of {}'s input channel chunks",
                              c.name(), c.name()));
  for (size_t p = 0; p < c.leaf.size(); ++p) {
    const int loop = c.leaf[p];
    const int axis = root_of(c, loop);
    const Loop& l = c.loops[size_t(loop)];
    if (axis < 0) return refuse(fmt::format("loop {} is fused", loop_text(c, loop)));
    if (int(p) <= chunk_pos) {
      if (axis != reduce_c && l.extent > 1)
        return refuse(fmt::format("loop {} is outside the channel chunk loop {}; the chunk loop is {}'s outermost",
                                  loop_text(c, loop), loop_text(c, c.leaf[size_t(chunk_pos)]), c.name()));
    } else if (axis == reduce_c) {
      t.tile_c *= l.extent;
    }
    if (int(p) < core && (!l.thread_tag.empty() || l.kind != ForKind::kSerial))
      return refuse(fmt::format("loop {} is annotated; the GEMM instruction's loops are plain", loop_text(c, loop)));
  }
  const int chunk = c.leaf[size_t(chunk_pos)];
  const std::string at = loop_text(c, chunk);
  TG_RETURN_IF_ERROR(check_transfer(computed_at(state, c, chunk, MemoryScope::kInpBuffer), "input window",
                                    MemoryScope::kInpBuffer, at));
  TG_RETURN_IF_ERROR(
      check_transfer(computed_at(state, c, chunk, MemoryScope::kWgtBuffer), "weights", MemoryScope::kWgtBuffer, at));
  return t;
}

Expected<std::string> schedule_text(const AccelConfig& config, const Conv2dLayer& layer, const Conv2dTiling& t) {
  TG_RETURN_IF_ERROR(check_tiling(config, layer, t));
  const int64_t tiles[3] = {layer.k / config.block_out / t.tile_k, layer.oh() / t.tile_h, layer.ow() / t.tile_w};
  const char* const axes[3] = {"k", "y", "x"};
  std::string text = fmt::format("split(Y.k, {}, ko, ki); split(Y.y, {}, yo, yi); split(Y.x, {}, xo, xi)\n",
                                 t.tile_k, t.tile_h, t.tile_w);
  std::string outer = "n";
  std::string vthread;
  for (int a = 0; a < 3; ++a) {
    if (t.virtual_threads == 2 && vthread.empty() && tiles[a] % 2 == 0) {
      text += fmt::format("split(Y.{}o, {}, {}v, {}t)\n", axes[a], tiles[a] / 2, axes[a], axes[a]);
      outer += fmt::format(", {}v, {}t", axes[a], axes[a]);
      vthread = fmt::format("bind(Y.{}v, vthread)\n", axes[a]);
    } else {
      outer += fmt::format(", {}o", axes[a]);
    }
  }
  if (t.virtual_threads == 2 && vthread.empty())
    return invalid_argument(fmt::format("tiling {}: no tile axis has an even number of tiles to split between two "
                                        "virtual threads",
                                        to_string(t)));
  const std::string last = outer.substr(outer.rfind(' ') + 1);
  text += fmt::format("reorder(Y, {}, ki, yi, xi, b, o)\n", outer) + vthread;
  text += fmt::format("set_scope(C, acc_buffer); compute_at(C, Y.{})\n", last);
  text += fmt::format("split(C.c, {}, co, ci); reorder(C, co, n, k, y, x, ci, r, s, b, o, i)\n", t.tile_c);
  text += layer.pad > 0 ? "set_scope(P, inp_buffer); compute_at(P, C.co); pragma(P.n, dma_copy)\n"
                        : "cache_read(X, C, XL, inp_buffer); compute_at(XL, C.co); pragma(XL.ax0, dma_copy)\n";
  text += "cache_read(W, C, WL, wgt_buffer); compute_at(WL, C.co); pragma(WL.ax0, dma_copy)\n";
  text += "tensorize(C.b, gemm)\n";
  return text;
}

}  // namespace tensorgym::fpga
