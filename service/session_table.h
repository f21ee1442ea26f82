// The server's sessions: one environment each, by handle. Thread-safe; a session's own
// mutex serializes the calls on it, so calls on different sessions run in parallel.
//
// A handle is 128 random bits from the kernel (32 hex digits): it cannot be guessed,
// so without tokens a session is used only by whoever was given its handle. With
// tokens, a session also belongs to the client that started it (its identity,
// service/auth.h): another client's calls on it find nothing. Each client may hold
// at most max_per_client sessions, so that one cannot take them all.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "envs/env.h"
#include "support/status.h"

namespace tensorgym::service {

struct Session {
  const std::string id;        // the handle
  const std::string owner;     // the starting client's identity ("" without tokens)
  const std::string quota_key;  // whose quota it counts against
  std::string env_name;      // set before the session is shared; never changes
  std::mutex mu;             // held by the call using the session
  std::unique_ptr<Env> env;  // guarded by mu
  uint64_t step_count = 0;   // Step calls applied; guarded by mu
  std::atomic<int64_t> last_used_ns{0};  // steady clock

  Session(std::string id, std::string owner, std::string quota_key)
      : id(std::move(id)), owner(std::move(owner)), quota_key(std::move(quota_key)) {}
  void touch();
};

// 128 bits from getrandom(2) as 32 lowercase hex digits.
std::string random_handle();
// Whether `id` has the form random_handle() gives (what an error may quote of it).
bool is_handle(const std::string& id);

class SessionTable {
 public:
  SessionTable(int max_sessions, int max_per_client);

  // A new session holding `env`, owned by `owner` and counted against `quota_key`;
  // RESOURCE_EXHAUSTED at the server's cap or the client's.
  Expected<std::shared_ptr<Session>> add(std::unique_ptr<Env> env, const std::string& owner,
                                         const std::string& quota_key, uint64_t step_count = 0);
  // The session `id` when `caller` may use it: NOT_FOUND ("unknown session ...") when
  // there is none, or it belongs to another client (which is not said).
  Expected<std::shared_ptr<Session>> find(const std::string& id, const std::string& caller) const;
  // Whether it was there (and the caller's).
  bool remove(const std::string& id, const std::string& caller);
  size_t size() const;
  int max_sessions() const { return max_sessions_; }
  int max_per_client() const { return max_per_client_; }
  // RESOURCE_EXHAUSTED when one more session would pass a cap (checked again by add).
  Status check_room(const std::string& quota_key) const;

  // Ends the sessions unused for longer than `idle` that no call holds; returns their ids.
  std::vector<std::string> reap_idle(std::chrono::nanoseconds idle);
  // Ends every session.
  void clear();

  static Status unknown_session(const std::string& id);

 private:
  Status check_room_locked(const std::string& quota_key) const;
  void forget_locked(const Session& s);

  const int max_sessions_;
  const int max_per_client_;
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Session>> sessions_;
  std::unordered_map<std::string, int> per_client_;  // by quota key
};

}  // namespace tensorgym::service
