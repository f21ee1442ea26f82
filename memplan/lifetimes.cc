#include "memplan/lifetimes.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <set>

namespace tensorgym {

bool inplace_legal(const Graph& graph, int op, int k, const std::vector<int>& position_of, int position) {
  const GraphOp& o = graph.ops[size_t(op)];
  if (std::find(o.inplace_inputs.begin(), o.inplace_inputs.end(), k) == o.inplace_inputs.end()) return false;
  const int in = o.inputs[size_t(k)];
  const GraphTensor& t = graph.tensors[size_t(in)];
  if (t.kind != TensorKind::kIntermediate) return false;  // inputs, outputs and constants must survive
  if (t.bytes != graph.tensors[size_t(o.outputs[0])].bytes) return false;
  // The input read twice by this operator is fine; read by any later one is not.
  for (int c : t.consumers) {
    if (c == op) continue;
    const int p = position_of[size_t(c)];
    if (p < 0 || p > position) return false;
  }
  return true;
}

std::vector<Alias> all_inplace(const Graph& graph, const std::vector<int>& order) {
  std::vector<int> pos(graph.ops.size(), -1);
  for (size_t i = 0; i < order.size(); ++i) pos[size_t(order[i])] = int(i);
  std::vector<char> taken(graph.tensors.size(), 0);
  std::vector<Alias> out;
  for (size_t i = 0; i < order.size(); ++i) {
    const int op = order[i];
    const GraphOp& o = graph.ops[size_t(op)];
    for (int k : o.inplace_inputs) {
      const int in = o.inputs[size_t(k)];
      if (taken[size_t(in)] || !inplace_legal(graph, op, k, pos, int(i))) continue;
      taken[size_t(in)] = 1;
      out.push_back({op, in, o.outputs[0], false});
      break;
    }
  }
  return out;
}

int64_t order_independent_bound(const Graph& graph, bool allow_inplace, int64_t alignment) {
  int64_t bound = 0;
  for (const GraphOp& o : graph.ops) {
    std::set<int> touched;
    for (int t : o.inputs)
      if (graph.in_arena(t)) touched.insert(t);
    for (int t : o.outputs) touched.insert(t);
    int64_t bytes = o.scratch_bytes > 0 ? align_up(o.scratch_bytes, alignment) : 0;
    for (int t : touched) bytes += align_up(graph.tensors[size_t(t)].bytes, alignment);
    if (allow_inplace) {
      for (int k : o.inplace_inputs) {
        const GraphTensor& in = graph.tensors[size_t(o.inputs[size_t(k)])];
        if (in.kind == TensorKind::kIntermediate && in.bytes == graph.tensors[size_t(o.outputs[0])].bytes) {
          bytes -= align_up(in.bytes, alignment);
          break;
        }
      }
    }
    bound = std::max(bound, bytes);
  }
  return bound;
}

Expected<GraphLayout> layout_graph(const Graph& graph, const GraphDecisions& d, int64_t alignment) {
  const size_t n = graph.ops.size();
  GraphLayout L;
  L.position.assign(n, -1);
  if (d.order.size() != n)
    return invalid_argument(fmt::format("the order has {} operators, the graph {}", d.order.size(), n));
  for (size_t i = 0; i < n; ++i) {
    const int op = d.order[i];
    if (op < 0 || size_t(op) >= n) return invalid_argument(fmt::format("the order names operator #{}", op));
    if (L.position[size_t(op)] >= 0)
      return invalid_argument("the order has operator '" + graph.ops[size_t(op)].name + "' twice");
    L.position[size_t(op)] = int(i);
  }
  for (size_t i = 0; i < n; ++i) {
    const GraphOp& o = graph.ops[size_t(d.order[i])];
    for (int t : o.inputs) {
      const int p = graph.tensors[size_t(t)].producer;
      if (p >= 0 && L.position[size_t(p)] > int(i))
        return invalid_argument("the order runs '" + o.name + "' before '" + graph.ops[size_t(p)].name +
                                "', which produces its input '" + graph.tensors[size_t(t)].name + "'");
    }
  }
  // Groups of tensors sharing memory (union of alias chains).
  std::vector<int> group(graph.tensors.size());
  std::iota(group.begin(), group.end(), 0);
  auto find = [&](int t) {
    while (group[size_t(t)] != t) t = group[size_t(t)] = group[size_t(group[size_t(t)])];
    return t;
  };
  std::vector<char> taken(graph.tensors.size(), 0), written(graph.tensors.size(), 0);
  for (const Alias& a : d.aliases) {
    if (a.op < 0 || size_t(a.op) >= n)
      return invalid_argument(fmt::format("an in-place choice names operator #{}", a.op));
    const GraphOp& o = graph.ops[size_t(a.op)];
    const std::string what = std::string(a.fused ? "fusing" : "in-place on") + " operator '" + o.name + "'";
    if (a.output != o.outputs[0]) return invalid_argument(what + ": the output must be its first output");
    int k = -1;
    for (size_t j = 0; j < o.inputs.size(); ++j)
      if (o.inputs[j] == a.input) k = int(j);
    if (k < 0) return invalid_argument(fmt::format("{}: the tensor #{} is not one of its inputs", what, a.input));
    const std::string in_name = graph.tensors[size_t(a.input)].name;
    if (!inplace_legal(graph, a.op, k, L.position, L.position[size_t(a.op)]))
      return invalid_argument(what + " over '" + in_name +
                              "' is not legal (the operator must allow it on that input, the bytes must match, and "
                              "the input must be an intermediate read by no later operator)");
    if (taken[size_t(a.input)]) return invalid_argument(what + ": '" + in_name + "' is taken over twice");
    if (written[size_t(a.output)]) return invalid_argument(what + ": its output reuses memory twice");
    if (a.fused) {
      const GraphTensor& in = graph.tensors[size_t(a.input)];
      if (!o.fusible) return invalid_argument(what + ": the operator is not an elementwise one that may fuse");
      if (in.consumers.size() != 1 || in.producer < 0 ||
          L.position[size_t(in.producer)] + 1 != L.position[size_t(a.op)])
        return invalid_argument(what + " into '" + (in.producer >= 0 ? graph.ops[size_t(in.producer)].name : "?") +
                                "': '" + in_name +
                                "' must have this one consumer, which runs right after its producer");
    }
    taken[size_t(a.input)] = 1;
    written[size_t(a.output)] = 1;
    group[size_t(find(a.output))] = find(a.input);
  }
  // Lifetimes per tensor, then per group.
  const int64_t steps = int64_t(n);
  L.buffer_of_tensor.assign(graph.tensors.size(), -1);
  std::vector<int> buffer_of_root(graph.tensors.size(), -1);
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    const GraphTensor& gt = graph.tensors[t];
    if (gt.kind == TensorKind::kConstant) continue;
    int64_t lo = gt.producer >= 0 ? L.position[size_t(gt.producer)] : 0;
    int64_t hi = lo + 1;
    for (int c : gt.consumers) hi = std::max<int64_t>(hi, L.position[size_t(c)] + 1);
    if (gt.kind == TensorKind::kOutput) hi = steps;
    if (gt.producer < 0 && gt.consumers.empty()) hi = std::max<int64_t>(hi, 1);
    const int root = find(int(t));
    int& b = buffer_of_root[size_t(root)];
    if (b < 0) {
      b = int(L.instance.buffers.size());
      L.instance.buffers.push_back({gt.name, lo, hi, 0});
      L.kind.push_back(BufferKind::kIntermediate);
      L.tensors_of_buffer.emplace_back();
    }
    Buffer& buf = L.instance.buffers[size_t(b)];
    buf.lower = std::min(buf.lower, lo);
    buf.upper = std::max(buf.upper, hi);
    buf.size = std::max(buf.size, align_up(gt.bytes, alignment));
    if (gt.kind == TensorKind::kInput) L.kind[size_t(b)] = BufferKind::kInput;
    if (gt.kind == TensorKind::kOutput && L.kind[size_t(b)] != BufferKind::kInput)
      L.kind[size_t(b)] = BufferKind::kOutput;
    L.tensors_of_buffer[size_t(b)].push_back(int(t));
    L.buffer_of_tensor[t] = b;
  }
  L.scratch_of_op.assign(n, -1);
  for (size_t i = 0; i < n; ++i) {
    const GraphOp& o = graph.ops[size_t(d.order[i])];
    if (o.scratch_bytes <= 0) continue;
    L.scratch_of_op[size_t(d.order[i])] = int(L.instance.buffers.size());
    L.instance.buffers.push_back(
        {"scratch:" + o.name, int64_t(i), int64_t(i) + 1, align_up(o.scratch_bytes, alignment)});
    L.kind.push_back(BufferKind::kScratch);
    L.tensors_of_buffer.emplace_back();
  }
  L.instance.alignment = alignment;
  L.lb_live = peak_live_bytes(L.instance);
  for (size_t op = 0; op < n; ++op) {
    std::set<int> touched;
    for (int t : graph.ops[op].inputs)
      if (L.buffer_of_tensor[size_t(t)] >= 0) touched.insert(L.buffer_of_tensor[size_t(t)]);
    for (int t : graph.ops[op].outputs) touched.insert(L.buffer_of_tensor[size_t(t)]);
    if (L.scratch_of_op[op] >= 0) touched.insert(L.scratch_of_op[op]);
    int64_t bytes = 0;
    for (int b : touched) bytes += L.instance.buffers[size_t(b)].size;
    L.lb_op = std::max(L.lb_op, bytes);
  }
  return L;
}

ArenaBreakdown arena_breakdown(const GraphLayout& layout) {
  ArenaBreakdown b;
  const LiveProfile p = live_profile(layout.instance);
  int64_t peak_time = 0, peak = -1;
  for (size_t k = 0; k < p.live.size(); ++k)
    if (p.live[k] > peak) {
      peak = p.live[k];
      peak_time = p.times[k];
    }
  for (size_t i = 0; i < layout.instance.buffers.size(); ++i) {
    const Buffer& buf = layout.instance.buffers[i];
    const int k = int(layout.kind[i]);
    b.total[k] += buf.size;
    b.count[k] += 1;
    if (buf.lower <= peak_time && peak_time < buf.upper) b.at_peak[k] += buf.size;
  }
  return b;
}

}  // namespace tensorgym
