// tensorgym datasets
//   Lists the datasets: name, benchmark count, description.
// tensorgym benchmarks DATASET [--offset N] [--limit N]
//   Lists a dataset's benchmark URIs with their shapes. DATASET is a dataset URI
//   (benchmark://ops-v0) or its short name (ops-v0).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <iostream>

#include "client/cli/cli_common.h"
#include "datasets/registry.h"

namespace tensorgym::cli {
namespace {

// Rows shown for an unbounded generator when --limit is not given.
constexpr int64_t kDefaultGeneratorLimit = 20;

}  // namespace

void add_datasets_command(CLI::App& app) {
  CLI::App* list = app.add_subcommand("datasets", "List the datasets: name, benchmark count, description");
  list->callback([] {
    const std::vector<const Dataset*> datasets = DatasetRegistry::global().datasets();
    size_t width = 0;
    for (const Dataset* d : datasets) width = std::max(width, d->name().size());
    for (const Dataset* d : datasets) {
      const int64_t n = d->size();
      const std::string count = n < 0 ? "unbounded" : std::to_string(n);
      std::cout << d->name() << std::string(width + 2 - d->name().size(), ' ') << count
                << std::string(count.size() < 11 ? 11 - count.size() : 1, ' ') << d->description() << "\n";
    }
  });

  struct Options {
    std::string dataset;
    int64_t offset = 0;
    int64_t limit = -1;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("benchmarks", "List the benchmark URIs of a dataset, with their shapes");
  cmd->add_option("dataset", opts->dataset, "Dataset URI (benchmark://ops-v0) or short name (ops-v0)")->required();
  cmd->add_option("--offset", opts->offset, "Skip this many benchmarks")->check(CLI::NonNegativeNumber);
  cmd->add_option("--limit", opts->limit,
                  "List at most this many (default: all; " + std::to_string(kDefaultGeneratorLimit) +
                      " for a generator; at most " + std::to_string(kMaxListLimit) + ")")
      ->check(CLI::Range(int64_t(0), kMaxListLimit));
  cmd->callback([opts] {
    Expected<const Dataset*> dataset = DatasetRegistry::global().find_dataset(opts->dataset);
    if (!dataset.ok()) throw CLI::RuntimeError(report_error(dataset.status()));
    int64_t limit = opts->limit;
    if (limit < 0 && (*dataset)->size() < 0) limit = kDefaultGeneratorLimit;
    const std::vector<BenchmarkInfo> rows = (*dataset)->list(opts->offset, limit);
    size_t width = 0;
    for (const BenchmarkInfo& b : rows) width = std::max(width, b.uri.size());
    for (const BenchmarkInfo& b : rows) {
      std::cout << b.uri << std::string(width + 2 - b.uri.size(), ' ') << b.shape << "\n";
    }
  });
}

}  // namespace tensorgym::cli
