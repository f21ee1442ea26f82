#include "service/session_table.h"

#include <fmt/format.h>
#include <sys/random.h>

#include <cerrno>
#include <cstdlib>


namespace tensorgym::service {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void Session::touch() { last_used_ns.store(now_ns(), std::memory_order_relaxed); }

std::string random_handle() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) std::abort();  // no kernel randomness: never hand out a guessable handle
    got += size_t(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(2 * sizeof bytes, '0');
  for (size_t i = 0; i < sizeof bytes; ++i) {
    out[2 * i] = kHex[bytes[i] >> 4];
    out[2 * i + 1] = kHex[bytes[i] & 15];
  }
  return out;
}

SessionTable::SessionTable(int max_sessions, int max_per_client)
    : max_sessions_(max_sessions), max_per_client_(max_per_client) {}

Status SessionTable::check_room_locked(const std::string& quota_key) const {
  if (int(sessions_.size()) >= max_sessions_)
    return resource_exhausted(fmt::format("the server holds {}", sessions_.size()) +
                              " sessions, its cap (--max-sessions); end sessions that are no longer used");
  auto it = per_client_.find(quota_key);
  if (it != per_client_.end() && it->second >= max_per_client_)
    return resource_exhausted(fmt::format("this client holds {}", it->second) +
                              " sessions, the cap for one client (--max-sessions-per-client); end sessions that "
                              "are no longer used");
  return Status();
}

Status SessionTable::check_room(const std::string& quota_key) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return check_room_locked(quota_key);
}

Expected<std::shared_ptr<Session>> SessionTable::add(std::unique_ptr<Env> env, const std::string& owner,
                                                     const std::string& quota_key, uint64_t step_count) {
  auto s = std::make_shared<Session>(random_handle(), owner, quota_key);
  s->env_name = env->name();
  s->env = std::move(env);
  s->step_count = step_count;
  s->touch();
  std::unique_lock<std::shared_mutex> lock(mu_);
  TG_RETURN_IF_ERROR(check_room_locked(quota_key));
  if (!sessions_.emplace(s->id, s).second) return internal_error("a session handle came out twice");
  ++per_client_[quota_key];
  return s;
}

bool is_handle(const std::string& id) {
  if (id.size() != 32) return false;
  for (char c : id)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

Status SessionTable::unknown_session(const std::string& id) {
  if (!is_handle(id))
    return not_found(fmt::format("unknown session: a handle of {}", id.size()) +
                     " bytes that is not one this server gives (handles are 32 hex digits)");
  return not_found("unknown session " + id +
                   " (never started, ended, ended after being idle, or another client's; start a new one)");
}

Expected<std::shared_ptr<Session>> SessionTable::find(const std::string& id, const std::string& caller) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second->owner != caller) return unknown_session(id);
  return it->second;
}

void SessionTable::forget_locked(const Session& s) {
  auto it = per_client_.find(s.quota_key);
  if (it != per_client_.end() && --it->second <= 0) per_client_.erase(it);
}

bool SessionTable::remove(const std::string& id, const std::string& caller) {
  std::shared_ptr<Session> gone;  // destroyed outside the lock
  std::unique_lock<std::shared_mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second->owner != caller) return false;
  gone = std::move(it->second);
  sessions_.erase(it);
  forget_locked(*gone);
  return true;
}

size_t SessionTable::size() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return sessions_.size();
}

std::vector<std::string> SessionTable::reap_idle(std::chrono::nanoseconds idle) {
  const int64_t cutoff = now_ns() - idle.count();
  std::vector<std::shared_ptr<Session>> gone;
  std::vector<std::string> ids;
  {
    std::unique_lock<std::shared_mutex> lock(mu_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      Session& s = *it->second;
      std::unique_lock<std::mutex> busy(s.mu, std::try_to_lock);
      if (busy.owns_lock() && s.last_used_ns.load(std::memory_order_relaxed) < cutoff) {
        busy.unlock();
        ids.push_back(it->first);
        forget_locked(s);
        gone.push_back(std::move(it->second));
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
  }
  return ids;
}

void SessionTable::clear() {
  std::unordered_map<std::string, std::shared_ptr<Session>> gone;
  std::unique_lock<std::shared_mutex> lock(mu_);
  gone.swap(sessions_);
  per_client_.clear();
  lock.unlock();
}

}  // namespace tensorgym::service
