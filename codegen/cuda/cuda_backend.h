// The CUDA backend: loop nests lowered for NVIDIA GPUs (target "cuda", sm_90 by
// default). Today it lowers and checks GPU schedules (bound loops, launch limits,
// races; codegen/lower/gpu_checks.h) and the reference interpreter runs its nests;
// PTX code generation (LLVM's NVPTX backend) and running kernels come next, so
// compile() says so and nothing measures the target. Outside codegen/ it is reached
// through the backend registry (codegen/backend/registry.h), never this header.
#pragma once

#include "codegen/backend/backend.h"

namespace tensorgym {

const Backend& cuda_backend();

}  // namespace tensorgym
