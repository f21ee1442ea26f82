// cuBLAS's single-precision matrix multiplication as an executable of the cuda target,
// the vendor baseline its GEMM kernels are compared with side by side (Backend::
// library_matmul). libcublas is loaded at run time with dlopen (libcublas.so.13, .so.12,
// .so), like the driver; the build needs no CUDA. FP32 in the default math mode: no
// tensor cores, no TF32. Internal to codegen/cuda.
#pragma once

#include <cstdint>
#include <memory>

#include "codegen/backend/backend.h"
#include "support/status.h"

namespace tensorgym::cuda {

// C[m, n] = A[m, k] · B[k, n], all f32 and row-major; run()'s args are {A, B, C}, as a
// compiled GEMM's. INVALID_ARGUMENT for sizes that are not positive or past cuBLAS's
// int; UNAVAILABLE where there is no GPU or no cuBLAS (the library is loaded here, the
// device on the first run).
Expected<std::shared_ptr<const Executable>> cublas_matmul(int64_t m, int64_t n, int64_t k);

}  // namespace tensorgym::cuda
