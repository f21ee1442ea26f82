// The cuda target's executable: PTX and its launch plan, run on the GPU through the
// driver API (cuda_driver.h). run() copies the inputs and outputs to the device, makes
// the plan's launches, synchronizes and copies the outputs back, so the host clock
// times it like any executable; time_on_device() times the launches alone with events.
// The module is loaded (the driver JIT-compiles the PTX) on the first run, never at
// compile time: compiling needs no GPU. Internal to codegen/cuda.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "codegen/backend/backend.h"
#include "codegen/cuda/cuda_driver.h"
#include "codegen/cuda/launch_plan.h"

namespace tensorgym::cuda {

class CudaExecutable final : public Executable {
 public:
  // `ptx` is always kept (the module is loaded from it); code_text() only when
  // `keep_code_text`.
  CudaExecutable(const LoopNest& nest, std::string ptx, bool keep_code_text, std::vector<DeviceKernel> kernels,
                 LaunchPlan plan, double compile_ms, std::vector<std::string> remarks = {});
  ~CudaExecutable() override;

  // A device failure is printed to stderr and ends the process (in a worker: a crash
  // the runner reports as RUNTIME_CRASH with that line).
  void run(void* const* args, int num_threads) const override;
  Status run_checked(void* const* args, int num_threads) const override;
  bool has_device_clock() const override { return true; }
  Expected<std::vector<double>> time_on_device(void* const* args, int warmup_runs, int number,
                                               int repeat) const override;

  const LaunchPlan& plan() const { return plan_; }

 private:
  struct Module;
  class DeviceBuffers;

  // The driver with the context current and the module loaded (once per executable).
  Expected<const Module*> ready(const Driver** driver) const;
  // The plan's launches of one run, on the default stream (asynchronous).
  Status launch_all(const Driver& driver, const Module& module, const DeviceBuffers& buffers) const;

  std::string ptx_;
  LaunchPlan plan_;
  mutable std::mutex load_mu_;
  mutable std::unique_ptr<Module> module_;
  mutable Status load_error_;
};

}  // namespace tensorgym::cuda
