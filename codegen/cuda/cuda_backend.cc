#include "codegen/cuda/cuda_backend.h"

#include <fmt/format.h>

#include "codegen/lower/gpu_checks.h"
#include "support/fnv.h"

#ifndef TENSORGYM_LLVM_VERSION
#define TENSORGYM_LLVM_VERSION "unknown"
#endif

namespace tensorgym {
namespace {

class CudaBackend final : public Backend {
 public:
  const TargetInfo& target() const override {
    static const TargetInfo info = [] {
      TargetInfo i;
      i.name = "cuda";
      i.triple = "nvptx64-nvidia-cuda";
      i.device = "sm_90";
      i.compiler_version = TENSORGYM_LLVM_VERSION;  // NVPTX comes from the same LLVM as the CPU's code
      i.num_cores = 1;
      // The fields that change generated code, each followed by a separator byte.
      uint64_t h = kFnvOffset;
      for (const std::string* s : {&i.triple, &i.device, &i.features, &i.compiler_version})
        h = fnv1a64("\xff", fnv1a64(*s, h));
      i.fingerprint = hex64(h);
      i.can_run = false;  // no code generation yet, and no GPU runner
      i.has_cost_model = false;
      return i;
    }();
    return info;
  }

  // Checks only: bound loops stay loops, which the interpreter runs as such.
  const LoweringTarget& lowering() const override {
    static const LoweringTarget lowering{"cuda",
                                         {{.name = "check_gpu_loops", .check = check_gpu_loops},
                                          {.name = "check_gpu_kernels", .check = check_gpu_kernels},
                                          {.name = "check_gpu_stores", .check = check_gpu_stores}},
                                         /*thread_binding=*/true};
    return lowering;
  }

  Expected<std::shared_ptr<const Executable>> compile(const LoopNest& nest, const CompileOptions&) const override {
    if (nest.target != "cuda")
      return failed_precondition(
          fmt::format("the loop nest was lowered for {}, not for the cuda target (lower it with the target, "
                      "codegen/lower/lower.h)",
                      nest.target.empty() ? std::string("no target") : "target " + nest.target));
    return unimplemented("PTX code generation for the cuda target is not implemented yet");
  }
};

}  // namespace

const Backend& cuda_backend() {
  static const CudaBackend backend;
  return backend;
}

}  // namespace tensorgym
