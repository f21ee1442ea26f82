#include "memplan/rematerialize.h"

#include <fmt/format.h>

namespace tensorgym {

std::string Recompute::describe(const Graph& graph) const {
  const GraphTensor& t = graph.tensors[size_t(tensor)];
  const size_t rest = t.consumers.size() - from - 1;
  return fmt::format("recompute {} for {}{}", t.name, graph.ops[size_t(t.consumers[from])].name,
                     rest ? fmt::format(" and {} more", rest) : "");
}

std::vector<Recompute> recompute_candidates(const Graph& graph, const std::vector<int>& tensors) {
  std::vector<Recompute> out;
  auto consider = [&](int t) {
    const GraphTensor& gt = graph.tensors[size_t(t)];
    if (gt.kind != TensorKind::kIntermediate || gt.producer < 0) return;
    if (graph.ops[size_t(gt.producer)].outputs.size() != 1) return;
    for (size_t from = 1; from < gt.consumers.size(); ++from) out.push_back({t, from});
  };
  if (tensors.empty()) {
    for (size_t t = 0; t < graph.tensors.size(); ++t) consider(int(t));
  } else {
    for (int t : tensors) consider(t);
  }
  return out;
}

Expected<Graph> rematerialize(const Graph& graph, const Recompute& what) {
  if (what.tensor < 0 || size_t(what.tensor) >= graph.tensors.size())
    return invalid_argument(fmt::format("tensor #{} does not exist", what.tensor));
  const GraphTensor& t = graph.tensors[size_t(what.tensor)];
  if (t.kind != TensorKind::kIntermediate || t.producer < 0)
    return invalid_argument("'" + t.name + "' is not an intermediate: only those are recomputed");
  if (graph.ops[size_t(t.producer)].outputs.size() != 1)
    return invalid_argument("'" + t.name + "' comes from an operator with several outputs");
  if (what.from < 1 || what.from >= t.consumers.size())
    return invalid_argument(fmt::format("'{}' has {} readers: the copy may serve readers 1 to {}, not {}", t.name,
                                        t.consumers.size(), t.consumers.size() - 1, what.from));
  Graph g = graph;
  const int copy = g.add_tensor(t.name + "@re", t.shape, TensorKind::kIntermediate, t.dtype);
  const int first_reader = t.consumers[what.from];
  for (size_t c = what.from; c < t.consumers.size(); ++c)
    for (int& in : g.ops[size_t(t.consumers[c])].inputs)
      if (in == what.tensor) in = copy;
  GraphOp again = graph.ops[size_t(t.producer)];
  again.name += "@re";
  again.outputs = {copy};
  g.ops.insert(g.ops.begin() + first_reader, std::move(again));
  TG_RETURN_IF_ERROR(g.finalize());
  return g;
}

}  // namespace tensorgym
