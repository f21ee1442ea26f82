#include "memplan/op_split.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "memplan/op_stages.h"

namespace tensorgym {
namespace {

struct Interval {
  int64_t lo = 0, hi = 0;  // half-open
  int64_t size() const { return hi - lo; }
  bool operator==(const Interval&) const = default;
};

// How an operator's input is read when its output is computed by rows along `axis`.
enum class Use { kRows, kWhole };

bool windowed(const std::string& type) { return type == "conv2d" || type == "maxpool" || type == "avgpool"; }

bool rowwise_type(const std::string& type) {
  static const char* const kTypes[] = {"conv2d",  "maxpool", "avgpool", "relu",      "relu6", "gelu",
                                       "sigmoid", "tanh",    "add",     "sub",       "mul",   "div",
                                       "scale",   "matmul",  "softmax", "layernorm", "concat"};
  for (const char* t : kTypes)
    if (type == t) return true;
  return false;
}

// The row axis of an operator's output: the second to last (an image's rows in NCHW,
// a matrix's rows), or none.
bool row_axis(const Graph& graph, const GraphOp& op, size_t* axis) {
  if (!rowwise_type(op.type) || op.outputs.size() != 1) return false;
  const std::vector<int64_t>& out = graph.tensors[size_t(op.outputs[0])].shape;
  if (out.size() < 2) return false;
  if (windowed(op.type) && out.size() != 4) return false;
  *axis = out.size() - 2;
  return op.type != "concat" || size_t(op.attr("axis", 1)) != *axis;
}

// How input `k` of `op` is read: by rows (the operand's rows along the axis follow
// the output's), or whole (weights, broadcast operands, a matmul's second operand).
Use input_use(const Graph& graph, const GraphOp& op, size_t k, size_t axis) {
  if (op.type == "add" || op.type == "sub" || op.type == "mul" || op.type == "div") {
    const std::vector<int64_t>& out = graph.tensors[size_t(op.outputs[0])].shape;
    const std::vector<int64_t>& in = graph.tensors[size_t(op.inputs[k])].shape;
    const size_t shift = out.size() - in.size();
    if (axis < shift || in[axis - shift] != out[axis]) return Use::kWhole;
    return Use::kRows;
  }
  if (op.type == "concat") return Use::kRows;  // along another axis
  return k == 0 ? Use::kRows : Use::kWhole;
}

// The rows of each by-rows input that output rows `out` need, before clamping.
Interval rows_needed(const Graph& graph, const GraphOp& op, Interval out) {
  if (!windowed(op.type)) return out;
  const int64_t s = op.attr("stride", 1, 0), p = op.attr("pad", 0, 0);
  const int64_t k = op.type == "conv2d" ? graph.tensors[size_t(op.inputs[1])].shape[2] : op.attr("kernel", 1);
  return {out.lo * s - p, (out.hi - 1) * s - p + k};
}

Interval hull(Interval a, Interval b) {
  if (a.size() <= 0) return b;
  return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
}

}  // namespace

std::string OpRegion::describe(const Graph& graph) const {
  const int n = last - first + 1;
  return fmt::format("{}{} ({} op{}) {}", graph.ops[size_t(first)].name,
                     n > 1 ? ".." + graph.ops[size_t(last)].name : "", n, n == 1 ? "" : "s",
                     channels ? std::string("by channels") : fmt::format("along axis {}", axis));
}

Status check_region(const Graph& graph, const OpRegion& region) {
  if (region.channels) return check_channel_region(graph, region);
  if (region.first < 0 || region.last < region.first || size_t(region.last) >= graph.ops.size())
    return invalid_argument(fmt::format("the region {}..{} is not a range of the graph's {} operators", region.first,
                                        region.last, graph.ops.size()));
  auto inside = [&](int o) { return o >= region.first && o <= region.last; };
  for (int o = region.first; o <= region.last; ++o) {
    const GraphOp& op = graph.ops[size_t(o)];
    size_t axis = 0;
    if (!row_axis(graph, op, &axis) || op.attrs.count("window"))
      return invalid_argument("operator '" + op.name + "' of type '" + op.type + "' cannot run in tiles of rows");
    if (axis != region.axis)
      return invalid_argument(
          fmt::format("operator '{}' splits along axis {}, the region along {}", op.name, axis, region.axis));
    if ((op.type == "softmax" || op.type == "layernorm") &&
        axis + 1 == graph.tensors[size_t(op.outputs[0])].shape.size())
      return invalid_argument("operator '" + op.name + "' reduces over the split axis");
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      const GraphTensor& t = graph.tensors[size_t(op.inputs[k])];
      if (inside(t.producer) && input_use(graph, op, k, axis) != Use::kRows)
        return invalid_argument("operator '" + op.name + "' reads '" + t.name + "' whole, not by rows");
    }
    if (o == region.last) continue;
    const GraphTensor& t = graph.tensors[size_t(op.outputs[0])];
    if (t.kind != TensorKind::kIntermediate)
      return invalid_argument("'" + t.name + "' is a graph output: only the region's last operator may write one");
    if (t.consumers.empty()) return invalid_argument("'" + t.name + "' is never read");
    for (int c : t.consumers)
      if (!inside(c))
        return invalid_argument("'" + t.name + "' is read by '" + graph.ops[size_t(c)].name +
                                "' outside the region: only the last operator's output may leave it");
  }
  const int64_t extent = graph.tensors[size_t(graph.ops[size_t(region.last)].outputs[0])].shape[region.axis];
  if (region.extent != extent)
    return invalid_argument(fmt::format("the region's extent is {}, its output has {} rows", region.extent, extent));
  return Status();
}

std::vector<OpRegion> regions_through(const Graph& graph, int op, int max_length) {
  std::vector<OpRegion> regions;
  const int n = int(graph.ops.size());
  for (int first = op < 0 ? 0 : std::max(0, op - max_length + 1); first < n && (op < 0 || first <= op); ++first) {
    OpRegion region;
    region.first = first;
    if (!row_axis(graph, graph.ops[size_t(first)], &region.axis)) continue;
    for (int last = std::max(first, op); last < n && last - first < max_length; ++last) {
      region.last = last;
      size_t axis = 0;
      if (!row_axis(graph, graph.ops[size_t(last)], &axis) || axis != region.axis) break;
      region.extent = graph.tensors[size_t(graph.ops[size_t(last)].outputs[0])].shape[region.axis];
      const bool gains = last > first || graph.ops[size_t(first)].scratch_bytes > 0;
      if (gains && region.extent >= 2 && check_region(graph, region).ok()) regions.push_back(region);
    }
  }
  for (OpRegion& region : channel_regions_through(graph, op, max_length)) regions.push_back(region);
  return regions;
}

Expected<Graph> split_region(const Graph& graph, const OpRegion& region, int64_t tiles) {
  if (region.channels) return split_channels(graph, region, tiles);
  TG_RETURN_IF_ERROR(check_region(graph, region));
  if (tiles < 2 || tiles > region.extent)
    return invalid_argument(
        fmt::format("{} tiles for a region of {} rows: use 2 to {}", tiles, region.extent, region.extent));
  const size_t axis = region.axis;
  const int first = region.first, last = region.last;
  const int output = graph.ops[size_t(last)].outputs[0];
  auto inside = [&](int o) { return o >= first && o <= last; };
  return replace_region(graph, first, last, [&](Graph& g, const std::vector<int>& remap) {
    auto new_tensor = [&](const std::string& name, std::vector<int64_t> shape, int64_t rows) {
      shape[axis] = rows;
      return g.add_tensor(name, std::move(shape), TensorKind::kIntermediate, graph.tensors[size_t(output)].dtype);
    };
    // Rows [start, start + rows) of `tensor` as a new tensor.
    auto slice = [&](const std::string& name, int tensor, int64_t start, int64_t rows) {
      GraphOp op;
      op.name = name;
      op.type = "slice";
      op.inputs = {tensor};
      op.attrs["axis"] = {int64_t(axis)};
      op.attrs["start"] = {start};
      op.outputs = {new_tensor(name, g.tensors[size_t(tensor)].shape, rows)};
      g.ops.push_back(std::move(op));
      return g.ops.back().outputs[0];
    };

    int accumulator = -1;
    for (int64_t tile = 0; tile < tiles; ++tile) {
      // Rows each operator computes and reads, from the last back to the first; an
      // intermediate holds the hull of what its readers need.
      const size_t n = size_t(last - first + 1);
      std::vector<Interval> out_rows(n), in_need(n), in_rows(n);
      std::map<int, Interval> need;  // region tensor -> rows its tile holds
      for (int r = last; r >= first; --r) {
        const GraphOp& op = graph.ops[size_t(r)];
        const size_t i = size_t(r - first);
        out_rows[i] = r == last ? Interval{tile * region.extent / tiles, (tile + 1) * region.extent / tiles}
                                : need[op.outputs[0]];
        in_need[i] = rows_needed(graph, op, out_rows[i]);
        const int extent_of = windowed(op.type) ? op.inputs[0] : op.outputs[0];
        const int64_t extent = graph.tensors[size_t(extent_of)].shape[axis];
        in_rows[i] = {std::max<int64_t>(0, in_need[i].lo), std::min(extent, in_need[i].hi)};
        for (size_t k = 0; k < op.inputs.size(); ++k)
          if (inside(graph.tensors[size_t(op.inputs[k])].producer) && input_use(graph, op, k, axis) == Use::kRows)
            need[op.inputs[k]] = hull(need[op.inputs[k]], in_rows[i]);
      }
      std::map<int, int> tile_of;  // region tensor -> its tile in the new graph
      for (int r = first; r <= last; ++r) {
        const GraphOp& source = graph.ops[size_t(r)];
        const size_t i = size_t(r - first);
        GraphOp op = source;
        op.name = fmt::format("{}@{}", source.name, tile);
        for (size_t k = 0; k < op.inputs.size(); ++k) {
          const int t = source.inputs[k];
          const std::string slice_name = fmt::format("{}_slice{}", op.name, k);
          if (input_use(graph, source, k, axis) == Use::kWhole) {
            op.inputs[k] = remap[size_t(t)];
          } else if (inside(graph.tensors[size_t(t)].producer)) {
            const Interval held = need[t];
            op.inputs[k] = held == in_rows[i]
                               ? tile_of[t]
                               : slice(slice_name, tile_of[t], in_rows[i].lo - held.lo, in_rows[i].size());
          } else {
            const int64_t rows = graph.tensors[size_t(t)].shape[axis];
            op.inputs[k] = in_rows[i] == Interval{0, rows}
                               ? remap[size_t(t)]
                               : slice(slice_name, remap[size_t(t)], in_rows[i].lo, in_rows[i].size());
          }
        }
        if (windowed(source.type)) {
          // Padding only where the tile meets the tensor's edge: the top here; the
          // bottom follows from the rows (reads past the slice are padding).
          const int64_t pw = source.attr("pad", source.attr("pad", 0, 0), 1);
          op.attrs["pad"] = {in_rows[i].lo - in_need[i].lo, pw};
        }
        op.outputs = {new_tensor(op.name, graph.tensors[size_t(source.outputs[0])].shape, out_rows[i].size())};
        tile_of[source.outputs[0]] = op.outputs[0];
        g.ops.push_back(std::move(op));
      }
      // Into the accumulator: the output's rows, in place from the second tile on.
      GraphOp acc;
      acc.name = fmt::format("{}@acc{}", graph.tensors[size_t(output)].name, tile);
      acc.type = tile == 0 ? "pad" : "update_slice";
      const int part = tile_of[output];
      acc.inputs = tile == 0 ? std::vector<int>{part} : std::vector<int>{accumulator, part};
      if (tile > 0) acc.inplace_inputs = {0};
      acc.attrs["axis"] = {int64_t(axis)};
      acc.attrs["start"] = {out_rows.back().lo};
      accumulator = tile + 1 == tiles ? remap[size_t(output)]
                                      : new_tensor(acc.name, graph.tensors[size_t(output)].shape,
                                                   graph.tensors[size_t(output)].shape[axis]);
      acc.outputs = {accumulator};
      g.ops.push_back(std::move(acc));
    }
  });
}

Expected<Graph> replace_region(const Graph& graph, int first, int last,
                               const std::function<void(Graph& g, const std::vector<int>& remap)>& emit) {
  const int output = graph.ops[size_t(last)].outputs[0];
  auto inside = [&](int o) { return o >= first && o <= last; };
  Graph g;
  g.name = graph.name;
  std::vector<int> remap(graph.tensors.size(), -1);
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    const GraphTensor& source = graph.tensors[t];
    if (inside(source.producer) && int(t) != output) continue;
    remap[t] = int(g.tensors.size());
    GraphTensor copy = source;
    copy.consumers.clear();
    copy.producer = -1;
    g.tensors.push_back(std::move(copy));
  }
  for (int o = 0; o < int(graph.ops.size()); ++o) {
    if (!inside(o)) {
      GraphOp op = graph.ops[size_t(o)];
      for (int& t : op.inputs) t = remap[size_t(t)];
      for (int& t : op.outputs) t = remap[size_t(t)];
      g.ops.push_back(std::move(op));
    } else if (o == last) {
      emit(g, remap);  // the region runs where its last operator was
    }
  }
  TG_RETURN_IF_ERROR(g.finalize());
  TG_RETURN_IF_ERROR(fill_scratch(g));
  return g;
}

}  // namespace tensorgym
