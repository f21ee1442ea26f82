// The shared-memory template of a GPU schedule for a reduction stage (a matrix
// multiplication, a convolution of any rank, groups, dilation or stride): TVM's and
// Ansor's GPU multi-level tiling. Each spatial axis splits into blocks x threads x
// outputs per thread; each thread keeps its outputs in a local (register) cache
// computed at the block's tile; each reduction axis splits into tiles x a tile, the
// tile loops outside the thread loops, and each input the stage reads may be cached in
// shared memory at the innermost tile loop, loaded by all the block's threads
// together (vector loads of VECTOR lanes). docs/gpu.md shows the GEMM it gives
// (datasets/ops/gemm_1024.cuda.sched). The random GPU schedules and the evolutionary
// agent's GPU sketches both render through it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/schedule/schedule.h"
#include "support/random.h"
#include "support/status.h"

namespace tensorgym {

struct GpuSharedTile {
  // Per spatial axis of the stage, in order: blocks, threads, outputs per thread
  // (product = the axis's extent). At most three axes have threads (threadIdx.x on the
  // innermost of them, then .y, .z); blockIdx.x takes the last axis, .y the one before,
  // the others fused on .z.
  std::vector<std::array<int64_t, 3>> spatial;
  // Per reduction axis: tiles, tile (product = the extent). Inputs cached in shared
  // memory hold one tile of every reduction axis; at least one axis has several tiles.
  std::vector<std::array<int64_t, 2>> reduce;
  std::vector<bool> shared;   // per tensor the stage loads (gpu_shared_tile_inputs): in shared memory
  bool local = true;          // the outputs accumulated in a local cache (registers)
  int64_t vector = 1;         // lanes of each thread's loads into shared memory (1, 2 or 4)
  bool unroll_reduce = true;  // the reduction's tile loops unrolled

  bool operator==(const GpuSharedTile&) const = default;
};

// The spatial axes of a stage (extents, in order) that may carry threads: the last
// three with more than one iteration.
std::vector<size_t> gpu_thread_axes(const std::vector<int64_t>& extents);

// The tensors stage `stage` of `s` reads that have a buffer (an inlined producer has
// none): those the template may cache. A cached producer that is injective (a
// convolution's padding) is inlined into its copy.
std::vector<std::string> gpu_shared_tile_inputs(const Schedule& s, const std::string& stage);

// Whether the template applies to stage `stage` of `s` as it stands at the root: a
// reduction with a spatial axis of more than one iteration.
bool gpu_shared_tile_applies(const Schedule& s, const std::string& stage);

// Applies the template to `stage` (untouched, at the root). An error (the step that
// was refused) leaves `s` half-scheduled: callers keep a copy. Lowering checks the
// rest (threads per block, shared bytes).
Status apply_gpu_shared_tile(Schedule& s, const std::string& stage, const GpuSharedTile& tile);

// A random tile for `stage` of `s`: 32 to 1024 threads where the extents allow,
// outputs per thread and reduction tiles among the divisors of the extents, every
// input in shared memory, the outputs in registers. FAILED_PRECONDITION when the
// template does not apply.
Expected<GpuSharedTile> random_gpu_shared_tile(const Schedule& s, const std::string& stage, Rng& rng);

}  // namespace tensorgym
