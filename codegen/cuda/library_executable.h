// What the vendor baselines (cuBLAS SGEMM, cuDNN's convolution) share as executables of
// the cuda target: their operands copied to the device, one library call enqueued on
// the default stream per run, and the same event timing as compiled kernels
// (time_with_events), so that the two are compared like with like. Internal to
// codegen/cuda.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "codegen/backend/backend.h"
#include "codegen/cuda/cuda_driver.h"
#include "support/status.h"

namespace tensorgym::cuda {

class LibraryExecutable : public Executable {
 public:
  enum class Role { kInput, kOutput, kScratch };
  struct Operand {
    std::string name;  // "A": names the buffer in errors
    size_t bytes = 0;
    Role role = Role::kInput;  // inputs then outputs are run()'s args, in order; scratch is the library's own
  };

  // run_checked(), or on failure "tensorgym: <what> failed: <error>" and abort (the
  // runner's workers end on a device failure, as for compiled kernels).
  void run(void* const* args, int num_threads) const override;
  // Every operand allocated, the inputs copied in, one call, synchronized, the outputs
  // copied out. UNAVAILABLE without a GPU.
  Status run_checked(void* const* args, int num_threads) const override;
  bool has_device_clock() const override { return true; }
  // The operands allocated and copied once; the calls alone are timed.
  Expected<std::vector<double>> time_on_device(void* const* args, int warmup_runs, int number,
                                               int repeat) const override;

 protected:
  LibraryExecutable(std::string what, std::vector<Operand> operands)
      : what_(std::move(what)), operands_(std::move(operands)) {}

  // With the primary context current: whatever the library needs before its first call
  // (a handle created once). Called before every run; nothing by default.
  virtual Status prepare() const { return Status(); }
  // Enqueues one run on the default stream over the operands' device addresses, in the
  // order of the operands.
  virtual Status call(const std::vector<CUdeviceptr>& operands) const = 0;

 private:
  const std::string what_;  // "cuBLAS SGEMM"
  const std::vector<Operand> operands_;
};

}  // namespace tensorgym::cuda
