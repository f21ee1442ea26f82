// Per-loop working sets of a flattened LoopNest: how many bytes of each buffer one
// complete execution of a loop (all its iterations, the enclosing loop variables
// fixed) touches. Compared with cache sizes this says which loop's data fits where;
// it feeds the cost model and the loop-nest observation.
//
// The estimate, per loop L and buffer b:
//  - Enclosing loops of L are fixed at their first iteration (their min's lower
//    bound); L and the loops inside it range over [min, min + extent); let-bound
//    names take the range of their value; if/select conditions narrow the ranges of
//    the accesses under them (narrow_by_condition), and an access whose condition is
//    impossible at that point is skipped. Ramp lanes count as an inner loop of
//    `lanes` iterations.
//  - For each distinct (structurally) flat index of b under L:
//      span    = the range of the index (constant_bounds), unioned over b's accesses;
//      product = the product of the number of values of the varying variables
//                (L's and inner loops', lanes) that occur in the index after
//                linearize (let-bound names are expanded to the variables of their
//                value), summed over b's distinct indices.
//    elements(b) = min(span, product, size of b). The span is exact for dense
//    accesses, the product for strided ones; the minimum of the two over-counts
//    only indices that are neither (e.g. skewed, overlapping).
//  - A buffer Allocate'd inside L counts its full size.
// Bytes are elements times the buffer's element size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/lower/loop_nest.h"

namespace tensorgym {

struct BufferFootprint {
  std::string buffer;
  int64_t elements = 0;  // estimated distinct elements touched
  int64_t bytes = 0;
  bool allocated_inside = false;  // Allocate'd inside the loop: its full size
};

struct LoopWorkingSet {
  std::string loop;   // the loop variable's name
  int depth = 0;      // number of enclosing loops (0 for outermost loops)
  int64_t extent = 0; // upper bound of the extent at the fixed outer point (-1 if unbounded)
  std::vector<BufferFootprint> buffers;  // in order of first access under the loop
  int64_t total_bytes = 0;
};

// One entry per For loop of the nest, in pre-order.
std::vector<LoopWorkingSet> loop_working_sets(const LoopNest& nest);

}  // namespace tensorgym
