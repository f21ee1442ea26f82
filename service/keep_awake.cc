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
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  if (int e = pthread_setaffinity_np(pthread_self(), sizeof set, &set))
    return "cannot pin a spinner to core " + std::to_string(core) + ": " + std::strerror(e);
  sched_param p{};
  p.sched_priority = 0;
  if (int e = pthread_setschedparam(pthread_self(), SCHED_IDLE, &p))
    return std::string("cannot make a spinner SCHED_IDLE: ") + std::strerror(e);
  return "";
}

}  // namespace

Expected<std::unique_ptr<CoreKeepAwake>> CoreKeepAwake::start() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
    return internal_error(std::string("cannot read the CPU affinity mask: ") + std::strerror(errno));
  std::unique_ptr<CoreKeepAwake> k(new CoreKeepAwake());
  for (int core = 0; core < CPU_SETSIZE; ++core) {
    if (!CPU_ISSET(core, &allowed)) continue;
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
