#include "datasets/graphs.h"

#include <fmt/format.h>

#include <mutex>

#include "datasets/benchmark_uri.h"
#include "datasets/lifetimes_csv.h"
#include "datasets/onnx_import.h"

namespace tensorgym {
namespace {

constexpr const char* kDatasetUri = "benchmark://graphs-v0";

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool parse_u64(std::string_view s, uint64_t* v) {
  if (s.empty() || s.size() > 19 || (s.size() > 1 && s[0] == '0')) return false;
  uint64_t x = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    x = x * 10 + uint64_t(c - '0');
  }
  *v = x;
  return true;
}

// Largest input sizes accepted (every size a request controls has a cap).
constexpr uint64_t kMaxImageSize = 1024;
constexpr uint64_t kMaxSequence = 4096;

Expected<Graph> generate(std::string_view full_uri, std::string_view name) {
  uint64_t size = 0;
  const size_t at = name.find('@');
  std::string_view base = name.substr(0, at);
  if (at != std::string_view::npos && !parse_u64(name.substr(at + 1), &size))
    return invalid_argument("benchmark URI " + quote_uri(full_uri) + ": the size after '@' must be a positive integer");
  const bool is_bert = base.rfind("bert_base_", 0) == 0;
  if (at != std::string_view::npos && (size == 0 || size > (is_bert ? kMaxSequence : kMaxImageSize)))
    return invalid_argument(fmt::format("benchmark URI {}: the size must be in 1..{}", quote_uri(full_uri),
                                        is_bert ? kMaxSequence : kMaxImageSize));
  if (base == "mobilenet_v2") {
    if (size && size < 32) return invalid_argument("mobilenet_v2 needs an input size of at least 32");
    return mobilenet_v2_graph(int64_t(size));
  }
  if (base == "resnet50") {
    if (size && size < 32) return invalid_argument("resnet50 needs an input size of at least 32");
    return resnet50_graph(int64_t(size));
  }
  if (base == "inception_v3") {
    if (size && size < 75) return invalid_argument("inception_v3 needs an input size of at least 75");
    return inception_v3_graph(int64_t(size));
  }
  if (base == "bert_base_128" || base == "bert_base_384") {
    return bert_base_graph(size ? int64_t(size) : (base == "bert_base_128" ? 128 : 384));
  }
  // The seeded families: PREFIX<seed>.
  for (const auto& [prefix, generator] : {std::pair{std::string_view("randwire_ws_"), &randwire_ws_graph},
                                          std::pair{std::string_view("mixed_"), &mixed_graph}}) {
    if (base.rfind(prefix, 0) != 0) continue;
    uint64_t seed = 0;
    if (!parse_u64(base.substr(prefix.size()), &seed))
      return not_found(fmt::format("benchmark URI {}: {}<seed> needs a decimal seed", quote_uri(full_uri), prefix));
    if (size && size < 32)
      return invalid_argument(fmt::format("{} needs an input size of at least 32", prefix.substr(0, prefix.size() - 1)));
    return generator(seed, int64_t(size));
  }
  std::string known;
  for (const std::string& n : graphs_v0_names()) known += (known.empty() ? "" : ", ") + n;
  return not_found("no graph " + quote_uri(full_uri) + " in " + kDatasetUri + " (the graphs are " + known +
                   ", randwire_ws_<seed>, mixed_<seed>; add @SIZE for another input size)");
}

class GraphsDataset : public Dataset {
 public:
  std::string name() const override { return kDatasetUri; }
  std::string description() const override {
    return "model graphs for memory planning (memory-v0, tensorgym memplan): MobileNetV2, ResNet-50, BERT-base, "
           "Inception-v3, randomly wired networks, random mixed-block networks";
  }
  // Unbounded: randwire_ws_<seed> and mixed_<seed> are families, one graph per seed.
  int64_t size() const override { return -1; }
  std::vector<BenchmarkInfo> list(int64_t offset, int64_t limit) const override {
    int64_t begin = 0, end = 0;
    list_range(size(), offset, limit, &begin, &end);
    static const std::vector<std::string> fixed = {"mobilenet_v2", "resnet50", "bert_base_128", "bert_base_384",
                                                   "inception_v3"};
    static const std::vector<std::string> shapes = {"image 1x3x224x224", "image 1x3x224x224", "sequence 128",
                                                    "sequence 384", "image 1x3x299x299"};
    std::vector<BenchmarkInfo> out;
    for (int64_t i = begin; i < end; ++i) {
      if (i < int64_t(fixed.size())) {
        out.push_back({name() + "/" + fixed[size_t(i)], shapes[size_t(i)]});
      } else {  // the two families, interleaved
        const int64_t k = i - int64_t(fixed.size()), seed = k / 2;
        if (k % 2 == 0) {
          out.push_back(
              {fmt::format("{}/randwire_ws_{}", name(), seed), fmt::format("image 1x3x224x224, seed {}", seed)});
        } else {
          out.push_back({fmt::format("{}/mixed_{}", name(), seed), fmt::format("image 1x3x128x128, seed {}", seed)});
        }
      }
    }
    return out;
  }
  Expected<Benchmark> get(std::string_view n) const override {
    return invalid_argument("benchmark://graphs-v0/" + std::string(n) +
                            " is a model graph for memory planning, not a tensor program: use the memory-v0 "
                            "environment or `tensorgym memplan`");
  }
};

}  // namespace

const std::vector<std::string>& graphs_v0_names() {
  static const std::vector<std::string> names = {"mobilenet_v2",  "resnet50",     "bert_base_128",
                                                 "bert_base_384", "inception_v3", "randwire_ws_0"};
  return names;
}

std::unique_ptr<Dataset> make_graphs_dataset() { return std::make_unique<GraphsDataset>(); }

bool is_graph_uri(std::string_view uri) {
  if (uri.rfind("file://", 0) == 0) return ends_with(uri, ".onnx") || ends_with(uri, ".csv");
  return uri.rfind("benchmark://graphs-v0/", 0) == 0 || uri.rfind("graphs-v0/", 0) == 0;
}

Expected<GraphBenchmark> resolve_graph(std::string_view uri_text, const FileAccess& files) {
  TG_ASSIGN_OR_RETURN(BenchmarkUri uri, parse_benchmark_uri(uri_text));
  GraphBenchmark out;
  if (uri.scheme == "file") {
    out.uri = "file://" + uri.name;
    if (ends_with(uri.name, ".csv")) {
      TG_ASSIGN_OR_RETURN(Instance inst, load_lifetimes_csv(uri.name, files));
      out.instance = std::make_shared<const Instance>(std::move(inst));
      return out;
    }
    if (ends_with(uri.name, ".onnx")) {
      TG_ASSIGN_OR_RETURN(Graph g, import_onnx_file(uri.name, files));
      out.graph = std::make_shared<const Graph>(std::move(g));
      return out;
    }
    return invalid_argument("file benchmark " + quote_uri(uri_text) +
                            " is not a graph: memory planning reads .onnx models and .csv lifetimes");
  }
  if ((!uri.scheme.empty() && uri.scheme != "benchmark") || uri.dataset != "graphs-v0")
    return invalid_argument("benchmark URI " + quote_uri(uri_text) +
                            " is not a graph benchmark (expected benchmark://graphs-v0/NAME, file:///path/model.onnx "
                            "or file:///path/lifetimes.csv)");
  out.uri = std::string(kDatasetUri) + "/" + uri.name;
  TG_ASSIGN_OR_RETURN(Graph g, generate(uri_text, uri.name));
  out.graph = std::make_shared<const Graph>(std::move(g));
  return out;
}

}  // namespace tensorgym
