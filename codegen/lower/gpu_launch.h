// The GPU launch geometry of a lowered nest: the dimensions loops are bound to,
// where kernels start, and CUDA's limits on them. What the cuda target's checks
// (gpu_checks.h) share.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "codegen/ir/stmt.h"

namespace tensorgym {

// CUDA's limits on a launch (compute capability 3.0 and later, sm_90 included).
inline constexpr int64_t kMaxThreadsPerBlock = 1024;

enum class GpuDim : uint8_t { kNone, kBlock, kThread, kVirtual };

// A bind() tag: "blockIdx.y" is {kBlock, 1}; "vthread" is {kVirtual, 0}; an empty or
// unknown tag is kNone.
struct GpuTag {
  GpuDim dim = GpuDim::kNone;
  int axis = 0;  // 0, 1, 2: x, y, z
};
GpuTag parse_gpu_tag(std::string_view tag);

// The most iterations a loop bound to the tag may have: threadIdx.x and .y 1024,
// threadIdx.z 64, blockIdx.x 2^31 - 1, blockIdx.y and .z 65535.
int64_t max_gpu_extent(GpuTag tag);

// Whether the loop is one dimension of a launch: bound to blockIdx or threadIdx
// (a vthread loop is an ordinary loop inside a thread).
bool is_launch_loop(const For* loop);

// The launch of one kernel: for each dimension, the largest extent of the kernel's
// loops bound to it (1 where none is). Loops bound to one dimension with smaller
// extents run on the first threads of it.
struct GpuLaunch {
  int64_t blocks[3] = {1, 1, 1};
  int64_t threads[3] = {1, 1, 1};
  int64_t threads_per_block() const { return threads[0] * threads[1] * threads[2]; }
  int64_t extent(GpuTag tag) const { return tag.dim == GpuDim::kBlock ? blocks[tag.axis] : threads[tag.axis]; }
  std::string describe() const;  // "blocks 8 x 4 x 1, threads 32 x 8 x 1"
};
// `kernel`: a launch loop (extents that are not constants count as 1).
GpuLaunch launch_of(const For* kernel);

// Calls `f` on each kernel of `s`: a launch loop with no launch loop around it. Its
// body runs on the device; the loops around it run on the host, one launch per
// iteration.
void for_each_kernel(const Stmt& s, const std::function<void(const For* kernel)>& f);

// Whether `s` holds a kernel (a launch loop), and whether it stores anything: where
// code generation and the host's launch plan start kernels (a statement with no launch
// loop that stores is a kernel of one thread).
bool contains_launch_loop(const Stmt& s);
bool stores_anything(const Stmt& s);

// CUDA's limit on a block's static shared memory (__shared__ arrays; more needs the
// dynamic opt-in, which generated kernels do not use).
inline constexpr int64_t kMaxStaticSharedBytes = 48 * 1024;

// How a statement touches a buffer: whether it stores to it, and whether it reads it
// other than to update the element it stores (a reduction's `B[i] = B[i] + ...` reads
// only what its own thread wrote). Barriers go between a write and another thread's
// read (insert_gpu_barriers.cc).
struct BufferUse {
  bool writes = false;
  bool reads = false;
};
BufferUse buffer_use(const Stmt& s, std::string_view buffer);

// The name of the stage a loop belongs to ("C" for "C.i.o"): loop variables are
// named STAGE.loop by lowering.
std::string_view stage_of_loop(std::string_view loop_name);

}  // namespace tensorgym
