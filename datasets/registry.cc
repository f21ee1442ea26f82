#include "datasets/registry.h"

#include <mutex>
#include <utility>

#include "datasets/benchmark_uri.h"
#include "datasets/graphs.h"
#include "datasets/suites.h"
#include "support/quote.h"

namespace tensorgym {
namespace {

constexpr std::string_view kSeparator = "://";

// "ops-v0" of "benchmark://ops-v0".
std::string_view short_name(std::string_view dataset_uri) {
  const size_t sep = dataset_uri.find(kSeparator);
  return sep == std::string_view::npos ? dataset_uri : dataset_uri.substr(sep + kSeparator.size());
}

std::string_view scheme_of(std::string_view dataset_uri) {
  const size_t sep = dataset_uri.find(kSeparator);
  return sep == std::string_view::npos ? std::string_view() : dataset_uri.substr(0, sep);
}

}  // namespace

DatasetRegistry::DatasetRegistry() {
  datasets_.push_back(make_ops_dataset());
  datasets_.push_back(make_ops_heldout_dataset());
  datasets_.push_back(make_resnet50_dataset());
  datasets_.push_back(make_bert_dataset());
  datasets_.push_back(make_mobilenetv2_dataset());
  datasets_.push_back(make_fpga_dataset());
  datasets_.push_back(make_random_ops_dataset());
  datasets_.push_back(make_graphs_dataset());  // model graphs: listed here, resolved by resolve_graph()
  auto user = std::make_unique<UserDataset>();
  user_ = user.get();
  datasets_.push_back(std::move(user));
  auto inline_programs = std::make_unique<InlinePrograms>();
  inline_ = inline_programs.get();
  datasets_.push_back(std::move(inline_programs));
}

DatasetRegistry::~DatasetRegistry() = default;

DatasetRegistry& DatasetRegistry::global() {
  static DatasetRegistry* registry = new DatasetRegistry();  // never destroyed: used until exit
  return *registry;
}

std::vector<const Dataset*> DatasetRegistry::datasets() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::vector<const Dataset*> out;
  for (const auto& d : datasets_) out.push_back(d.get());
  return out;
}

Expected<const Dataset*> DatasetRegistry::find_dataset(std::string_view name) const {
  const bool has_scheme = name.find(kSeparator) != std::string_view::npos;
  std::string_view wanted = name;
  if (!wanted.empty() && wanted.back() == '/') wanted.remove_suffix(1);
  std::shared_lock<std::shared_mutex> lock(mu_);
  for (const auto& d : datasets_) {
    const std::string n = d->name();
    if (has_scheme ? n == wanted : short_name(n) == wanted) return d.get();
  }
  std::string known;
  for (const auto& d : datasets_) known += (known.empty() ? "" : ", ") + d->name();
  return not_found("unknown dataset " + quote_uri(name) + " (the datasets are " + known + ")");
}

Expected<Benchmark> DatasetRegistry::resolve(std::string_view uri_text) const {
  TG_ASSIGN_OR_RETURN(BenchmarkUri uri, parse_benchmark_uri(uri_text));
  if (uri.scheme == "file") {
    if (is_graph_uri(uri_text))
      return invalid_argument("benchmark URI " + quote_uri(uri_text) +
                              " is a graph for memory planning, not a tensor program: use the memory-v0 "
                              "environment or `tensorgym memplan`");
    return files_.load(uri.name, files_access_);
  }

  std::shared_lock<std::shared_mutex> lock(mu_);
  if (!uri.scheme.empty()) {
    bool known_scheme = false;
    std::string schemes;
    for (const auto& d : datasets_) {
      const std::string n = d->name();
      const std::string_view s = scheme_of(n);
      if (s == uri.scheme) known_scheme = true;
      const std::string s_uri = std::string(s) + std::string(kSeparator);
      if (schemes.find(s_uri) == std::string::npos) schemes += s_uri + ", ";
    }
    if (!known_scheme) {
      return invalid_argument("unknown scheme " + quote_text(uri.scheme) + " in benchmark URI " + quote_uri(uri_text) +
                              " (expected " + schemes + "or file://)");
    }
  }
  const Dataset* dataset = nullptr;
  const Dataset* other_scheme = nullptr;  // the same short name under another scheme
  for (const auto& d : datasets_) {
    const std::string n = d->name();
    if (short_name(n) != uri.dataset) continue;
    if (uri.scheme.empty() || scheme_of(n) == uri.scheme) {
      dataset = d.get();
      break;
    }
    other_scheme = d.get();
  }
  if (!dataset) {
    if (other_scheme) {
      return not_found("no dataset " + quote_uri(uri.dataset_uri()) + " for benchmark URI " + quote_uri(uri_text) +
                       " (did you mean " + other_scheme->name() + "/" + uri.name + "?)");
    }
    std::string known;
    for (const auto& d : datasets_) known += (known.empty() ? "" : ", ") + d->name();
    return not_found("unknown dataset " + quote_uri(uri.dataset_uri()) + " in benchmark URI " + quote_uri(uri_text) +
                     " (the datasets are " + known + ")");
  }
  lock.unlock();  // datasets are never removed; get() may parse
  return dataset->get(uri.name);
}

Expected<std::string> DatasetRegistry::add_user_benchmark(std::string_view name, std::string_view program_text,
                                                          const std::string& owner) {
  return user_->add(name, program_text, owner);
}

Status DatasetRegistry::add_dataset(std::unique_ptr<Dataset> dataset) {
  const std::string name = dataset->name();
  const std::string_view scheme = scheme_of(name);
  if (scheme.empty() || scheme == "file" || !is_valid_dataset_name(short_name(name))) {
    return invalid_argument("cannot register dataset " + quote_uri(name) +
                            ": its name must be scheme://name, e.g. benchmark://my-suite-v0");
  }
  std::unique_lock<std::shared_mutex> lock(mu_);
  for (const auto& d : datasets_) {
    if (d->name() == name) return already_exists("dataset " + name + " is already registered");
  }
  datasets_.push_back(std::move(dataset));
  return Status();
}

}  // namespace tensorgym
