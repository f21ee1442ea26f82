#include "agents/serial.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>

namespace tensorgym {

std::string double_to_exact(double v) { return fmt::format("{:a}", v); }

Expected<double> double_from_exact(std::string_view s) {
  std::string t(s);
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size()) return invalid_argument("not a number: '" + t + "'");
  return v;
}

Expected<int64_t> int_from_text(std::string_view s) {
  std::string t(s);
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(t.c_str(), &end, 10);
  if (t.empty() || end != t.c_str() + t.size() || errno == ERANGE) return invalid_argument("not an integer: '" + t + "'");
  return int64_t(v);
}

void Record::put_double(std::string key, double v) { put(std::move(key), double_to_exact(v)); }

std::string Record::bytes() const {
  std::string out;
  for (const auto& [k, v] : entries_) {
    out += k;
    out += ' ';
    out += std::to_string(v.size());
    out += '\n';
    out += v;
    out += '\n';
  }
  return out;
}

Expected<Record> Record::parse(std::string_view bytes, const std::string& what) {
  Record r;
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t nl = bytes.find('\n', pos);
    if (nl == std::string_view::npos) return Status(StatusCode::kDataLoss, what + ": entry header cut short");
    std::string_view header = bytes.substr(pos, nl - pos);
    size_t sp = header.rfind(' ');
    if (sp == std::string_view::npos || sp == 0) return invalid_argument(what + ": malformed entry header");
    Expected<int64_t> size = int_from_text(header.substr(sp + 1));
    if (!size.ok() || *size < 0) return invalid_argument(what + ": malformed entry size");
    size_t start = nl + 1;
    if (start + size_t(*size) + 1 > bytes.size() || bytes[start + size_t(*size)] != '\n')
      return Status(StatusCode::kDataLoss, what + ": entry '" + std::string(header.substr(0, sp)) + "' cut short");
    r.entries_.emplace_back(std::string(header.substr(0, sp)), std::string(bytes.substr(start, size_t(*size))));
    pos = start + size_t(*size) + 1;
  }
  return r;
}

bool Record::has(std::string_view key) const {
  for (const auto& e : entries_)
    if (e.first == key) return true;
  return false;
}

Expected<std::string> Record::get(std::string_view key) const {
  for (const auto& e : entries_)
    if (e.first == key) return e.second;
  return not_found("checkpoint has no '" + std::string(key) + "'");
}

std::vector<std::string> Record::get_all(std::string_view key) const {
  std::vector<std::string> out;
  for (const auto& e : entries_)
    if (e.first == key) out.push_back(e.second);
  return out;
}

Expected<int64_t> Record::get_int(std::string_view key) const {
  TG_ASSIGN_OR_RETURN(std::string v, get(key));
  return int_from_text(v);
}

Expected<uint64_t> Record::get_u64(std::string_view key) const {
  TG_ASSIGN_OR_RETURN(std::string v, get(key));
  char* end = nullptr;
  unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || end != v.c_str() + v.size()) return invalid_argument("not an unsigned integer: '" + v + "'");
  return uint64_t(x);
}

Expected<double> Record::get_double(std::string_view key) const {
  TG_ASSIGN_OR_RETURN(std::string v, get(key));
  return double_from_exact(v);
}

Expected<bool> Record::get_bool(std::string_view key) const {
  for (const auto& e : entries_) {
    if (e.first != key) continue;
    if (e.second == "1") return true;
    if (e.second == "0") return false;
    return invalid_argument("not a boolean: '" + e.second + "'");
  }
  return not_found("checkpoint has no '" + std::string(key) + "'");
}

}  // namespace tensorgym
