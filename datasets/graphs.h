// Graph benchmarks for memory planning (memory-v0, `tensorgym memplan`). They are
// model graphs or offset-only instances, not tensor programs, so they resolve through
// resolve_graph() rather than DatasetRegistry::resolve(), which rejects them with a
// message saying so (schedule-v0 therefore refuses them).
//
//   benchmark://graphs-v0/NAME[@SIZE]  generated model graphs (fp32, batch 1):
//       mobilenet_v2 (224), resnet50 (224), bert_base_128, bert_base_384,
//       inception_v3 (299), randwire_ws_<seed> (224), mixed_<seed> (128). `@SIZE`
//       replaces the input size (the image side, or BERT's sequence length), e.g.
//       resnet50@64.
//   file:///path/model.onnx             an ONNX model (datasets/onnx_import.h)
//   file:///path/instance.csv           an offset-only instance, `id,lower,upper,size`
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/benchmark.h"
#include "datasets/file_access.h"
#include "memplan/graph.h"
#include "memplan/instance.h"

namespace tensorgym {

struct GraphBenchmark {
  std::string uri;
  std::shared_ptr<const Graph> graph;        // a model graph, or
  std::shared_ptr<const Instance> instance;  // an offset-only instance
  bool is_graph() const { return graph != nullptr; }
};

// A graph benchmark by URI; file:// URIs are read through `files` (the registry's
// FileAccess where a server resolves them).
Expected<GraphBenchmark> resolve_graph(std::string_view uri, const FileAccess& files = FileAccess::any());

// Whether a URI names a graph benchmark (graphs-v0, or a file ending in .onnx/.csv).
bool is_graph_uri(std::string_view uri);

// The generators. `size` <= 0 means the model's standard input size.
Expected<Graph> mobilenet_v2_graph(int64_t size = 0);
Expected<Graph> resnet50_graph(int64_t size = 0);
Expected<Graph> bert_base_graph(int64_t sequence, int64_t layers = 12);
Expected<Graph> inception_v3_graph(int64_t size = 0);
// Randomly wired network (Xie et al., 2019, small regime): three stages of 32 nodes
// wired by a Watts-Strogatz graph (K = 4, P = 0.75) drawn from `seed`.
Expected<Graph> randwire_ws_graph(uint64_t seed, int64_t size = 0);
// Random but realistic graphs for training (datasets/graphs_mixed.cc): stages of
// residual, branchy and attention blocks drawn from `seed`.
Expected<Graph> mixed_graph(uint64_t seed, int64_t size = 0);

// The named graphs of graphs-v0 (randwire_ws_0 stands for its family).
const std::vector<std::string>& graphs_v0_names();

// benchmark://graphs-v0 for listings; get() explains that graphs are for memory-v0.
std::unique_ptr<Dataset> make_graphs_dataset();

}  // namespace tensorgym
