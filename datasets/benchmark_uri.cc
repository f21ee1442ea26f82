#include "datasets/benchmark_uri.h"

#include <fmt/format.h>

#include "support/quote.h"

namespace tensorgym {
namespace {

constexpr std::string_view kSeparator = "://";

bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// RFC 3986 scheme, lower case only: a letter, then letters, digits, '+', '-', '.'.
bool valid_scheme(std::string_view s) {
  if (s.empty() || !(s[0] >= 'a' && s[0] <= 'z')) return false;
  for (char c : s)
    if (!is_lower_alnum(c) && c != '+' && c != '-' && c != '.') return false;
  return true;
}

// Printable ASCII without spaces.
bool valid_name_chars(std::string_view s) {
  for (char c : s)
    if (c <= ' ' || c >= 127) return false;
  return true;
}

Status malformed(std::string_view uri, const std::string& what) {
  return invalid_argument("malformed benchmark URI " + quote_uri(uri) + ": " + what +
                          " (expected scheme://dataset/name, e.g. benchmark://ops-v0/gmm-1, "
                          "generator://random-ops-v0/7 or file:///path/to/program.tg)");
}

}  // namespace

bool is_valid_dataset_name(std::string_view s) {
  if (s.empty() || !is_lower_alnum(s[0])) return false;
  for (char c : s)
    if (!is_lower_alnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

std::string BenchmarkUri::dataset_uri() const {
  return scheme.empty() ? dataset : scheme + std::string(kSeparator) + dataset;
}

std::string BenchmarkUri::to_string() const {
  if (dataset.empty()) return scheme + std::string(kSeparator) + name;  // file://
  return dataset_uri() + "/" + name;
}

std::string quote_uri(std::string_view uri) { return quote_text(uri); }

Expected<BenchmarkUri> parse_benchmark_uri(std::string_view uri) {
  if (uri.empty()) return malformed(uri, "it is empty");
  if (uri.size() > kMaxUriLength) {
    return malformed(uri, fmt::format("it is {} bytes long, over the limit of {}", uri.size(), kMaxUriLength));
  }
  BenchmarkUri out;
  std::string_view rest;
  const size_t sep = uri.find(kSeparator);
  if (sep == std::string_view::npos) {
    rest = uri;
  } else {
    std::string_view scheme = uri.substr(0, sep);
    if (!valid_scheme(scheme)) {
      return malformed(uri, scheme.empty() ? "the scheme before '://' is missing"
                                           : "the scheme " + quote_uri(scheme) + " is not a lower-case scheme name");
    }
    out.scheme = std::string(scheme);
    rest = uri.substr(sep + kSeparator.size());
  }
  if (out.scheme == "file") {
    if (rest.empty()) return malformed(uri, "the file path is missing");
    for (char c : rest)
      if (static_cast<unsigned char>(c) < ' ' || c == 127) return malformed(uri, "the path has a control character");
    out.name = std::string(rest);
    return out;
  }
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) {
    return malformed(uri, rest.empty() ? "the dataset and benchmark names are missing"
                                       : "the benchmark name is missing after the dataset " + quote_uri(rest));
  }
  std::string_view dataset = rest.substr(0, slash);
  std::string_view name = rest.substr(slash + 1);
  if (dataset.empty()) return malformed(uri, "the dataset name is missing");
  if (!is_valid_dataset_name(dataset)) {
    return malformed(uri, "the dataset name " + quote_uri(dataset) +
                              " is not one (lower-case letters, digits, '-', '_' and '.')");
  }
  if (name.empty()) return malformed(uri, "the benchmark name after " + quote_uri(dataset) + "/ is missing");
  if (!valid_name_chars(name)) return malformed(uri, "the benchmark name has a space or a control character");
  out.dataset = std::string(dataset);
  out.name = std::string(name);
  return out;
}

}  // namespace tensorgym
