#include "codegen/cpu/runtime.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "codegen/cpu/workspace_pool.h"

namespace tensorgym {
namespace {

thread_local int tls_threads = 0;
thread_local bool tls_in_parallel = false;

int hardware_threads() {
  static const int n = std::max(1u, std::thread::hardware_concurrency());
  return n;
}

// Workers wait on a generation counter; the caller runs chunk 0 itself and waits for
// the others with a short spin before sleeping, so small parallel loops stay cheap.
class ThreadPool {
 public:
  static ThreadPool& get() {
    static ThreadPool* pool = new ThreadPool();  // never destroyed: kernels may run at exit
    return *pool;
  }

  // Returns false when the pool is busy with another caller's loop.
  bool run(void (*body)(void*, int32_t, int32_t), void* closure, int32_t n, int threads) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    grow(threads - 1);
    int chunks = std::min<int>(threads, n);
    {
      std::lock_guard<std::mutex> lock(mu_);
      body_ = body;
      closure_ = closure;
      n_ = n;
      chunks_ = chunks;
      remaining_.store(chunks - 1, std::memory_order_relaxed);
      ++generation_;
    }
    wake_.notify_all();
    run_chunk(0);
    // Spin briefly, then sleep until the helpers are done.
    for (int spin = 0; spin < 20000 && remaining_.load(std::memory_order_acquire) > 0; ++spin) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
    if (remaining_.load(std::memory_order_acquire) > 0) {
      std::unique_lock<std::mutex> lock(mu_);
      done_.wait(lock, [&] { return remaining_.load(std::memory_order_acquire) == 0; });
    }
    return true;
  }

 private:
  std::mutex busy_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  std::vector<pthread_t> workers_;
  uint64_t generation_ = 0;
  void (*body_)(void*, int32_t, int32_t) = nullptr;
  void* closure_ = nullptr;
  int32_t n_ = 0;
  int chunks_ = 0;
  std::atomic<int> remaining_{0};

  void run_chunk(int c) {
    if (c >= chunks_) return;
    int64_t begin = int64_t(n_) * c / chunks_, end = int64_t(n_) * (c + 1) / chunks_;
    tls_in_parallel = true;
    if (begin < end) body_(closure_, int32_t(begin), int32_t(end));
    tls_in_parallel = false;
  }

  struct StartArg {
    ThreadPool* pool;
    int index;
  };
  static void* worker_main(void* arg) {
    StartArg a = *static_cast<StartArg*>(arg);
    delete static_cast<StartArg*>(arg);
    a.pool->worker_loop(a.index);
    return nullptr;
  }

  void worker_loop(int index) {
    uint64_t seen = 0;
    for (;;) {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      int chunk = index + 1;
      if (chunk >= chunks_) continue;
      lock.unlock();
      run_chunk(chunk);
      if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> l(mu_);
        done_.notify_all();
      }
    }
  }

  void grow(int helpers) {
    while (int(workers_.size()) < helpers) {
      pthread_attr_t attr;
      pthread_attr_init(&attr);
      // Local buffers of parallel loop bodies live on these stacks.
      pthread_attr_setstacksize(&attr, size_t(64) << 20);
      pthread_t t;
      auto* arg = new StartArg{this, int(workers_.size())};
      if (pthread_create(&t, &attr, &ThreadPool::worker_main, arg) != 0) {
        delete arg;
        pthread_attr_destroy(&attr);
        break;
      }
      pthread_attr_destroy(&attr);
      pthread_detach(t);
      workers_.push_back(t);
    }
  }
};

}  // namespace

void set_kernel_threads(int num_threads) { tls_threads = num_threads; }

int kernel_threads() { return tls_threads > 0 ? tls_threads : hardware_threads(); }

}  // namespace tensorgym

extern "C" {

void tg_parallel_for(void (*body)(void*, int32_t, int32_t), void* closure, int32_t n) {
  using namespace tensorgym;
  if (n <= 0) return;
  int threads = kernel_threads();
  if (threads <= 1 || n == 1 || tls_in_parallel || !ThreadPool::get().run(body, closure, n, threads)) {
    body(closure, 0, n);
  }
}

void* tg_alloc(int64_t bytes) {
  void* p = tensorgym::workspace_allocate(bytes > 0 ? size_t(bytes) : 64);
  // Out of memory: what operator new would do, so a process with a new handler (a
  // measurement worker) treats it alike; without one the kernel gets null.
  if (!p) {
    if (std::new_handler handler = std::get_new_handler()) handler();
  }
  return p;
}

void tg_free(void* p) { tensorgym::workspace_free(p); }
}
