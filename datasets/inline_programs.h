// benchmark://inline-v0: programs sent as text inside batch jobs (Evaluate), named by
// the SHA-256 of their text. A cache, not a store: past its byte budget the least
// recently used programs go first, except those a running job holds (a Pin). When
// every byte is held by running jobs, adding is UNAVAILABLE: a condition to retry,
// never a malformed job. It lists nothing, so no client can enumerate another's
// programs, and it never takes benchmark://user-v0's slots.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "datasets/benchmark.h"

namespace tensorgym {

class InlinePrograms final : public Dataset {
 public:
  static constexpr const char* kName = "benchmark://inline-v0";
  static constexpr int64_t kDefaultBudgetBytes = int64_t(256) << 20;

  explicit InlinePrograms(int64_t budget_bytes = kDefaultBudgetBytes) : budget_bytes_(budget_bytes) {}

  std::string name() const override { return kName; }
  std::string description() const override {
    return "Programs sent as text in batch jobs, by the SHA-256 of their text (a cache; not listed)";
  }
  int64_t size() const override { return 0; }  // nothing is listed
  std::vector<BenchmarkInfo> list(int64_t, int64_t) const override { return {}; }
  // By the hex SHA-256 of the text; NOT_FOUND once evicted.
  Expected<Benchmark> get(std::string_view name) const override;

  // While a Pin lives its program stays cached.
  struct Pin {
    std::string uri;                     // "benchmark://inline-v0/<sha256 hex>"
    std::shared_ptr<const Program> program;
    std::shared_ptr<const void> hold;
  };
  // Parses (or finds) `text` with the default ProgramLimits. INVALID_ARGUMENT
  // "line:column: ..." for text that does not parse; RESOURCE_EXHAUSTED for a text
  // larger than the whole budget; UNAVAILABLE when the budget is held by running jobs.
  Expected<Pin> add(std::string_view text);

  // What an entry is charged: its text, and about as much again for the parsed program.
  static int64_t charge(std::string_view text) { return 2 * int64_t(text.size()) + 1024; }
  int64_t bytes() const;
  int64_t entries() const;

 private:
  struct Entry {
    std::string key;
    std::string text;
    ProgramPtr program;
    std::string shape;
    int64_t bytes = 0;
    std::weak_ptr<const void> held;  // alive while a Pin holds it
  };
  using Lru = std::list<std::shared_ptr<Entry>>;  // most recent first
  // Evicts unheld entries, oldest first, until `need` more bytes fit; false if they cannot.
  bool make_room_locked(int64_t need);
  Pin pin_locked(const std::shared_ptr<Entry>& e);

  const int64_t budget_bytes_;
  mutable std::mutex mu_;
  mutable Lru lru_;
  std::unordered_map<std::string, Lru::iterator> index_;
  int64_t bytes_ = 0;
};

}  // namespace tensorgym
