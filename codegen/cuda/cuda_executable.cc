#include "codegen/cuda/cuda_executable.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

#include "codegen/cuda/device_memory.h"
#include "support/read_slack.h"

namespace tensorgym::cuda {

struct CudaExecutable::Module {
  CUmodule module = nullptr;
  std::vector<CUfunction> functions;  // by kernel, launch order
};

// The plan's buffers in device memory for one run (or one timing). Inputs keep the
// host's read slack on both sides, zero-filled (support/read_slack.h).
class CudaExecutable::DeviceBuffers {
 public:
  explicit DeviceBuffers(const Driver& driver) : memory_(driver) {}

  Status allocate(const LaunchPlan& plan) {
    for (const PlanBuffer& b : plan.buffers) {
      const size_t slack = b.role == PlanBuffer::kInput ? size_t(kInputReadSlackBytes) : 0;
      TG_ASSIGN_OR_RETURN(CUdeviceptr p, memory_.allocate(size_t(b.bytes()), slack, "buffer " + b.name));
      pointers_.push_back(p);
    }
    return Status();
  }

  // The run's inputs and outputs from the host: outputs too, so that an element no
  // kernel writes keeps the host's poison and fails the correctness check.
  Status copy_in(const LaunchPlan& plan, void* const* args) const {
    for (int i = 0; i < plan.num_args; ++i)
      TG_RETURN_IF_ERROR(memory_.copy_in(pointers_[size_t(i)], args[i], size_t(plan.buffers[size_t(i)].bytes())));
    return Status();
  }

  Status copy_out(const LaunchPlan& plan, void* const* args) const {
    for (int i = 0; i < plan.num_args; ++i) {
      const PlanBuffer& b = plan.buffers[size_t(i)];
      if (b.role == PlanBuffer::kOutput)
        TG_RETURN_IF_ERROR(memory_.copy_out(args[i], pointers_[size_t(i)], size_t(b.bytes())));
    }
    return Status();
  }

  CUdeviceptr pointer(int buffer) const { return pointers_[size_t(buffer)]; }

 private:
  DeviceAllocations memory_;
  std::vector<CUdeviceptr> pointers_;  // where each buffer's data starts
};

CudaExecutable::CudaExecutable(const LoopNest& nest, std::string ptx, bool keep_code_text,
                               std::vector<DeviceKernel> kernels, LaunchPlan plan, double compile_ms,
                               std::vector<std::string> remarks)
    : ptx_(std::move(ptx)), plan_(std::move(plan)) {
  nest_ = nest;
  remarks_ = std::move(remarks);
  if (keep_code_text) code_text_ = ptx_;
  kernels_ = std::move(kernels);
  compile_ms_ = compile_ms;
}

CudaExecutable::~CudaExecutable() {
  if (!module_) return;
  Expected<const Driver*> driver = Driver::get();
  if (driver.ok() && (*driver)->make_current().ok()) (*driver)->api().module_unload(module_->module);
}

Expected<const CudaExecutable::Module*> CudaExecutable::ready(const Driver** driver) const {
  TG_ASSIGN_OR_RETURN(*driver, Driver::get());
  const Driver& d = **driver;
  TG_RETURN_IF_ERROR(d.make_current());
  std::lock_guard<std::mutex> lock(load_mu_);
  if (module_) return module_.get();
  if (!load_error_.ok()) return load_error_;
  // The driver JIT-compiles the PTX for this GPU; its log says why it could not.
  auto m = std::make_unique<Module>();
  char log[8192] = {};
  int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferSizeBytes};
  void* values[] = {log, reinterpret_cast<void*>(uintptr_t(sizeof log))};
  Status s = d.check(d.api().module_load_data_ex(&m->module, ptx_.c_str(), 2, options, values), "cuModuleLoadDataEx");
  if (!s.ok()) {
    load_error_ = Status(s.code(), fmt::format("{} loading the PTX on {} ({}){}{}", s.message(), d.device().name,
                                               d.device().arch(), log[0] ? ": " : "", log));
    return load_error_;
  }
  for (const DeviceKernel& k : kernels_) {
    CUfunction f = nullptr;
    s = d.check(d.api().module_get_function(&f, m->module, k.name.c_str()), "cuModuleGetFunction " + k.name);
    if (!s.ok()) {
      d.api().module_unload(m->module);
      load_error_ = s;
      return load_error_;
    }
    m->functions.push_back(f);
  }
  module_ = std::move(m);
  return module_.get();
}

Status CudaExecutable::launch_all(const Driver& driver, const Module& module, const DeviceBuffers& buffers) const {
  std::vector<CUdeviceptr> pointers;
  std::vector<int32_t> loop_values;
  std::vector<void*> params;
  for (const PlanLaunch& l : plan_.launches) {
    const DeviceKernel& k = kernels_[size_t(l.kernel)];
    const std::vector<int>& args = plan_.kernel_buffers[size_t(l.kernel)];
    // cuLaunchKernel takes a pointer to each parameter's value.
    pointers.clear();
    for (int b : args) pointers.push_back(buffers.pointer(b));
    loop_values = l.loop_values;
    params.clear();
    for (CUdeviceptr& p : pointers) params.push_back(&p);
    for (int32_t& v : loop_values) params.push_back(&v);
    const CUresult r = driver.api().launch_kernel(
        module.functions[size_t(l.kernel)], unsigned(k.blocks[0]), unsigned(k.blocks[1]), unsigned(k.blocks[2]),
        unsigned(k.threads[0]), unsigned(k.threads[1]), unsigned(k.threads[2]), 0, nullptr, params.data(), nullptr);
    TG_RETURN_IF_ERROR(driver.check(r, "cuLaunchKernel " + k.name));
  }
  return Status();
}

Status CudaExecutable::run_checked(void* const* args, int) const {
  const Driver* driver = nullptr;
  TG_ASSIGN_OR_RETURN(const Module* module, ready(&driver));
  DeviceBuffers buffers(*driver);
  TG_RETURN_IF_ERROR(buffers.allocate(plan_));
  TG_RETURN_IF_ERROR(buffers.copy_in(plan_, args));
  TG_RETURN_IF_ERROR(launch_all(*driver, *module, buffers));
  // A kernel's fault surfaces here, when the device has run it.
  TG_RETURN_IF_ERROR(driver->check(driver->api().ctx_synchronize(), "cuCtxSynchronize (running the kernels)"));
  return buffers.copy_out(plan_, args);
}

void CudaExecutable::run(void* const* args, int num_threads) const {
  const Status s = run_checked(args, num_threads);
  if (s.ok()) return;
  std::fprintf(stderr, "tensorgym: the cuda kernels failed: %s\n", s.to_string().c_str());
  std::fflush(stderr);
  std::abort();
}

Expected<std::vector<double>> CudaExecutable::time_on_device(void* const* args, int warmup_runs, int number,
                                                             int repeat) const {
  const Driver* driver = nullptr;
  TG_ASSIGN_OR_RETURN(const Module* module, ready(&driver));
  DeviceBuffers buffers(*driver);
  TG_RETURN_IF_ERROR(buffers.allocate(plan_));
  TG_RETURN_IF_ERROR(buffers.copy_in(plan_, args));
  return time_with_events(
      *driver, [&] { return launch_all(*driver, *module, buffers); }, warmup_runs, number, repeat);
}

}  // namespace tensorgym::cuda
