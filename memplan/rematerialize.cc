#include "memplan/rematerialize.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace tensorgym {

namespace {

bool recomputable(const Graph& graph, const GraphTensor& t) {
  return t.kind == TensorKind::kIntermediate && t.producer >= 0 && graph.ops[size_t(t.producer)].outputs.size() == 1;
}

// The levels of producers a cone from `tensor` can take, at most `cap`.
int cone_height(const Graph& graph, int tensor, int cap) {
  if (cap <= 1) return 1;
  int height = 1;
  for (int in : graph.ops[size_t(graph.tensors[size_t(tensor)].producer)].inputs)
    if (recomputable(graph, graph.tensors[size_t(in)])) height = std::max(height, 1 + cone_height(graph, in, cap - 1));
  return height;
}

// "name@re", or "name@re2", ... where a copy of that name exists (a tensor recomputed twice).
template <typename Exists>
std::string fresh_name(const std::string& name, const Exists& exists) {
  std::string fresh = name + "@re";
  for (int n = 2; exists(fresh); ++n) fresh = fmt::format("{}@re{}", name, n);
  return fresh;
}

// Recomputes `what` in `g`, and its cone; `copies` maps each tensor this cone has
// recomputed to its copy, so that a tensor two inputs share is recomputed once.
Status recompute_into(Graph& g, const Recompute& what, std::map<int, int>& copies) {
  if (what.tensor < 0 || size_t(what.tensor) >= g.tensors.size())
    return invalid_argument(fmt::format("tensor #{} does not exist", what.tensor));
  if (what.depth < 1 || what.depth > kMaxRecomputeDepth)
    return invalid_argument(fmt::format("a recomputation's depth is 1 to {}, not {}", kMaxRecomputeDepth, what.depth));
  const GraphTensor t = g.tensors[size_t(what.tensor)];
  if (t.kind != TensorKind::kIntermediate || t.producer < 0)
    return invalid_argument("'" + t.name + "' is not an intermediate: only those are recomputed");
  if (g.ops[size_t(t.producer)].outputs.size() != 1)
    return invalid_argument("'" + t.name + "' comes from an operator with several outputs");
  if (what.from < 1 || what.from >= t.consumers.size())
    return invalid_argument(fmt::format("'{}' has {} readers: the copy may serve readers 1 to {}, not {}", t.name,
                                        t.consumers.size(), t.consumers.size() - 1, what.from));
  const int copy = g.add_tensor(fresh_name(t.name, [&](const std::string& n) { return g.find_tensor(n) >= 0; }),
                                t.shape, TensorKind::kIntermediate, t.dtype);
  int at = t.consumers[what.from];  // the copy's producer goes here
  for (size_t c = what.from; c < t.consumers.size(); ++c)
    for (int& in : g.ops[size_t(t.consumers[c])].inputs)
      if (in == what.tensor) in = copy;
  GraphOp again = g.ops[size_t(t.producer)];
  again.name = fresh_name(again.name, [&](const std::string& n) {
    return std::any_of(g.ops.begin(), g.ops.end(), [&](const GraphOp& op) { return op.name == n; });
  });
  again.outputs = {copy};
  g.ops.insert(g.ops.begin() + at, std::move(again));
  TG_RETURN_IF_ERROR(g.finalize());
  copies[what.tensor] = copy;
  if (what.depth == 1) return Status();
  std::vector<int> inputs = g.ops[size_t(at)].inputs;
  std::sort(inputs.begin(), inputs.end());
  inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
  for (int in : inputs) {
    if (auto c = copies.find(in); c != copies.end()) {  // recomputed by this cone already, before `at`
      for (int& x : g.ops[size_t(at)].inputs)
        if (x == in) x = c->second;
      TG_RETURN_IF_ERROR(g.finalize());
      continue;
    }
    if (!recomputable(g, g.tensors[size_t(in)])) continue;
    const std::vector<int>& readers = g.tensors[size_t(in)].consumers;
    const size_t from = size_t(std::find(readers.begin(), readers.end(), at) - readers.begin());
    if (from < 1 || from >= readers.size()) continue;  // the copy is its only reader: nothing lives longer
    const size_t before = g.ops.size();
    TG_RETURN_IF_ERROR(recompute_into(g, {in, from, what.depth - 1}, copies));
    at += int(g.ops.size() - before);  // the cone went in before the copy
  }
  return Status();
}

}  // namespace

std::string Recompute::describe(const Graph& graph) const {
  const GraphTensor& t = graph.tensors[size_t(tensor)];
  const size_t rest = t.consumers.size() - from - 1;
  return fmt::format("recompute {} for {}{}{}", t.name, graph.ops[size_t(t.consumers[from])].name,
                     rest ? fmt::format(" and {} more", rest) : "",
                     depth > 1 ? fmt::format(" with its inputs {} level{} up", depth - 1, depth > 2 ? "s" : "") : "");
}

std::vector<Recompute> recompute_candidates(const Graph& graph, const std::vector<int>& tensors, int max_depth) {
  std::vector<Recompute> out;
  auto consider = [&](int t) {
    const GraphTensor& gt = graph.tensors[size_t(t)];
    if (!recomputable(graph, gt)) return;
    const int height = cone_height(graph, t, std::clamp(max_depth, 1, kMaxRecomputeDepth));
    for (size_t from = 1; from < gt.consumers.size(); ++from)
      for (int depth = 1; depth <= height; ++depth) out.push_back({t, from, depth});
  };
  if (tensors.empty()) {
    for (size_t t = 0; t < graph.tensors.size(); ++t) consider(int(t));
  } else {
    for (int t : tensors) consider(t);
  }
  return out;
}

Expected<Graph> rematerialize(const Graph& graph, const Recompute& what) {
  Graph g = graph;
  std::map<int, int> copies;
  TG_RETURN_IF_ERROR(recompute_into(g, what, copies));
  return g;
}

}  // namespace tensorgym
