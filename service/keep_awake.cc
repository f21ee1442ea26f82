#include "service/keep_awake.h"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "support/cpu_affinity.h"

namespace tensorgym::service {
namespace {

void relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();  // frees the core's shared resources for an SMT sibling while spinning
#else
  std::this_thread::yield();
#endif
}

// Pins the calling thread to `core` and drops it to SCHED_IDLE; an error says why not.
std::string make_idle_spinner(int core) {
  if (Status st = pin_this_thread(core); !st.ok()) return "spinner: " + st.message();
  sched_param p{};
  p.sched_priority = 0;
  if (int e = pthread_setschedparam(pthread_self(), SCHED_IDLE, &p))
    return std::string("cannot make a spinner SCHED_IDLE: ") + std::strerror(e);
  return "";
}

}  // namespace

Expected<std::unique_ptr<CoreKeepAwake>> CoreKeepAwake::start() {
  TG_ASSIGN_OR_RETURN(std::vector<int> allowed, allowed_cpus());
  std::unique_ptr<CoreKeepAwake> k(new CoreKeepAwake());
  for (int core : allowed) {
    // The thread reports its id, or why it could not become an idle spinner (and then
    // returns without spinning).
    std::promise<std::pair<pid_t, std::string>> ready;
    std::future<std::pair<pid_t, std::string>> result = ready.get_future();
    k->threads_.emplace_back([stop = &k->stop_, core, ready = std::move(ready)]() mutable {
      std::string error = make_idle_spinner(core);
      ready.set_value({pid_t(::syscall(SYS_gettid)), error});
      if (!error.empty()) return;
      while (!stop->load(std::memory_order_relaxed)) relax();
    });
    auto [tid, error] = result.get();
    if (!error.empty()) return internal_error(error);  // the destructor stops the others
    k->tids_.push_back(tid);
    k->cores_.push_back(core);
  }
  return k;
}

void CoreKeepAwake::stop() {
  stop_.store(true);
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

CoreKeepAwake::~CoreKeepAwake() { stop(); }

}  // namespace tensorgym::service
