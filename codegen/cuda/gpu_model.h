// An analytical model of a GPU-scheduled loop nest's runtime on a described NVIDIA
// GPU: the `est_gpu_time` reward, and what `tensorgym eval --target cuda` reports
// where no GPU runs the kernels. Deterministic (no probing, no ptxas), so it is the
// same everywhere; it is a model, never passed off as a measurement.
//
// Kernel by kernel (gpu_launch.h: a loop bound to blockIdx/threadIdx with none around
// it), the model takes
//  - occupancy: resident blocks per SM from threads per block, an estimate of the
//    registers a thread needs (more for unrolled and vectorized bodies) and shared
//    memory, against the SM's limits; waves of blocks over the SMs (a last partial
//    wave leaves SMs idle);
//  - compute: the kernel's FP32 operations over the SMs' FP32 lanes, with the lanes a
//    partial warp leaves idle and latency hiding by the resident warps;
//  - memory: each access as a warp makes it, lanes along threadIdx.x: a stride of one
//    element coalesces into few 32-byte sectors, a larger one costs a sector per lane,
//    and a threadIdx.x-invariant address is one sector; what a block re-reads from L1
//    when its footprint fits there, what the kernel re-reads from L2 when its
//    footprint fits there, the rest from DRAM;
//  - a roofline: the kernel takes the longest of compute, L1, L2 and DRAM time, plus its
//    launch overhead once per launch (loops outside the kernel launch it again).
// Work that no bound loop contains runs as a kernel of one thread (what CUDA would
// do with it), latency-bound. The cuda target rejects such a schedule when it
// compiles, but the model still ranks it, so an episode's reward is defined from its
// first, unbound step. docs/gpu.md states the model's limits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/backend/backend.h"
#include "codegen/lower/loop_nest.h"

namespace tensorgym::cuda {

// A GPU as the model sees it (FP32 CUDA cores; no tensor cores).
struct GpuSpec {
  std::string name;
  std::string arch;  // the PTX architecture: "sm_90"
  int sms = 132;
  double clock_hz = 1.98e9;      // boost clock
  int fp32_lanes_per_sm = 128;   // FMA lanes: 2 flops each per cycle
  double dram_bytes_per_s = 3.35e12;
  double l1_bytes_per_cycle_per_sm = 128;  // what an SM's load/store units move per cycle
  double l2_bytes_per_s = 10e12;
  int64_t l2_bytes = 50LL << 20;
  int64_t l1_bytes_per_sm = 256 << 10;      // L1 and shared memory together
  int64_t shared_bytes_per_sm = 228 << 10;  // the most of it shared memory may take
  int registers_per_sm = 65536;
  int max_registers_per_thread = 255;
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  int warp_size = 32;
  double launch_overhead_s = 3e-6;  // a kernel launch, host to device and back
  // Resident warps per SM that hide the FP pipeline's latency, and DRAM's.
  int warps_to_hide_compute = 16;
  int warps_to_hide_memory = 32;
  double single_thread_cycles_per_op = 4;       // one dependent FP op on one thread
  double single_thread_cycles_per_access = 40;  // one cached global access on one thread

  static const GpuSpec& h100_sxm();  // H100 SXM5 80 GB
  static const GpuSpec& h200_sxm();  // H200 SXM 141 GB: H100's SMs, faster HBM3e
};

// The target-independent nest (bound loops keep their thread tags) on `gpu`
// (KernelEstimate, RuntimeEstimate: codegen/backend/backend.h).
RuntimeEstimate estimate_gpu_time(const LoopNest& nest, const GpuSpec& gpu = GpuSpec::h100_sxm());

}  // namespace tensorgym::cuda
