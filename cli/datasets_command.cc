// tensorgym datasets [--endpoint HOST:PORT]
//   Lists the datasets: name, benchmark count, description.
// tensorgym benchmarks DATASET [--offset N] [--limit N] [--endpoint HOST:PORT]
//   Lists a dataset's benchmark URIs with their shapes. DATASET is a dataset URI
//   (benchmark://ops-v0) or its short name (ops-v0).
// With --endpoint the lists come from a running service, otherwise from this process.
// --json prints each list as one JSON object.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <iostream>

#include "cli/cli_common.h"
#include "cli/env_runner.h"
#include "cli/json_text.h"
#include "client/connection.h"
#include "datasets/registry.h"

namespace tensorgym::cli {
namespace {

// Rows shown for an unbounded generator when --limit is not given.
constexpr int64_t kDefaultGeneratorLimit = 20;

client::ConnectionOptions connection_options(const EndpointOptions& e) {
  client::ConnectionOptions o;
  o.endpoint = e.endpoint;
  o.auth_token_file = e.auth_token_file;
  o.tls = e.tls;
  o.tls_ca_file = e.tls_ca_file;
  o.startup_timeout_s = 10;
  return o;
}

std::shared_ptr<client::Connection> connect(const EndpointOptions& e) {
  Expected<std::shared_ptr<client::Connection>> c = client::Connection::open(connection_options(e));
  if (!c.ok()) throw CLI::RuntimeError(report_error(c.status()));
  return *c;
}

struct DatasetRow {
  std::string name;
  int64_t size = 0;
  std::string description;
};

std::vector<DatasetRow> list_datasets(const EndpointOptions& e) {
  std::vector<DatasetRow> rows;
  if (!e.remote()) {
    for (const Dataset* d : DatasetRegistry::global().datasets()) rows.push_back({d->name(), d->size(), d->description()});
    return rows;
  }
  Expected<std::vector<client::DatasetInfo>> list = connect(e)->datasets();
  if (!list.ok()) throw CLI::RuntimeError(report_error(list.status()));
  for (const client::DatasetInfo& d : *list) rows.push_back({d.name, d.size, d.description});
  return rows;
}

// The rows [offset, offset + limit) of a dataset on the service, page by page.
std::vector<BenchmarkInfo> list_remote_benchmarks(const EndpointOptions& e, const std::string& dataset,
                                                  int64_t offset, int64_t limit) {
  std::shared_ptr<client::Connection> c = connect(e);
  std::vector<BenchmarkInfo> rows;
  std::string token;
  constexpr int64_t kPage = 10000;
  for (;;) {
    const int64_t want = limit < 0 ? kPage : std::min(kPage, limit - int64_t(rows.size()));
    if (want <= 0) break;
    Expected<client::BenchmarkPage> page = c->benchmarks(dataset, int(want), token, offset);
    if (!page.ok()) throw CLI::RuntimeError(report_error(page.status()));
    for (client::BenchmarkEntry& b : page->benchmarks) rows.push_back({std::move(b.uri), std::move(b.shape)});
    token = page->next_page_token;
    if (token.empty() || (limit < 0 && int64_t(rows.size()) >= kMaxListLimit)) break;
  }
  return rows;
}

}  // namespace

void add_datasets_command(CLI::App& app) {
  auto list_endpoint = std::make_shared<EndpointOptions>();
  auto list_json = std::make_shared<bool>(false);
  CLI::App* list = app.add_subcommand("datasets", "List the datasets: name, benchmark count, description");
  list_endpoint->add_options(*list);
  list->add_flag("--json", *list_json, "Print one JSON object: {\"datasets\": [{name, size, description}]} (size -1: unbounded)");
  list->callback([list_endpoint, list_json] {
    const std::vector<DatasetRow> datasets = list_datasets(*list_endpoint);
    if (*list_json) {
      Json rows = Json::array();
      for (const DatasetRow& d : datasets) rows.push_back(Json{{"name", d.name}, {"size", d.size}, {"description", d.description}});
      std::cout << json_text(Json{{"datasets", std::move(rows)}}) << "\n";
      return;
    }
    size_t width = 0;
    for (const DatasetRow& d : datasets) width = std::max(width, d.name.size());
    for (const DatasetRow& d : datasets) {
      const std::string count = d.size < 0 ? "unbounded" : std::to_string(d.size);
      std::cout << fmt::format("{:<{}}{:<{}}{}\n", d.name, width + 2, count, std::max<size_t>(11, count.size() + 1),
                               d.description);
    }
  });

  struct Options {
    std::string dataset;
    int64_t offset = 0;
    int64_t limit = -1;
    bool json = false;
    EndpointOptions endpoint;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("benchmarks", "List the benchmark URIs of a dataset, with their shapes");
  cmd->add_option("dataset", opts->dataset, "Dataset URI (benchmark://ops-v0) or short name (ops-v0)")->required();
  cmd->add_option("--offset", opts->offset, "Skip this many benchmarks")->check(CLI::NonNegativeNumber);
  cmd->add_option("--limit", opts->limit,
                  fmt::format("List at most this many (default: all; {} for a generator; at most {})",
                              kDefaultGeneratorLimit, kMaxListLimit))
      ->check(CLI::Range(int64_t(0), kMaxListLimit));
  cmd->add_flag("--json", opts->json, "Print one JSON object: {\"dataset\": ..., \"benchmarks\": [{uri, shape}]}");
  opts->endpoint.add_options(*cmd);
  cmd->callback([opts] {
    std::vector<BenchmarkInfo> rows;
    if (opts->endpoint.remote()) {
      int64_t limit = opts->limit;
      if (limit < 0) {
        for (const DatasetRow& d : list_datasets(opts->endpoint)) {
          const size_t scheme = d.name.find("://");
          const bool same = d.name == opts->dataset ||
                            (scheme != std::string::npos && d.name.substr(scheme + 3) == opts->dataset);
          if (same && d.size < 0) limit = kDefaultGeneratorLimit;
        }
      }
      rows = list_remote_benchmarks(opts->endpoint, opts->dataset, opts->offset, limit);
    } else {
      Expected<const Dataset*> dataset = DatasetRegistry::global().find_dataset(opts->dataset);
      if (!dataset.ok()) throw CLI::RuntimeError(report_error(dataset.status()));
      int64_t limit = opts->limit;
      if (limit < 0 && (*dataset)->size() < 0) limit = kDefaultGeneratorLimit;
      rows = (*dataset)->list(opts->offset, limit);
    }
    if (opts->json) {
      Json list = Json::array();
      for (const BenchmarkInfo& b : rows) list.push_back(Json{{"uri", b.uri}, {"shape", b.shape}});
      std::cout << json_text(Json{{"dataset", opts->dataset}, {"offset", opts->offset}, {"benchmarks", std::move(list)}})
                << "\n";
      return;
    }
    size_t width = 0;
    for (const BenchmarkInfo& b : rows) width = std::max(width, b.uri.size());
    for (const BenchmarkInfo& b : rows) std::cout << fmt::format("{:<{}}{}\n", b.uri, width + 2, b.shape);
  });
}

}  // namespace tensorgym::cli
