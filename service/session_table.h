// The server's sessions: one environment each, by id. Thread-safe; a session's own
// mutex serializes the calls on it, so calls on different sessions run in parallel.
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
  const uint64_t id;
  std::string env_name;      // set before the session is shared; never changes
  std::mutex mu;             // held by the call using the session
  std::unique_ptr<Env> env;  // guarded by mu
  uint64_t step_count = 0;   // Step calls applied; guarded by mu
  std::atomic<int64_t> last_used_ns{0};  // steady clock

  explicit Session(uint64_t id) : id(id) {}
  void touch();
};

class SessionTable {
 public:
  explicit SessionTable(int max_sessions);

  // A new session holding `env`; RESOURCE_EXHAUSTED at the cap.
  Expected<std::shared_ptr<Session>> add(std::unique_ptr<Env> env, uint64_t step_count = 0);
  // NOT_FOUND ("unknown session N ...") when there is none.
  Expected<std::shared_ptr<Session>> find(uint64_t id) const;
  // Whether it was there.
  bool remove(uint64_t id);
  size_t size() const;
  int max_sessions() const { return max_sessions_; }

  // Ends the sessions unused for longer than `idle` that no call holds; returns their ids.
  std::vector<uint64_t> reap_idle(std::chrono::nanoseconds idle);
  // Ends every session.
  void clear();

  static Status unknown_session(uint64_t id);

 private:
  const int max_sessions_;
  mutable std::shared_mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<Session>> sessions_;
  uint64_t next_id_;
};

}  // namespace tensorgym::service
