// The small runtime compiled kernels call: a persistent thread pool for parallel loops
// and pooled, aligned allocation for large local buffers. The C entry points are what the
// generated code calls; they are given to the JIT by address.
#pragma once

#include <cstdint>

extern "C" {
// Runs body(closure, begin, end) over [0, n) split into contiguous chunks, one per
// thread of the current run. Nested calls run serially in the calling thread.
void tg_parallel_for(void (*body)(void*, int32_t, int32_t), void* closure, int32_t n);
// 64-byte aligned heap memory for local buffers too large for the stack, from a
// per-thread pool of freed blocks (workspace_pool.h).
void* tg_alloc(int64_t bytes);
void tg_free(void* p);
}

namespace tensorgym {

// Threads parallel loops use for kernels run by this thread (<= 0: every core).
// Set by CpuKernel::run; the pool grows to the largest count asked for.
void set_kernel_threads(int num_threads);
int kernel_threads();

}  // namespace tensorgym
