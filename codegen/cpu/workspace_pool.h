// Scratch memory for compiled kernels: local buffers too large for the stack (tg_alloc /
// tg_free). Freed blocks stay in a per-thread pool and serve later requests of up to
// their size, as TVM's workspace pool does, so a kernel run again finds the pages of its
// scratch already mapped: steady-state runs pay neither page faults nor system calls for
// it, whatever the C library's thresholds and heap layout. With plain malloc and free,
// one depthwise convolution with two 1.6 MiB scratch buffers measured 0.4 ms in one
// process and 1.4 ms in another, depending on whether glibc handed the heap's top back
// to the system after each run. The cost model assumes this pool (no faults in the
// steady state).
#pragma once

#include <cstddef>

namespace tensorgym {

// At most this many bytes of freed blocks are kept per thread; a block freed beyond it
// goes back to the C library.
inline constexpr size_t kWorkspacePoolBytes = size_t(256) << 20;

// 64-byte aligned, never null for a satisfiable request (nullptr when out of memory).
void* workspace_allocate(size_t bytes);
// `p` from workspace_allocate on any thread (it joins the calling thread's pool); null
// is ignored.
void workspace_free(void* p);
// Bytes of freed blocks the calling thread's pool holds (for tests).
size_t workspace_pool_held_bytes();

}  // namespace tensorgym
