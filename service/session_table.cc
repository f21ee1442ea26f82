#include "service/session_table.h"

#include <random>

namespace tensorgym::service {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void Session::touch() { last_used_ns.store(now_ns(), std::memory_order_relaxed); }

SessionTable::SessionTable(int max_sessions) : max_sessions_(max_sessions) {
  // Ids start at a random point so that ids of a restarted server rarely name a
  // session of the previous one (clients then see NOT_FOUND, not a stranger's episode).
  std::random_device rd;
  next_id_ = ((uint64_t(rd()) << 32) | rd()) & ((uint64_t(1) << 52) - 1);
  if (next_id_ == 0) next_id_ = 1;
}

Expected<std::shared_ptr<Session>> SessionTable::add(std::unique_ptr<Env> env, uint64_t step_count) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  if (int(sessions_.size()) >= max_sessions_)
    return resource_exhausted("the server holds " + std::to_string(sessions_.size()) +
                              " sessions, its cap (--max-sessions); end sessions that are no longer used");
  auto s = std::make_shared<Session>(next_id_++);
  s->env_name = env->name();
  s->env = std::move(env);
  s->step_count = step_count;
  s->touch();
  sessions_.emplace(s->id, s);
  return s;
}

Status SessionTable::unknown_session(uint64_t id) {
  return not_found("unknown session " + std::to_string(id) +
                   " (never started, ended, or ended after being idle; start a new one)");
}

Expected<std::shared_ptr<Session>> SessionTable::find(uint64_t id) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return unknown_session(id);
  return it->second;
}

bool SessionTable::remove(uint64_t id) {
  std::shared_ptr<Session> gone;  // destroyed outside the lock
  std::unique_lock<std::shared_mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return false;
  gone = std::move(it->second);
  sessions_.erase(it);
  return true;
}

size_t SessionTable::size() const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  return sessions_.size();
}

std::vector<uint64_t> SessionTable::reap_idle(std::chrono::nanoseconds idle) {
  const int64_t cutoff = now_ns() - idle.count();
  std::vector<std::shared_ptr<Session>> gone;
  std::vector<uint64_t> ids;
  {
    std::unique_lock<std::shared_mutex> lock(mu_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      Session& s = *it->second;
      std::unique_lock<std::mutex> busy(s.mu, std::try_to_lock);
      if (busy.owns_lock() && s.last_used_ns.load(std::memory_order_relaxed) < cutoff) {
        busy.unlock();
        ids.push_back(it->first);
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
  std::unordered_map<uint64_t, std::shared_ptr<Session>> gone;
  std::unique_lock<std::shared_mutex> lock(mu_);
  gone.swap(sessions_);
  lock.unlock();
}

}  // namespace tensorgym::service
