#include "codegen/cuda/cuda_backend.h"

#include <fmt/format.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <chrono>

#include "codegen/cuda/cublas_matmul.h"
#include "codegen/cuda/cuda_driver.h"
#include "codegen/cuda/cudnn_conv.h"
#include "codegen/cuda/cuda_executable.h"
#include "codegen/cuda/launch_plan.h"
#include "codegen/cuda/libdevice.h"
#include "codegen/cuda/nvptx_emitter.h"
#include "codegen/cuda/ptx_emitter.h"
#include "codegen/cuda/gpu_model.h"
#include "codegen/cuda/ptxas.h"
#include "codegen/lower/default_gpu_schedule.h"
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
      // Which exp / log / tanh the kernels get (as this process first found it).
      i.features = cuda::find_libdevice().empty() ? "" : "+libdevice";
      i.num_cores = 1;
      // The fields that change generated code, each followed by a separator byte.
      uint64_t h = kFnvOffset;
      for (const std::string* s : {&i.triple, &i.device, &i.features, &i.compiler_version})
        h = fnv1a64("\xff", fnv1a64(*s, h));
      i.fingerprint = hex64(h);
      // Where the driver loads and a GPU exists, found without initializing CUDA: this
      // process may still fork, and the workers that run kernels initialize it themselves.
      i.run_unavailable = cuda::run_unavailable_reason();
      i.can_run = i.run_unavailable.empty();
      i.has_cost_model = false;
      i.clock = "device";  // CUDA events around the launches
      return i;
    }();
    return info;
  }

  // Checks, then barriers: bound loops stay loops, which the interpreter runs as such.
  const LoweringTarget& lowering() const override {
    static const LoweringTarget lowering{"cuda",
                                         {{.name = "check_gpu_loops", .check = check_gpu_loops},
                                          {.name = "check_gpu_scopes", .check = check_gpu_scopes},
                                          {.name = "check_gpu_kernels", .check = check_gpu_kernels},
                                          {.name = "check_gpu_stores", .check = check_gpu_stores},
                                          {.name = "insert_gpu_barriers", .run = insert_gpu_barriers}},
                                         /*thread_binding=*/true, TargetKind::kGpu};
    return lowering;
  }

  // One thread per output element in blocks (codegen/lower/default_gpu_schedule.h): a
  // GPU cannot run the unscheduled program's single thread.
  Expected<std::string> default_schedule(const ProgramPtr& program) const override {
    TG_ASSIGN_OR_RETURN(Schedule s, default_gpu_schedule(program, lowering()));
    return s.trace().to_string();
  }

  // The GPU model on the GPU the target names (TargetInfo::device's H100), for a nest a
  // GPU could run but for work outside any kernel (the model runs it on one thread):
  // a schedule the target's other checks refuse has no estimate.
  Expected<RuntimeEstimate> estimate_runtime(const LoopNest& nest) const override {
    if (nest.body.defined()) {
      TG_RETURN_IF_ERROR(check_gpu_loops(nest.body));
      TG_RETURN_IF_ERROR(check_gpu_scopes(nest.body));
      TG_RETURN_IF_ERROR(check_gpu_launches(nest.body));
      TG_RETURN_IF_ERROR(check_gpu_stores(nest.body));
    }
    return cuda::estimate_gpu_time(nest, cuda::GpuSpec::h100_sxm());
  }

  Expected<std::shared_ptr<const Executable>> library_matmul(int64_t m, int64_t n, int64_t k) const override {
    return cuda::cublas_matmul(m, n, k);
  }

  Expected<std::shared_ptr<const Executable>> library_conv2d(const Conv2dParams& params) const override {
    return cuda::cudnn_conv2d(params);
  }

  // One NVPTX module with a kernel per GPU kernel of the nest, its PTX, and where
  // ptxas is installed, each kernel assembled for its statistics.
  Expected<std::shared_ptr<const Executable>> compile(const LoopNest& nest,
                                                      const CompileOptions& options) const override {
    if (nest.target != "cuda")
      return failed_precondition(
          fmt::format("the loop nest was lowered for {}, not for the cuda target (lower it with the target, "
                      "codegen/lower/lower.h)",
                      nest.target.empty() ? std::string("no target") : "target " + nest.target));
    const auto t0 = std::chrono::steady_clock::now();
    const std::string arch = options.device.empty() ? target().device : options.device;
    llvm::LLVMContext context;
    llvm::Module module("tensorgym_cuda", context);
    // Precise math where libdevice is found, else PTX's approximate instructions.
    const std::string libdevice = cuda::find_libdevice();
    TG_ASSIGN_OR_RETURN(cuda::KernelModule kernels, cuda::emit_kernels(nest, module, !libdevice.empty()));
    TG_ASSIGN_OR_RETURN(std::string ptx, cuda::emit_ptx(module, {.arch = arch, .libdevice = libdevice}));
    std::vector<std::string> remarks;
    if (options.keep_remarks)
      remarks.push_back(libdevice.empty() ? "math: exp / log / tanh approximate (ex2.approx / lg2.approx in f32): "
                                            "no libdevice found"
                                          : "math: exp / log / tanh from libdevice " + libdevice);

    std::vector<DeviceKernel> out;
    for (const cuda::KernelSpec& k : kernels.kernels) {
      DeviceKernel d;
      d.name = k.name;
      d.stage = k.stage;
      for (int a = 0; a < 3; ++a) {
        d.blocks[a] = k.launch.blocks[a];
        d.threads[a] = k.launch.threads[a];
      }
      d.params = k.buffer_params;
      d.params.insert(d.params.end(), k.scalar_params.begin(), k.scalar_params.end());
      out.push_back(std::move(d));
    }
    Expected<std::map<std::string, cuda::PtxasStats>> stats =
        cuda::find_ptxas().empty() ? Expected<std::map<std::string, cuda::PtxasStats>>(not_found("no ptxas"))
                                   : cuda::assemble_ptx(ptx, arch);
    // Rejected PTX ("ptxas rejected the PTX for sm_90: <its messages>") or a ptxas that
    // hangs is the compile's error. A ptxas that cannot start (a sandboxed measurement
    // worker may not start programs) leaves the kernels unassembled.
    const StatusCode code = stats.status().code();
    if (!stats.ok() && code != StatusCode::kNotFound && code != StatusCode::kUnavailable) return stats.status();
    if (stats.ok()) {
      for (DeviceKernel& d : out) {
        auto it = stats->find(d.name);
        if (it == stats->end()) continue;
        d.assembled = true;
        d.registers = it->second.registers;
        d.shared_bytes = it->second.shared_bytes;
        d.stack_bytes = it->second.stack_bytes;
        d.spill_store_bytes = it->second.spill_store_bytes;
        d.spill_load_bytes = it->second.spill_load_bytes;
      }
    }
    // How the host runs them: a plan that disagrees with the kernels is a compile error.
    TG_ASSIGN_OR_RETURN(cuda::LaunchPlan plan, cuda::make_launch_plan(nest, out));
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return std::shared_ptr<const Executable>(std::make_shared<cuda::CudaExecutable>(
        nest, std::move(ptx), options.keep_code_text, std::move(out), std::move(plan), ms, std::move(remarks)));
  }
};

}  // namespace

const Backend& cuda_backend() {
  static const CudaBackend backend;
  return backend;
}

}  // namespace tensorgym
