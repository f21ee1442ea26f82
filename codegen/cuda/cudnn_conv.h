// cuDNN's forward convolution as an executable of the cuda target, the vendor baseline
// its convolution kernels are compared with side by side (Backend::library_conv2d).
// libcudnn is loaded at run time with dlopen (libcudnn.so.9, .so.8, .so), like the
// driver and cuBLAS; the build needs no CUDA and no cuDNN. FP32 with FMA kernels only
// (CUDNN_FMA_MATH): no tensor cores, no TF32. Internal to codegen/cuda.
#pragma once

#include <memory>
#include <string>

#include "codegen/backend/backend.h"
#include "support/status.h"

namespace tensorgym::cuda {

// The cuDNN this process loads: "cuDNN 9.1.0 (libcudnn.so.9)". UNAVAILABLE "cuDNN not
// found: ..." when no libcudnn loads or one lacks an entry point the runner calls;
// FAILED_PRECONDITION for a cuDNN older than 8 (no CUDNN_FMA_MATH). Needs no GPU.
Expected<std::string> cudnn_library();

// Y = conv(X, W) of `params`; run()'s args are {X, W, Y}. Checks the shape, then (with a
// GPU and cuDNN) initializes the device, asks cuDNN for its forward algorithms
// (cudnnFindConvolutionForwardAlgorithm: each run once on scratch buffers) and keeps the
// fastest FMA one that succeeded and needs at most 1 GiB of workspace; remarks() name
// it. INVALID_ARGUMENT for a shape cuDNN's 4-D descriptors cannot take; UNAVAILABLE
// without a GPU or without cuDNN; FAILED_PRECONDITION when cuDNN has no algorithm for it.
Expected<std::shared_ptr<const Executable>> cudnn_conv2d(const Conv2dParams& params);

}  // namespace tensorgym::cuda
