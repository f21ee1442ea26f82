#include "codegen/cpu/workspace_pool.h"

#include <cstdint>
#include <cstdlib>
#include <vector>

namespace tensorgym {
namespace {

// Each block starts with a 64-byte header holding its capacity, so the pointer handed
// out stays 64-byte aligned and free needs no lookup.
constexpr size_t kHeader = 64;
constexpr size_t kMaxBlocks = 64;  // free blocks kept per thread

class WorkspacePool {
 public:
  ~WorkspacePool() {
    for (const Block& b : free_) std::free(b.base);
  }

  void* allocate(size_t bytes) {
    const size_t size = (bytes + 63) / 64 * 64;
    // The smallest free block that fits; one more than twice the size is not used, so
    // that a small request does not pin a large block.
    size_t best = free_.size();
    for (size_t i = 0; i < free_.size(); ++i) {
      const size_t c = free_[i].capacity;
      if (c >= size && c <= 2 * size + 4096 && (best == free_.size() || c < free_[best].capacity)) best = i;
    }
    if (best < free_.size()) {
      Block b = free_[best];
      free_[best] = free_.back();
      free_.pop_back();
      held_ -= b.capacity;
      return static_cast<char*>(b.base) + kHeader;
    }
    void* base = std::aligned_alloc(64, size + kHeader);
    if (!base) return nullptr;
    *static_cast<size_t*>(base) = size;
    return static_cast<char*>(base) + kHeader;
  }

  void release(void* p) {
    void* base = static_cast<char*>(p) - kHeader;
    const size_t capacity = *static_cast<size_t*>(base);
    if (held_ + capacity > kWorkspacePoolBytes || free_.size() >= kMaxBlocks) {
      std::free(base);
      return;
    }
    free_.push_back({base, capacity});
    held_ += capacity;
  }

  size_t held() const { return held_; }

 private:
  struct Block {
    void* base;
    size_t capacity;
  };
  std::vector<Block> free_;
  size_t held_ = 0;
};

WorkspacePool& pool() {
  thread_local WorkspacePool p;
  return p;
}

}  // namespace

void* workspace_allocate(size_t bytes) { return pool().allocate(bytes); }

void workspace_free(void* p) {
  if (p) pool().release(p);
}

size_t workspace_pool_held_bytes() { return pool().held(); }

}  // namespace tensorgym
