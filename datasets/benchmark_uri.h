// Benchmark URIs: `scheme://dataset/name`, e.g. benchmark://ops-v0/gmm-4,
// generator://random-ops-v0/17, and `file://PATH` for a program file.
#pragma once

#include <string>
#include <string_view>

#include "support/status.h"

namespace tensorgym {

// Longest URI accepted (a file path fits).
inline constexpr size_t kMaxUriLength = 4096;

struct BenchmarkUri {
  std::string scheme;   // "benchmark", "generator", "file"; empty when not written
  std::string dataset;  // "ops-v0"; empty for file://
  std::string name;     // "gmm-4"; the path for file://

  std::string dataset_uri() const;  // "benchmark://ops-v0" (just "ops-v0" without a scheme)
  std::string to_string() const;    // "benchmark://ops-v0/gmm-4", "file:///tmp/a.tg"
};

// Splits a URI. Text without "://" ("ops-v0/gmm-4") leaves the scheme empty: the
// registry then looks the dataset up by its short name. The scheme is not checked
// against the known ones here.
// INVALID_ARGUMENT, quoting the URI and saying what was expected, when it is not of
// the form `scheme://dataset/name` (or `file://PATH`).
Expected<BenchmarkUri> parse_benchmark_uri(std::string_view uri);

// Whether `s` can be a dataset name: lower-case letters, digits, '-', '_', '.',
// starting with a letter or digit ("ops-v0").
bool is_valid_dataset_name(std::string_view s);

// The URI in single quotes for messages, bounded and escaped (support/quote.h).
std::string quote_uri(std::string_view uri);

}  // namespace tensorgym
