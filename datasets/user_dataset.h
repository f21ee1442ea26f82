// benchmark://user-v0: programs added at run time by their text, under a name the
// user picks (DatasetRegistry::add_user_benchmark). Each program belongs to the client
// that added it (an owner key; "" in-process): a client holds at most
// kMaxPerOwner programs and kMaxBytesPerOwner bytes of text, and a server ends
// programs nobody used for a while (expire_unused), so that no client fills it for all.
#pragma once

#include <chrono>
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
  // Caps: number of programs held, length of a name, and per owner the programs and
  // the bytes of their text.
  static constexpr size_t kMaxBenchmarks = 4096;
  static constexpr size_t kMaxNameLength = 128;
  static constexpr size_t kMaxPerOwner = 256;
  static constexpr int64_t kMaxBytesPerOwner = int64_t(64) << 20;

  std::string name() const override { return kName; }
  std::string description() const override { return "Programs added at run time by their text"; }
  int64_t size() const override;
  std::vector<BenchmarkInfo> list(int64_t offset, int64_t limit) const override;
  Expected<Benchmark> get(std::string_view name) const override;

  // Parses `program_text` (default ProgramLimits) and adds it as `name`; returns its
  // URI, "benchmark://user-v0/<name>". Adding the same text under the same name
  // again returns the URI. Errors: INVALID_ARGUMENT for a bad name or program text
  // ("benchmark://user-v0/<name>:line:column: message"), ALREADY_EXISTS when the name
  // holds a different text, RESOURCE_EXHAUSTED past kMaxBenchmarks or the owner's caps.
  Expected<std::string> add(std::string_view name, std::string_view program_text, const std::string& owner = "");

  // Removes the programs not added or resolved for longer than `idle`; their names.
  // (A session that holds one keeps its program.)
  std::vector<std::string> expire_unused(std::chrono::nanoseconds idle);

  // Names are identifier-like: letters, digits, '_', '-' and '.', starting with a
  // letter or '_', at most kMaxNameLength characters.
  static bool is_valid_name(std::string_view name);

 private:
  struct Entry {
    std::string name;
    std::string text;
    ProgramPtr program;
    std::string shape;
    std::string owner;
    mutable std::chrono::steady_clock::time_point last_used;
  };
  Status check_owner_room_locked(const std::string& owner, size_t text_bytes) const;

  mutable std::mutex mu_;
  std::vector<Entry> entries_;  // in the order they were added
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace tensorgym
