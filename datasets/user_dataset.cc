#include "datasets/user_dataset.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "datasets/benchmark_uri.h"

namespace tensorgym {
namespace {

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

bool UserDataset::is_valid_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  if (!is_letter(name[0]) && name[0] != '_') return false;
  for (char c : name)
    if (!is_letter(c) && !is_digit(c) && c != '_' && c != '-' && c != '.') return false;
  return true;
}

int64_t UserDataset::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return int64_t(entries_.size());
}

std::vector<BenchmarkInfo> UserDataset::list(int64_t offset, int64_t limit) const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t begin, end;
  list_range(int64_t(entries_.size()), offset, limit, &begin, &end);
  std::vector<BenchmarkInfo> out;
  for (int64_t i = begin; i < end; ++i) {
    const Entry& e = entries_[size_t(i)];
    out.push_back({std::string(kName) + "/" + e.name, e.shape});
  }
  return out;
}

Expected<Benchmark> UserDataset::get(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(std::string(name));
  if (it == index_.end()) {
    return not_found(
        fmt::format("no benchmark {} in {} (it holds the {} programs added with add_user_benchmark in this process)",
                    quote_uri(std::string(kName) + "/" + std::string(name)), kName, entries_.size()));
  }
  const Entry& e = entries_[it->second];
  e.last_used = std::chrono::steady_clock::now();
  return Benchmark{std::string(kName) + "/" + e.name, e.text, e.program, "", e.shape};
}

Status UserDataset::check_owner_room_locked(const std::string& owner, size_t text_bytes) const {
  size_t count = 0;
  int64_t bytes = 0;
  for (const Entry& e : entries_) {
    if (e.owner != owner) continue;
    ++count;
    bytes += int64_t(e.text.size());
  }
  if (count >= kMaxPerOwner)
    return resource_exhausted(fmt::format(
        "this client holds {} programs in {}, its cap; programs nobody uses are removed after a while", count, kName));
  if (bytes + int64_t(text_bytes) > kMaxBytesPerOwner)
    return resource_exhausted(
        fmt::format("this client's programs in {} hold {} bytes of text; with {} more they would pass its cap of {}",
                    kName, bytes, text_bytes, kMaxBytesPerOwner));
  return Status();
}

std::vector<std::string> UserDataset::expire_unused(std::chrono::nanoseconds idle) {
  const auto cutoff = std::chrono::steady_clock::now() - idle;
  std::vector<Entry> gone;  // destroyed outside the lock
  std::vector<std::string> names;
  std::lock_guard<std::mutex> lock(mu_);
  if (std::none_of(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.last_used < cutoff; }))
    return names;
  std::vector<Entry> kept;
  for (Entry& e : entries_) {
    if (e.last_used < cutoff) {
      names.push_back(std::string(kName) + "/" + e.name);
      gone.push_back(std::move(e));
    } else {
      kept.push_back(std::move(e));
    }
  }
  entries_ = std::move(kept);
  index_.clear();
  for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].name, i);
  return names;
}

Expected<std::string> UserDataset::add(std::string_view name, std::string_view program_text, const std::string& owner) {
  if (!is_valid_name(name)) {
    return invalid_argument(fmt::format(
        "invalid user benchmark name {}: a name has letters, digits, '_', '-' and '.', starts with a letter or '_' and "
        "has at most {} characters ('/' is not allowed)",
        quote_uri(name), kMaxNameLength));
  }
  const std::string uri = std::string(kName) + "/" + std::string(name);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(std::string(name));
    if (it != index_.end()) {
      if (entries_[it->second].text != program_text)
        return already_exists("user benchmark " + uri + " already exists with a different program text");
      entries_[it->second].last_used = std::chrono::steady_clock::now();
      return uri;
    }
    TG_RETURN_IF_ERROR(check_owner_room_locked(owner, program_text.size()));
  }
  // Parsed outside the lock: user text can be large.
  Expected<Program> parsed = parse_program(program_text);
  if (!parsed.ok()) return Status(parsed.status().code(), uri + ":" + parsed.status().message());
  Entry e{std::string(name), std::string(program_text), std::make_shared<const Program>(std::move(*parsed)), "",
          owner, std::chrono::steady_clock::now()};
  e.shape = describe_program_shapes(*e.program);

  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(e.name);
  if (it != index_.end()) {  // added by another thread meanwhile
    if (entries_[it->second].text == e.text) return uri;
    return already_exists("user benchmark " + uri + " already exists with a different program text");
  }
  TG_RETURN_IF_ERROR(check_owner_room_locked(owner, e.text.size()));  // again: it may have added meanwhile
  if (entries_.size() >= kMaxBenchmarks) {
    return resource_exhausted(
        fmt::format("cannot add {}: {} already holds {} programs, its limit", uri, kName, kMaxBenchmarks));
  }
  index_.emplace(e.name, entries_.size());
  entries_.push_back(std::move(e));
  return uri;
}

}  // namespace tensorgym
