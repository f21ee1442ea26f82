// A thread that exists only to start child processes.
//
// Linux delivers PR_SET_PDEATHSIG when the *thread* that created the child exits, not
// the process. Workers started from a caller's thread (a gRPC handler, a test's
// std::thread) would be killed when that thread ends. The runner therefore starts
// every worker from this thread, which lives exactly as long as the runner.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace tensorgym {

class SpawnThread {
 public:
  SpawnThread();
  ~SpawnThread();  // finishes queued calls, then joins
  SpawnThread(const SpawnThread&) = delete;
  SpawnThread& operator=(const SpawnThread&) = delete;

  // Runs `fn` on the spawn thread and waits for it to return. Thread-safe.
  void call(const std::function<void()>& fn);

 private:
  struct Task {
    const std::function<void()>* fn;
    bool done = false;
  };
  void loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task*> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace tensorgym
