// Vendor libraries computing what a benchmark computes, on the same inputs as a
// schedule compiled in this process, so the two can be timed side by side
// (benchmarks/baselines/side_by_side.h) and their outputs compared:
//
//   matrix multiplication (ops-v0 gmm, batched or not): OpenBLAS sgemm, oneDNN matmul
//   convolution, 1-D to 3-D, grouped, dilated, depthwise (ops-v0 c1d c2d c3d grp dil
//   dep, resnet50-v0 conv-*), with a ReLU / ReLU6 epilogue: oneDNN's direct convolution
//
// The operator and its sizes come from the benchmark's shape text ("N=1 H=56 W=56
// CI=64 CO=64 K=3 S=1 P=1 relu"). oneDNN gets its preferred (blocked) layouts: inputs
// are reordered once, outside the timing, as a framework would keep its weights.
//
// OpenBLAS is loaded on first use with dlopen, after setting OPENBLAS_CORETYPE (unless
// it is set) to the best core type the host supports: OpenBLAS 0.3.21 does not
// recognize every recent CPU and would fall back to its generic SSE3 kernels, and it
// reads the variable only when it is loaded. Loading it lazily also keeps its thread
// pool out of every other tensorgym process (the measuring workers).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "benchmarks/baselines/side_by_side.h"
#include "datasets/benchmark.h"

namespace tensorgym {

struct VendorKernel {
  std::string name;    // "OpenBLAS" or "oneDNN"
  std::string output;  // the benchmark output it computes
  std::function<void()> run;
  // After run(): the result in the benchmark's layout (for comparing with ours).
  std::function<const HostBuffer&()> result;
};

// The vendor kernels for the benchmark, reading `ours`' input buffers (which must
// outlive them), running on `threads` threads. Empty when no vendor library computes
// this operator or the libraries are missing; INTERNAL when a library refuses it.
Expected<std::vector<VendorKernel>> vendor_kernels(const Benchmark& benchmark, const CompiledSchedule& ours,
                                                   int threads);

// "OpenBLAS 0.3.21 (core SkylakeX), oneDNN 2.6.3", saying which are missing.
std::string vendor_libraries_text();

}  // namespace tensorgym
