// A small self-delimiting key/value format for checkpoints: a sequence of
//   KEY SIZE\n BYTES\n
// entries, values being any bytes (nested records included). Numbers are written
// exactly: integers in decimal, doubles as hexadecimal floats, so a state written and
// read back is bit-identical.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/status.h"

namespace tensorgym {

class Record {
 public:
  void put(std::string key, std::string value) { entries_.emplace_back(std::move(key), std::move(value)); }
  void put_int(std::string key, int64_t v) { put(std::move(key), std::to_string(v)); }
  void put_u64(std::string key, uint64_t v) { put(std::move(key), std::to_string(v)); }
  void put_double(std::string key, double v);
  void put_bool(std::string key, bool v) { put(std::move(key), v ? "1" : "0"); }

  std::string bytes() const;
  // INVALID_ARGUMENT / DATA_LOSS naming `what` when the bytes are not a record.
  static Expected<Record> parse(std::string_view bytes, const std::string& what = "record");

  bool has(std::string_view key) const;
  // The first value of `key`; NOT_FOUND naming it when absent.
  Expected<std::string> get(std::string_view key) const;
  std::vector<std::string> get_all(std::string_view key) const;
  Expected<int64_t> get_int(std::string_view key) const;
  Expected<uint64_t> get_u64(std::string_view key) const;
  Expected<double> get_double(std::string_view key) const;
  Expected<bool> get_bool(std::string_view key) const;

  const std::vector<std::pair<std::string, std::string>>& entries() const { return entries_; }

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
};

// Exact text forms of numbers (shared by agents that serialize their own state).
std::string double_to_exact(double v);
Expected<double> double_from_exact(std::string_view s);
Expected<int64_t> int_from_text(std::string_view s);

}  // namespace tensorgym
