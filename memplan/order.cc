#include "memplan/order.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <numeric>
#include <unordered_set>

#include "memplan/instance.h"
#include "memplan/lifetimes.h"

namespace tensorgym {
namespace {

using Clock = std::chrono::steady_clock;

// Operators whose inputs are all produced by `done` operators.
struct Readiness {
  std::vector<int> waiting;             // producers not yet scheduled, per operator
  std::vector<std::vector<int>> users;  // operator -> operators reading its outputs (once each)

  explicit Readiness(const Graph& g) : waiting(g.ops.size(), 0), users(g.ops.size()) {
    for (size_t o = 0; o < g.ops.size(); ++o) {
      std::unordered_set<int> producers;
      for (int t : g.ops[o].inputs)
        if (g.tensors[size_t(t)].producer >= 0) producers.insert(g.tensors[size_t(t)].producer);
      waiting[o] = int(producers.size());
      for (int p : producers) users[size_t(p)].push_back(int(o));
    }
    for (auto& u : users) std::sort(u.begin(), u.end());
  }
};

int64_t arena_bytes(const Graph& g, int t, int64_t a) {
  return g.in_arena(t) ? align_up(g.tensors[size_t(t)].bytes, a) : 0;
}

uint64_t set_mix(int op) { return ((uint64_t(op) + 1) * 0x9e3779b97f4a7c15ull) ^ (uint64_t(op) << 17); }

// The incremental live-bytes state of a partial order.
struct LiveState {
  std::vector<int> remaining;  // unscheduled consumers per tensor
  std::vector<char> done;      // per operator
  int64_t live = 0;
  int64_t peak = 0;
  std::vector<int> order;
  uint64_t hash = 0;

  static LiveState start(const Graph& g, int64_t a) {
    LiveState s;
    s.remaining.resize(g.tensors.size());
    for (size_t t = 0; t < g.tensors.size(); ++t) {
      s.remaining[t] = int(g.tensors[t].consumers.size());
      if (g.tensors[t].kind == TensorKind::kInput) s.live += arena_bytes(g, int(t), a);
    }
    s.done.assign(g.ops.size(), 0);
    s.peak = s.live;
    return s;
  }

  // The peak during `op` and the live bytes after it, without changing the state.
  void preview(const Graph& g, int op, bool inplace, int64_t a, int64_t* during, int64_t* after) const {
    const GraphOp& o = g.ops[size_t(op)];
    int aliased_input = inplace ? alias_input(g, op) : -1;
    int64_t add = 0;
    for (size_t k = 0; k < o.outputs.size(); ++k)
      if (!(k == 0 && aliased_input >= 0)) add += arena_bytes(g, o.outputs[k], a);
    const int64_t scratch = o.scratch_bytes > 0 ? align_up(o.scratch_bytes, a) : 0;
    *during = live + add + scratch;
    int64_t freed = 0;
    for (size_t k = 0; k < o.inputs.size(); ++k) {
      const int t = o.inputs[k];
      if (std::find(o.inputs.begin(), o.inputs.begin() + long(k), t) != o.inputs.begin() + long(k)) continue;
      if (remaining[size_t(t)] == 1 && t != aliased_input && g.tensors[size_t(t)].kind != TensorKind::kOutput)
        freed += arena_bytes(g, t, a);
    }
    for (int t : o.outputs)
      if (g.tensors[size_t(t)].consumers.empty() && g.tensors[size_t(t)].kind != TensorKind::kOutput) {
        if (!(t == o.outputs[0] && aliased_input >= 0)) freed += arena_bytes(g, t, a);
      }
    *after = live + add - freed;
  }

  // The input whose memory the operator's output takes over, or -1.
  int alias_input(const Graph& g, int op) const {
    const GraphOp& o = g.ops[size_t(op)];
    for (int k : o.inplace_inputs) {
      const int in = o.inputs[size_t(k)];
      const GraphTensor& t = g.tensors[size_t(in)];
      if (t.kind != TensorKind::kIntermediate || t.bytes != g.tensors[size_t(o.outputs[0])].bytes) continue;
      int readers = 0;
      for (int c : t.consumers)
        if (!done[size_t(c)]) ++readers;
      if (readers == 1) return in;  // only this operator still reads it
    }
    return -1;
  }

  void apply(const Graph& g, int op, bool inplace, int64_t a) {
    int64_t during = 0, after = 0;
    preview(g, op, inplace, a, &during, &after);
    peak = std::max(peak, during);
    live = after;
    const GraphOp& o = g.ops[size_t(op)];
    std::unordered_set<int> seen;
    for (int t : o.inputs)
      if (seen.insert(t).second) --remaining[size_t(t)];
    done[size_t(op)] = 1;
    order.push_back(op);
    hash += set_mix(op);  // order-free: the set of scheduled operators
  }
};

std::vector<int> program_order(const Graph& g) {
  std::vector<int> o(g.ops.size());
  std::iota(o.begin(), o.end(), 0);
  return o;
}

// XLA's list scheduler: among ready operators, the one that frees the most bytes
// net of what it defines; program order on ties.
std::vector<int> list_order(const Graph& g, bool inplace, int64_t a) {
  Readiness r(g);
  LiveState s = LiveState::start(g, a);
  std::vector<int> ready;
  for (size_t o = 0; o < g.ops.size(); ++o)
    if (r.waiting[o] == 0) ready.push_back(int(o));
  while (!ready.empty()) {
    size_t best = 0;
    int64_t best_after = INT64_MAX;
    for (size_t i = 0; i < ready.size(); ++i) {
      int64_t during = 0, after = 0;
      s.preview(g, ready[i], inplace, a, &during, &after);
      if (after < best_after || (after == best_after && ready[i] < ready[best])) {
        best_after = after;
        best = i;
      }
    }
    const int op = ready[best];
    ready.erase(ready.begin() + long(best));
    s.apply(g, op, inplace, a);
    for (int u : r.users[size_t(op)])
      if (--r.waiting[size_t(u)] == 0) ready.push_back(u);
  }
  return s.order;
}

// Depth-first post-orders from the graph's sinks. `sort_operands` reorders the
// producers to visit first (XLA's DFS scheduler: most extra users, then the largest
// transitive size); without it, operand order (XLA's post-order scheduler).
std::vector<int> dfs_order(const Graph& g, bool by_size) {
  const size_t n = g.ops.size();
  std::vector<std::vector<int>> producers(n);
  for (size_t o = 0; o < n; ++o) {
    for (int t : g.ops[o].inputs) {
      const int p = g.tensors[size_t(t)].producer;
      if (p >= 0 && std::find(producers[o].begin(), producers[o].end(), p) == producers[o].end())
        producers[o].push_back(p);
    }
  }
  std::vector<int64_t> total(n, 0), extra_users(n, 0);
  if (by_size) {
    for (size_t o = 0; o < n; ++o) {  // program order is topological
      for (int t : g.ops[o].outputs) total[o] += g.tensors[size_t(t)].bytes;
      for (int p : producers[o]) total[o] += total[size_t(p)];
      for (int t : g.ops[o].outputs)
        extra_users[o] += std::max<int64_t>(0, int64_t(g.tensors[size_t(t)].consumers.size()) - 1);
    }
    for (size_t o = 0; o < n; ++o)
      std::stable_sort(producers[o].begin(), producers[o].end(), [&](int x, int y) {
        if (extra_users[size_t(x)] != extra_users[size_t(y)]) return extra_users[size_t(x)] > extra_users[size_t(y)];
        return total[size_t(x)] > total[size_t(y)];
      });
  }
  std::vector<char> state(n, 0);  // 0 new, 1 on the stack, 2 emitted
  std::vector<int> order;
  // Iterative DFS (graphs can be deep).
  auto visit = [&](int root) {
    std::vector<std::pair<int, size_t>> stack = {{root, 0}};
    state[size_t(root)] = 1;
    while (!stack.empty()) {
      auto& [op, next] = stack.back();
      if (next < producers[size_t(op)].size()) {
        const int p = producers[size_t(op)][next++];
        if (state[size_t(p)] == 0) {
          state[size_t(p)] = 1;
          stack.push_back({p, 0});
        }
        continue;
      }
      state[size_t(op)] = 2;
      order.push_back(op);
      stack.pop_back();
    }
  };
  // Sinks: operators none of whose outputs is read; in program order.
  for (size_t o = 0; o < n; ++o) {
    bool sink = true;
    for (int t : g.ops[o].outputs)
      if (!g.tensors[size_t(t)].consumers.empty()) sink = false;
    if (sink && state[o] == 0) visit(int(o));
  }
  for (size_t o = 0; o < n; ++o)
    if (state[o] == 0) visit(int(o));
  return order;
}

// Beam search over orders: states ranked by (peak so far, live bytes now).
std::vector<int> search_order(const Graph& g, const OrderOptions& opt, const std::vector<int>& fallback) {
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.time_limit_s));
  Readiness r(g);
  struct Node {
    LiveState s;
    std::vector<int> waiting;
  };
  std::vector<Node> beam;
  beam.push_back({LiveState::start(g, opt.alignment), r.waiting});
  const size_t n = g.ops.size();
  const size_t width = size_t(std::max(1, opt.beam_width));
  for (size_t step = 0; step < n; ++step) {
    if (Clock::now() > deadline) return fallback;
    struct Child {
      size_t parent;
      int op;
      int64_t peak, live;
    };
    std::vector<Child> children;
    for (size_t b = 0; b < beam.size(); ++b) {
      const Node& node = beam[b];
      for (size_t o = 0; o < n; ++o) {
        if (node.s.done[o] || node.waiting[o] != 0) continue;
        int64_t during = 0, after = 0;
        node.s.preview(g, int(o), opt.inplace, opt.alignment, &during, &after);
        const int64_t peak = std::max(node.s.peak, during);
        if (opt.memory_limit > 0 && peak > opt.memory_limit) continue;
        children.push_back({b, int(o), peak, after});
      }
    }
    if (children.empty()) return fallback;  // everything over the limit
    std::stable_sort(children.begin(), children.end(), [](const Child& x, const Child& y) {
      if (x.peak != y.peak) return x.peak < y.peak;
      return x.live < y.live;
    });
    std::vector<Node> next;
    std::unordered_set<uint64_t> seen;  // the same set of operators reached twice
    for (const Child& c : children) {
      if (next.size() >= width) break;
      // The set of scheduled operators decides the future; hash it order-free.
      const uint64_t key = beam[c.parent].s.hash + set_mix(c.op);
      if (!seen.insert(key).second) continue;
      Node child = beam[c.parent];
      child.s.apply(g, c.op, opt.inplace, opt.alignment);
      for (int u : r.users[size_t(c.op)]) --child.waiting[size_t(u)];
      next.push_back(std::move(child));
    }
    beam = std::move(next);
  }
  return beam.front().s.order;
}

}  // namespace

const std::vector<std::string>& order_names() {
  static const std::vector<std::string> names = {
      "program_order", "list", "dfs", "postorder", "best_of_list_dfs_postorder", "search"};
  return names;
}

int64_t order_peak(const Graph& graph, const std::vector<int>& order, bool inplace, int64_t alignment) {
  GraphDecisions d;
  d.order = order;
  if (inplace) d.aliases = all_inplace(graph, order);
  Expected<GraphLayout> l = layout_graph(graph, d, alignment);
  return l.ok() ? l->lb_live : INT64_MAX;
}

Expected<std::vector<int>> plan_order(const std::string& name, const Graph& graph, const OrderOptions& options) {
  const int64_t a = options.alignment;
  if (name == "program_order") return program_order(graph);
  if (name == "list") return list_order(graph, options.inplace, a);
  if (name == "dfs") return dfs_order(graph, true);
  if (name == "postorder") return dfs_order(graph, false);
  if (name == "best_of_list_dfs_postorder" || name == "search") {
    std::vector<std::vector<int>> candidates = {list_order(graph, options.inplace, a), dfs_order(graph, true),
                                                dfs_order(graph, false)};
    if (name == "search") {
      candidates.push_back(program_order(graph));
      std::vector<int> fallback = candidates[0];
      candidates.push_back(search_order(graph, options, fallback));
    }
    std::vector<int> best;
    int64_t best_peak = INT64_MAX;
    for (const std::vector<int>& c : candidates) {
      const int64_t p = order_peak(graph, c, options.inplace, a);
      if (p < best_peak) {
        best_peak = p;
        best = c;
      }
    }
    return best;
  }
  std::string known;
  for (const std::string& n : order_names()) known += (known.empty() ? "" : ", ") + n;
  return invalid_argument("unknown order '" + name + "' (known: " + known + ")");
}

}  // namespace tensorgym
