// benchmark://user-v0: programs added at run time by their text, under a name the
// user picks (DatasetRegistry::add_user_benchmark).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "datasets/benchmark.h"

namespace tensorgym {

class UserDataset : public Dataset {
 public:
  static constexpr const char* kName = "benchmark://user-v0";
  // Caps: number of programs held, length of a name.
  static constexpr size_t kMaxBenchmarks = 4096;
  static constexpr size_t kMaxNameLength = 128;

  std::string name() const override { return kName; }
  std::string description() const override { return "Programs added at run time by their text"; }
  int64_t size() const override;
  std::vector<BenchmarkInfo> list(int64_t offset, int64_t limit) const override;
  Expected<Benchmark> get(std::string_view name) const override;

  // Parses `program_text` (default ProgramLimits) and adds it as `name`; returns its
  // URI, "benchmark://user-v0/<name>". Adding the same text under the same name
  // again returns the URI. Errors: INVALID_ARGUMENT for a bad name or program text
  // ("benchmark://user-v0/<name>:line:column: message"), ALREADY_EXISTS when the name
  // holds a different text, RESOURCE_EXHAUSTED past kMaxBenchmarks.
  Expected<std::string> add(std::string_view name, std::string_view program_text);

  // Names are identifier-like: letters, digits, '_', '-' and '.', starting with a
  // letter or '_', at most kMaxNameLength characters.
  static bool is_valid_name(std::string_view name);

 private:
  struct Entry {
    std::string name;
    std::string text;
    ProgramPtr program;
    std::string shape;
  };
  mutable std::mutex mu_;
  std::vector<Entry> entries_;  // in the order they were added
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace tensorgym
