// Operator splitting in channel tiles (memplan/op_split.h): each tile runs every
// operator of the region on its own range of channels, so nothing is computed twice;
// weights and tensors from outside are read through windows (op_input_windows), not
// copied. A region that ends in a reduction over the channels (the projection of an
// inverted residual block, a transformer's second feed-forward matmul) adds each
// tile's partial sums into its output.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "memplan/op_split.h"
#include "memplan/op_stages.h"

namespace tensorgym {
namespace {

enum class Role {
  kProducer,     // computes its channels from a tensor from outside, read whole
  kChannelwise,  // channel c of its output reads channel c of its inputs
  kReducer,      // sums over the channels of its input (the region's last operator only)
};

// How an operator of the region reads input k in a tile.
enum class Read { kTile, kWindow, kWhole };

struct OpPlan {
  Role role = Role::kChannelwise;
  std::vector<Read> reads;
  std::vector<int64_t> axis;  // per input: the windowed axis (kWindow)
  int64_t out_axis = -1;      // the output's channel axis (-1 for a reducer)
};

bool unary_type(const std::string& t) {
  return t == "relu" || t == "relu6" || t == "gelu" || t == "sigmoid" || t == "tanh" || t == "scale";
}
bool binary_type(const std::string& t) { return t == "add" || t == "sub" || t == "mul" || t == "div"; }

// The channel axis of a tensor no operator of the region has placed: NCHW's C, a
// matrix's columns.
int64_t default_axis(const std::vector<int64_t>& shape) { return shape.size() == 4 ? 1 : int64_t(shape.size()) - 1; }

// The region's operators, each with its role and reads, and every tensor they
// produce with its channel axis; INVALID_ARGUMENT naming the first that breaks a rule.
Status plan_channels(const Graph& graph, const OpRegion& region, std::vector<OpPlan>* plans, int64_t* extent) {
  if (region.first < 0 || region.last < region.first || size_t(region.last) >= graph.ops.size())
    return invalid_argument(fmt::format("the region {}..{} is not a range of the graph's {} operators", region.first,
                                        region.last, graph.ops.size()));
  auto inside = [&](int o) { return o >= region.first && o <= region.last; };
  std::map<int, int64_t> axis_of;  // region tensor -> its channel axis
  // The tensors' channel counts; a reshape may group them (768 columns as 12 heads
  // of 64): the region's tiles are ranges of the smallest, which divides the rest.
  std::vector<int64_t> sizes;
  plans->clear();
  for (int o = region.first; o <= region.last; ++o) {
    const GraphOp& op = graph.ops[size_t(o)];
    auto fail = [&](const std::string& why) {
      return invalid_argument("operator '" + op.name + "' of type '" + op.type + "' " + why);
    };
    if (op.outputs.size() != 1) return fail("has several outputs");
    if (op.attrs.count("window")) return fail("reads through a window already");
    const std::vector<int64_t>& out = graph.tensors[size_t(op.outputs[0])].shape;
    auto in_region = [&](size_t k) { return inside(graph.tensors[size_t(op.inputs[k])].producer); };
    auto in_shape = [&](size_t k) -> const std::vector<int64_t>& { return graph.tensors[size_t(op.inputs[k])].shape; };
    OpPlan plan;
    plan.reads.assign(op.inputs.size(), Read::kWhole);
    plan.axis.assign(op.inputs.size(), -1);
    auto window = [&](size_t k, int64_t axis) {
      plan.reads[k] = Read::kWindow;
      plan.axis[k] = axis;
    };
    // The channel axis the region's inputs of this operator agree on (-1: none read).
    int64_t tile_axis = -1;
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      if (!in_region(k)) continue;
      const int64_t a = axis_of.at(op.inputs[k]);
      if (tile_axis >= 0 && a != tile_axis) return fail("reads the region's tensors on different channel axes");
      tile_axis = a;
      plan.reads[k] = Read::kTile;
    }
    const std::string& t = op.type;
    if (t == "conv2d") {
      const std::vector<int64_t>& ws = in_shape(1);
      const int64_t groups = op.attr("groups", 1);
      if (in_region(1)) return fail("reads a weight the region computes");
      if (groups == 1 && !in_region(0)) {
        plan.role = Role::kProducer;
        window(1, 0);
        plan.out_axis = 1;
      } else if (groups == 1) {
        if (tile_axis != 1) return fail("sums over an axis that is not the channels the region splits");
        plan.role = Role::kReducer;
        window(1, 1);
      } else if (groups == ws[0] && ws[1] == 1 && in_shape(0)[1] == groups) {
        if (!in_region(0))
          window(0, 1);
        else if (tile_axis != 1)
          return fail("is depthwise, but the region splits another axis");
        window(1, 0);
        plan.out_axis = 1;
      } else {
        return fail("is a grouped convolution whose groups mix channels");
      }
    } else if (t == "matmul") {
      const bool tb = op.attr("transpose_b", 0) != 0;
      const int64_t rank = int64_t(out.size());
      if (!in_region(0) && !in_region(1)) {
        if (in_shape(1).size() != 2) return fail("multiplies by a batched operand from outside");
        plan.role = Role::kProducer;
        window(1, tb ? 0 : 1);
        plan.out_axis = rank - 1;
      } else if (tile_axis == int64_t(in_shape(0).size()) - 1 && in_region(0) && !in_region(1) &&
                 in_shape(1).size() == 2) {
        plan.role = Role::kReducer;
        window(1, tb ? 1 : 0);
      } else if (tile_axis >= 0 && tile_axis < rank - 2) {
        // Batched, the channels a batch axis (attention's heads): both operands by it.
        for (size_t k = 0; k < 2; ++k) {
          if (in_region(k)) {
            if (in_shape(k).size() != out.size()) return fail("broadcasts a tensor of the region");
          } else if (in_shape(k).size() == out.size()) {
            window(k, tile_axis);
          } else if (k == 0 || in_shape(k).size() != 2) {
            return fail("reads an operand from outside that is not batched as the region's");
          }
        }
        plan.out_axis = tile_axis;
      } else {
        return fail("multiplies along the channels the region splits");
      }
    } else if (t == "transpose") {
      if (!in_region(0)) return fail("transposes a tensor from outside the region");
      for (size_t b = 0; b < out.size(); ++b)
        if (op.attr("perm", int64_t(b), b) == tile_axis) plan.out_axis = int64_t(b);
    } else if (t == "reshape") {
      // The channels stay one axis, with the same axes before them (a transformer's
      // [tokens, heads * d] and [tokens, heads, d]); a range of whole channel groups
      // is then one contiguous block of both shapes.
      if (!in_region(0)) return fail("reshapes a tensor from outside the region");
      const std::vector<int64_t>& in = in_shape(0);
      auto product = [](const std::vector<int64_t>& v, size_t from, size_t to) {
        int64_t p = 1;
        for (size_t i = from; i < to; ++i) p *= v[i];
        return p;
      };
      const int64_t before = product(in, 0, size_t(tile_axis));
      for (size_t b = 0; b < out.size() && plan.out_axis < 0; ++b)
        if (product(out, 0, b) == before && out[b] > 1 &&
            in[size_t(tile_axis)] * product(in, size_t(tile_axis) + 1, in.size()) ==
                out[b] * product(out, b + 1, out.size()))
          plan.out_axis = int64_t(b);
      if (plan.out_axis < 0) return fail("mixes the channels the region splits with another axis");
    } else if (unary_type(t) || binary_type(t) || t == "maxpool" || t == "avgpool" || t == "global_avgpool" ||
               t == "softmax" || t == "layernorm") {
      const int64_t axis = tile_axis >= 0 ? tile_axis : default_axis(out);
      if (t == "maxpool" || t == "avgpool" || t == "global_avgpool") {
        if (axis != 1 || in_shape(0).size() != 4) return fail("pools an image, but the region splits another axis");
      }
      if ((t == "softmax" || t == "layernorm") && axis + 1 == int64_t(out.size()))
        return fail("reduces over the channels the region splits");
      if (axis >= int64_t(out.size())) return fail("has fewer axes than the channels the region splits");
      plan.out_axis = axis;
      if (!binary_type(t)) {
        // Channel c of the output reads channel c of its first input, on the same axis
        // (layernorm's gamma and beta run along the last axis: whole).
        if (!in_region(0)) window(0, axis);
      } else {
        for (size_t k = 0; k < 2; ++k) {
          const std::vector<int64_t>& in = in_shape(k);
          if (in_region(k)) {
            if (in != out) return fail("broadcasts a tensor of the region");
            continue;
          }
          const int64_t j = axis - (int64_t(out.size()) - int64_t(in.size()));
          if (j >= 0 && in[size_t(j)] == out[size_t(axis)]) {
            window(k, j);
          } else if (j >= 0 && in[size_t(j)] != 1) {
            return fail("reads an operand whose channels do not match the output's");
          }
        }
      }
    } else {
      return fail("cannot run in channel tiles");
    }
    if (plan.role == Role::kReducer && o != region.last)
      return fail("sums over the channels: only the region's last operator may");
    if (plan.role != Role::kReducer) {
      sizes.push_back(out[size_t(plan.out_axis)]);
      axis_of[op.outputs[0]] = plan.out_axis;
    }
    for (size_t k = 0; k < op.inputs.size(); ++k)
      if (plan.reads[k] == Read::kWindow) sizes.push_back(in_shape(k)[size_t(plan.axis[k])]);
    if (o != region.last) {
      const GraphTensor& out_t = graph.tensors[size_t(op.outputs[0])];
      if (out_t.kind != TensorKind::kIntermediate)
        return invalid_argument("'" + out_t.name +
                                "' is a graph output: only the region's last operator may write one");
      if (out_t.consumers.empty()) return invalid_argument("'" + out_t.name + "' is never read");
      for (int c : out_t.consumers)
        if (!inside(c))
          return invalid_argument("'" + out_t.name + "' is read by '" + graph.ops[size_t(c)].name +
                                  "' outside the region: only the last operator's output may leave it");
    }
    plans->push_back(std::move(plan));
  }
  if (sizes.empty()) return invalid_argument("the region has no operator whose channels it could split");
  const int64_t channels = *std::min_element(sizes.begin(), sizes.end());
  for (int64_t size : sizes)
    if (size % channels != 0)
      return invalid_argument(
          fmt::format("the region's tensors have {} channels: not all groups of {}", fmt::join(sizes, ", "), channels));
  *extent = channels;
  return Status();
}

}  // namespace

Status check_channel_region(const Graph& graph, const OpRegion& region) {
  std::vector<OpPlan> plans;
  int64_t extent = 0;
  TG_RETURN_IF_ERROR(plan_channels(graph, region, &plans, &extent));
  if (region.extent != extent)
    return invalid_argument(fmt::format("the region's extent is {}, its tensors have {} channels (or groups of them)",
                                        region.extent, extent));
  return Status();
}

std::vector<OpRegion> channel_regions_through(const Graph& graph, int op, int max_length) {
  std::vector<OpRegion> regions;
  const int n = int(graph.ops.size());
  for (int first = op < 0 ? 0 : std::max(0, op - max_length + 1); first < n && (op < 0 || first <= op); ++first) {
    const GraphOp& head = graph.ops[size_t(first)];
    if (head.outputs.size() != 1) continue;
    const std::vector<int64_t>& out = graph.tensors[size_t(head.outputs[0])].shape;
    if (out.empty()) continue;
    OpRegion region;
    region.channels = true;
    region.first = first;
    region.axis = size_t(head.type == "matmul" ? int64_t(out.size()) - 1 : default_axis(out));
    for (int last = std::max(first + 1, op); last < n && last - first < max_length; ++last) {
      region.last = last;
      std::vector<OpPlan> plans;
      int64_t extent = 0;
      const Status s = plan_channels(graph, region, &plans, &extent);
      if (s.ok() && extent >= 2) {
        // Worth splitting only where the tensors made inside outweigh the output,
        // which stays whole, twice over (a matmul, its bias and a residual add gain
        // nothing: they may run in place).
        int64_t made = 0;
        for (int o = first; o < last; ++o) made += graph.tensors[size_t(graph.ops[size_t(o)].outputs[0])].bytes;
        region.extent = extent;
        if (made > 2 * graph.tensors[size_t(graph.ops[size_t(last)].outputs[0])].bytes) regions.push_back(region);
        if (plans.back().role == Role::kReducer) break;  // nothing may follow a reduction
      } else if (s.message().find("outside the region") == std::string::npos &&
                 s.message().find("never read") == std::string::npos) {
        break;  // an operator that cannot join: no longer region through it either
      }
    }
  }
  return regions;
}

Expected<Graph> split_channels(const Graph& graph, const OpRegion& region, int64_t tiles) {
  std::vector<OpPlan> plans;
  int64_t channels = 0;
  TG_RETURN_IF_ERROR(plan_channels(graph, region, &plans, &channels));
  if (region.extent != channels) return check_channel_region(graph, region);  // names the mismatch
  if (tiles < 2 || tiles > channels)
    return invalid_argument(
        fmt::format("{} tiles for a region of {} channels: use 2 to {}", tiles, channels, channels));
  const int first = region.first, last = region.last;
  const int output = graph.ops[size_t(last)].outputs[0];
  const GraphTensor& out_t = graph.tensors[size_t(output)];
  const bool reduces = plans.back().role == Role::kReducer;
  return replace_region(graph, first, last, [&](Graph& g, const std::vector<int>& remap) {
    int accumulator = -1;
    for (int64_t tile = 0; tile < tiles; ++tile) {
      const int64_t lo = tile * channels / tiles, size = (tile + 1) * channels / tiles - lo;
      std::map<int, int> tile_of;  // region tensor -> its tile in the new graph
      int part = -1;
      for (int r = first; r <= last; ++r) {
        const GraphOp& source = graph.ops[size_t(r)];
        const OpPlan& plan = plans[size_t(r - first)];
        GraphOp op = source;
        op.name = fmt::format("{}@{}", source.name, tile);
        op.inplace_inputs.clear();
        std::vector<int64_t> windows;
        for (size_t k = 0; k < op.inputs.size(); ++k) {
          const int t = source.inputs[k];
          if (plan.reads[k] == Read::kTile) {
            op.inputs[k] = tile_of.at(t);
          } else {
            op.inputs[k] = remap[size_t(t)];
            if (plan.reads[k] == Read::kWindow) {
              const int64_t unit = graph.tensors[size_t(t)].shape[size_t(plan.axis[k])] / channels;
              windows.insert(windows.end(), {int64_t(k), plan.axis[k], lo * unit, size * unit});
            }
          }
        }
        if (!windows.empty()) op.attrs["window"] = windows;
        op.fusible = op.fusible && plan.reads[0] == Read::kTile;  // never into an outside tensor's producer
        std::vector<int64_t> shape = graph.tensors[size_t(source.outputs[0])].shape;
        if (plan.out_axis >= 0) shape[size_t(plan.out_axis)] = size * (shape[size_t(plan.out_axis)] / channels);
        if (source.type == "conv2d" && source.attr("groups", 1) != 1) op.attrs["groups"] = {shape[1]};
        op.outputs = {g.add_tensor(op.name, shape, TensorKind::kIntermediate, out_t.dtype)};
        // In place where the source was and the tile's operand has the output's bytes.
        for (int k : source.inplace_inputs)
          if (plan.reads[size_t(k)] == Read::kTile &&
              g.tensors[size_t(op.inputs[size_t(k)])].bytes == g.tensors[size_t(op.outputs[0])].bytes)
            op.inplace_inputs.push_back(k);
        tile_of[source.outputs[0]] = op.outputs[0];
        part = op.outputs[0];
        g.ops.push_back(std::move(op));
      }
      // Into the output: partial sums added (in place), or the tile's channels written
      // as a split by rows writes its rows.
      const bool final_tile = tile + 1 == tiles;
      if (reduces && tile == 0) {
        accumulator = part;
        continue;
      }
      GraphOp acc;
      acc.name = fmt::format("{}@acc{}", out_t.name, tile);
      if (reduces) {
        acc.type = "add";
        acc.inputs = {accumulator, part};
      } else {
        acc.type = tile == 0 ? "pad" : "update_slice";
        acc.inputs = tile == 0 ? std::vector<int>{part} : std::vector<int>{accumulator, part};
        acc.attrs["axis"] = {plans.back().out_axis};
        acc.attrs["start"] = {lo * (out_t.shape[size_t(plans.back().out_axis)] / channels)};
      }
      if (tile > 0) acc.inplace_inputs = {0};
      accumulator = final_tile ? remap[size_t(output)]
                               : g.add_tensor(acc.name, out_t.shape, TensorKind::kIntermediate, out_t.dtype);
      acc.outputs = {accumulator};
      g.ops.push_back(std::move(acc));
    }
  });
}

}  // namespace tensorgym
