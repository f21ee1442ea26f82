// Memory for IR nodes. Lowering makes and drops hundreds of small nodes per loop
// nest, far more of one size at a time than malloc's per-thread cache keeps (7), so
// most of them took malloc's slow paths. This keeps a deeper per-thread cache of
// freed node blocks by size class. Blocks come from and go back to the global
// allocator, so a node may be freed on another thread than the one that made it.
#pragma once

#include <cstddef>

namespace tensorgym::node_pool {

void* allocate(std::size_t size);
void deallocate(void* p, std::size_t size) noexcept;

}  // namespace tensorgym::node_pool
