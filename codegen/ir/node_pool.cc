#include "codegen/ir/node_pool.h"

#include <cstdint>
#include <new>

namespace tensorgym::node_pool {
namespace {

constexpr std::size_t kGranule = 16;
constexpr std::size_t kClasses = 16;   // blocks up to 256 bytes; larger ones go straight to the allocator
constexpr uint32_t kMaxCached = 1024;  // blocks kept per class and thread

struct FreeBlock {
  FreeBlock* next;
};

// Trivially destructible, so it stays usable while the thread's other thread_local
// objects are destroyed (they may free nodes); `released` then sends blocks back.
struct Cache {
  FreeBlock* head[kClasses];
  uint32_t count[kClasses];
  bool registered;
  bool released;
};
thread_local Cache cache;

void release_all() noexcept {
  for (std::size_t c = 0; c < kClasses; ++c) {
    while (FreeBlock* b = cache.head[c]) {
      cache.head[c] = b->next;
      ::operator delete(b);
    }
    cache.count[c] = 0;
  }
  cache.released = true;
}

// Returns the cached blocks when the thread ends.
struct Releaser {
  ~Releaser() { release_all(); }
};
thread_local Releaser releaser;

std::size_t class_of(std::size_t size) { return (size + kGranule - 1) / kGranule - 1; }

}  // namespace

void* allocate(std::size_t size) {
  std::size_t c = class_of(size);
  if (c < kClasses) {
    if (FreeBlock* b = cache.head[c]) {
      cache.head[c] = b->next;
      --cache.count[c];
      return b;
    }
    return ::operator new((c + 1) * kGranule);
  }
  return ::operator new(size);
}

void deallocate(void* p, std::size_t size) noexcept {
  std::size_t c = class_of(size);
  if (c < kClasses && !cache.released && cache.count[c] < kMaxCached) {
    if (!cache.registered) {
      cache.registered = true;
      (void)&releaser;  // constructs it, so its destructor runs at thread exit
    }
    auto* b = static_cast<FreeBlock*>(p);
    b->next = cache.head[c];
    cache.head[c] = b;
    ++cache.count[c];
    return;
  }
  ::operator delete(p);
}

}  // namespace tensorgym::node_pool
