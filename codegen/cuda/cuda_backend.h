// The CUDA backend: loop nests lowered for NVIDIA GPUs (target "cuda", sm_90 by
// default). It lowers and checks GPU schedules (bound loops, launch limits, races;
// codegen/lower/gpu_checks.h) and compiles them to PTX, a kernel per GPU kernel, with
// each kernel's launch and ptxas statistics (Executable::kernels). Where the CUDA driver
// and a GPU are present it runs them (cuda_executable.h; TargetInfo::can_run), otherwise
// TargetInfo::run_unavailable says why not. Outside codegen/ it is reached through the
// backend registry (codegen/backend/registry.h), never this header.
#pragma once

#include "codegen/backend/backend.h"

namespace tensorgym {

const Backend& cuda_backend();

}  // namespace tensorgym
