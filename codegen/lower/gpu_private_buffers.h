// Buffers private to each GPU thread but computed outside the thread loops: a local
// accumulator computed at a block loop (cache_write(C, CL, local); compute_at(CL,
// C.jo)) whose loops are bound to threadIdx, so that it lives across the k tiles a
// block loads into shared memory. The nest (and the interpreter) holds it block-wide;
// each thread touches only its own part, which a GPU keeps in that thread's registers.
//
// Such a buffer is privatizable when every access indexes it by the same multiples of
// the same threadIdx dimensions plus terms in loops inside its allocation, and the
// index is a mixed-radix number of them (no two iterations, of the same thread or of
// two, meet on one element). A thread's part is then the index without the thread
// terms, renumbered densely: code generation allocates that many elements per thread
// and rewrites the accesses (privatize_buffer), and the interpreter's block-wide run
// computes what the threads compute.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/ir/stmt.h"
#include "support/status.h"

namespace tensorgym {

struct PrivateLayout {
  // threadIdx.x, .y, .z: the index's multiple of each (0 where it does not use it).
  int64_t thread_coeff[3] = {0, 0, 0};
  // The other terms' coefficients, and the dense ones that replace them, in order.
  std::vector<int64_t> coeffs, dense;
  int64_t constant = 0;
  int64_t elements_per_thread = 1;
  bool uses_threads() const { return thread_coeff[0] || thread_coeff[1] || thread_coeff[2]; }
};

// The layout of the buffer `alloc` allocates inside a kernel, or FAILED_PRECONDITION
// saying why its threads could not each keep their own part.
Expected<PrivateLayout> private_layout(const Allocate* alloc);

// `alloc` with each thread's part only: its extent and the accesses in its body.
Stmt privatize_buffer(const Allocate* alloc, const PrivateLayout& layout);

}  // namespace tensorgym
