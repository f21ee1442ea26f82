// The cuda target's lowering passes (codegen/cuda/cuda_backend.cc lists them; lower.cc
// shows them in the pipeline). Each checks the nest and says why a GPU could not run
// it (FAILED_PRECONDITION naming the loop or stage and the rule); only
// insert_gpu_barriers rewrites it.
// Bound loops stay loops: the kernels are what the nest's bound loops delimit
// (gpu_launch.h).
#pragma once

#include "codegen/ir/stmt.h"
#include "support/status.h"

namespace tensorgym {

// Loop by loop (check_gpu_loops.cc): no parallel loop; a vectorized loop is
// innermost; a bound loop has a constant extent and a known tag, is not inside a loop
// bound to the same tag, and a blockIdx loop is not inside a threadIdx loop.
Status check_gpu_loops(const Stmt& body);

// Kernel by kernel (check_gpu_kernels.cc): each dimension within CUDA's limit, at
// most kMaxThreadsPerBlock threads per block; and no store outside a kernel inside a
// loop (that work would run on one GPU thread).
Status check_gpu_kernels(const Stmt& body);
// Its first half: each kernel's launch within CUDA's limits (what the GPU model needs
// to hold, codegen/cuda/gpu_model.h: work outside a kernel it models as one thread).
Status check_gpu_launches(const Stmt& body);

// Buffer by buffer (check_gpu_scopes.cc): global buffers outside every kernel, local
// ones inside one, shared ones inside a kernel and outside its threadIdx loops, a
// kernel's shared buffers within kMaxStaticSharedBytes.
Status check_gpu_scopes(const Stmt& body);

// Barriers (__syncthreads) between the writes of a shared buffer and the reads of
// other threads, and between reads and the next writes (insert_gpu_barriers.cc).
// Runs after check_gpu_scopes, which keeps them outside every thread loop.
Stmt insert_gpu_barriers(const Stmt& body);

// Store by store (check_gpu_stores.cc): no two threads write one element of a buffer
// they share (a reduction across a launch dimension, a write that ignores one), and no
// buffer private to a thread is filled by several threads.
Status check_gpu_stores(const Stmt& body);

}  // namespace tensorgym
