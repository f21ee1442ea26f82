// Managed mode: a `tensorgym serve` child process that lives exactly as long as its
// client. It is started from a thread of its own with PR_SET_PDEATHSIG (Linux
// signals the child when the thread that forked it ends), and told --parent-pid so
// it also exits when it finds itself orphaned: a killed client leaves no server.
#pragma once

#include <fmt/format.h>
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "support/status.h"

namespace tensorgym::client {

class ManagedServer {
 public:
  // Starts `binary serve --host 127.0.0.1 --port 0 --port-file F --parent-pid P args...`
  // and waits (at most timeout_s) until it has written its port. UNAVAILABLE when it
  // exits or times out first, NOT_FOUND when the binary cannot be found.
  static Expected<std::unique_ptr<ManagedServer>> start(const std::string& binary,
                                                        const std::vector<std::string>& args, double timeout_s);
  // SIGTERM, then SIGKILL if it has not exited after a few seconds; reaps it.
  ~ManagedServer();
  ManagedServer(const ManagedServer&) = delete;
  ManagedServer& operator=(const ManagedServer&) = delete;

  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  std::string address() const { return fmt::format("127.0.0.1:{}", port_); }
  // Whether the process still runs (reaps it when it has exited).
  bool alive();
  // SIGKILL and reap, now.
  void kill_now();

  // The `tensorgym` executable to run when none is configured: $TENSORGYM_BINARY,
  // else `tensorgym` in this executable's folder, else `tensorgym` on PATH.
  static std::string default_binary();

 private:
  ManagedServer() = default;
  struct Spawner;
  std::unique_ptr<Spawner> spawner_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int port_ = 0;
  void remove_port_dir();
  std::string dir_;  // holds the port file until the port is read
};

}  // namespace tensorgym::client
