#include "datasets/inline_programs.h"

#include <fmt/format.h>

#include "datasets/benchmark_uri.h"
#include "support/sha256.h"

namespace tensorgym {

Expected<Benchmark> InlinePrograms::get(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(std::string(name));
  if (it == index_.end())
    return not_found("no benchmark " + quote_uri(std::string(kName) + "/" + std::string(name)) +
                     ": programs sent in jobs are cached by their hash, and this one is not (or no longer) cached; "
                     "send its text again");
  lru_.splice(lru_.begin(), lru_, it->second);
  const Entry& e = **it->second;
  return Benchmark{std::string(kName) + "/" + e.key, e.text, e.program, "", e.shape};
}

InlinePrograms::Pin InlinePrograms::pin_locked(const std::shared_ptr<Entry>& e) {
  std::shared_ptr<const void> hold = e->held.lock();
  if (!hold) {
    hold = std::make_shared<char>(0);
    e->held = hold;
  }
  return Pin{std::string(kName) + "/" + e->key, e->program, std::move(hold)};
}

bool InlinePrograms::make_room_locked(int64_t need) {
  for (auto it = lru_.end(); bytes_ + need > budget_bytes_ && it != lru_.begin();) {
    --it;
    if (!(*it)->held.expired()) continue;  // a running job holds it
    bytes_ -= (*it)->bytes;
    index_.erase((*it)->key);
    it = lru_.erase(it);
  }
  return bytes_ + need <= budget_bytes_;
}

Expected<InlinePrograms::Pin> InlinePrograms::add(std::string_view text) {
  const std::string key = sha256_hex(text);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return pin_locked(*it->second);
    }
  }
  const int64_t bytes = charge(text);
  if (bytes > budget_bytes_)
    return resource_exhausted(fmt::format(
        "a program of {} bytes does not fit the {}-byte cache of programs sent in jobs", text.size(), budget_bytes_));
  // Parsed outside the lock: a text can be large.
  Expected<Program> parsed = parse_program(text);
  if (!parsed.ok()) return parsed.status();
  auto e = std::make_shared<Entry>();
  e->key = key;
  e->text = std::string(text);
  e->program = std::make_shared<const Program>(std::move(*parsed));
  e->shape = describe_program_shapes(*e->program);
  e->bytes = bytes;

  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it != index_.end()) return pin_locked(*it->second);  // another job added it meanwhile
  if (!make_room_locked(bytes))
    return Status(StatusCode::kUnavailable,
                  fmt::format("the cache of programs sent in jobs is full of programs that running jobs hold ({} of {} "
                              "bytes); retry the job",
                              bytes_, budget_bytes_));
  lru_.push_front(e);
  index_.emplace(key, lru_.begin());
  bytes_ += bytes;
  return pin_locked(e);
}

int64_t InlinePrograms::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

int64_t InlinePrograms::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return int64_t(index_.size());
}

}  // namespace tensorgym
