#include "codegen/measure/spawn_thread.h"

namespace tensorgym {

SpawnThread::SpawnThread() : thread_([this] { loop(); }) {}

SpawnThread::~SpawnThread() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void SpawnThread::call(const std::function<void()>& fn) {
  if (std::this_thread::get_id() == thread_.get_id()) {
    fn();
    return;
  }
  Task task{&fn};
  std::unique_lock<std::mutex> lock(mu_);
  queue_.push_back(&task);
  cv_.notify_all();
  cv_.wait(lock, [&] { return task.done; });
}

void SpawnThread::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    Task* task = queue_.front();
    queue_.pop_front();
    lock.unlock();
    (*task->fn)();
    lock.lock();
    task->done = true;
    cv_.notify_all();
  }
}

}  // namespace tensorgym
