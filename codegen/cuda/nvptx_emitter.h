// LLVM IR for NVPTX from a nest lowered for the cuda target: one kernel (a PTX .entry)
// per GPU kernel of the nest (codegen/lower/gpu_launch.h). Internal to codegen/cuda.
#pragma once

#include <string>
#include <vector>

#include "codegen/lower/gpu_launch.h"
#include "codegen/lower/loop_nest.h"
#include "support/status.h"

namespace llvm {
class Module;
}  // namespace llvm

namespace tensorgym::cuda {

// One kernel of the module and how the host launches it.
struct KernelSpec {
  std::string name;   // the PTX entry: "tg_kernel_0", ...
  std::string stage;  // the stage of its outermost launch loop ("" for a one-thread kernel)
  GpuLaunch launch;
  // Its parameters in order: buffers (the nest's arguments, then the global buffers
  // allocated around it on the host), then the host loops' variables around it (i32).
  std::vector<std::string> buffer_params;
  std::vector<std::string> scalar_params;
};

// A buffer allocated outside every kernel: global memory the host allocates, which
// kernels pass between them (a producer computed at the root, read by the next kernel).
struct GlobalBuffer {
  std::string name;
  DataType dtype;
  int64_t elements = 0;
};

struct KernelModule {
  std::vector<KernelSpec> kernels;  // in the order the host launches them
  std::vector<GlobalBuffer> globals;
};

// Adds the kernels of `nest` (lowered for cuda) to `module`, marked as PTX entries.
// Bound loops read %ctaid / %tid, guarded where their extent is smaller than the
// launch's; unrolled and vectorized loops are unrolled, other loops stay loops;
// buffers are global-memory (addrspace 1) kernel parameters (16-byte aligned), shared
// buffers are per-block arrays (addrspace 3) with barriers as bar.sync, and other
// buffers allocated inside a kernel are per-thread allocas (each thread's own part of
// one allocated outside its thread loops: gpu_private_buffers.h).
// exp / log / tanh call libdevice (__nv_expf, __nv_exp, ...: emit_ptx links it) where
// `libdevice_math`, else use PTX's approximate ex2 / lg2 in f32.
// INTERNAL when the nest holds what the cuda target's checks should have refused.
Expected<KernelModule> emit_kernels(const LoopNest& nest, llvm::Module& module, bool libdevice_math = false);

}  // namespace tensorgym::cuda
