// A kernel that TVM compiled and exported (`tvm.compile(...).export_library(path)`),
// loaded into this process so that it is timed side by side with ours and the vendor
// libraries (benchmarks/metaschedule/ tunes them with MetaSchedule).
//
// Nothing of TVM is linked into TensorGym: TVM's own runtime libraries (libtvm_ffi.so
// and libtvm_runtime.so, from the TVM installation that built the kernel) are opened
// with dlopen on first use, and the kernel is loaded and called through TVM FFI's
// stable C ABI (tvm/ffi/c_api.h: `ffi.ModuleLoadFromFile`, `ffi.ModuleGetFunction`,
// TVMFFIFunctionCall with DLTensor arguments). The few ABI structures used are declared
// in the .cc from that header's layout (TVM FFI 0.1).
//
//   TvmLibraries libs{"/venv/.../libtvm_ffi.so", "/venv/.../libtvm_runtime.so"};
//   Expected<std::unique_ptr<TvmKernel>> k = TvmKernel::load(libs, "dir/gmm-1.so", 1);
//   Status s = (*k)->bind({&a, &b, &c});  // inputs then outputs, the PrimFunc's order
//   (*k)->run();                          // the timed call
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codegen/interp/host_buffer.h"
#include "support/status.h"

namespace tensorgym {

struct TvmLibraries {
  std::string ffi;      // path of libtvm_ffi.so
  std::string runtime;  // path of libtvm_runtime.so
};

// A module whose `main` takes one input in a packed layout, with a function that
// packs it (`prepack(input, packed)`), run once ahead of the timed runs: TVM's layout
// rewrite of weights, split off as relax's SplitLayoutRewritePreproc does.
struct TvmPrepack {
  int input = -1;              // which input `prepack` packs; -1: none
  std::vector<int64_t> shape;  // the packed tensor's shape (same element type)
  std::string function = "prepack";
};

class TvmKernel {
 public:
  // Opens the libraries (once per process; a second call must name the same ones),
  // loads the module at `module_path` and finds `function` in it. TVM's thread pool
  // uses `threads` threads (TVM_NUM_THREADS, set before the runtime is first opened
  // unless the environment sets it). Errors: UNAVAILABLE when a library cannot be
  // opened or lacks the C ABI, NOT_FOUND for a missing module or function,
  // INVALID_ARGUMENT with TVM's message when TVM refuses the module.
  static Expected<std::unique_ptr<TvmKernel>> load(const TvmLibraries& libs, const std::string& module_path,
                                                   int threads, const std::string& function = "main");
  ~TvmKernel();
  TvmKernel(const TvmKernel&) = delete;
  TvmKernel& operator=(const TvmKernel&) = delete;

  // Binds the buffers (which must outlive the kernel's runs) as the function's
  // arguments and calls it once. TVM checks ranks, shapes and element types itself:
  // a mismatch is INVALID_ARGUMENT with its message.
  Status bind(const std::vector<HostBuffer*>& buffers);
  // Calls the function on the bound buffers. An error (none is expected after bind's
  // call succeeded) is kept: error() returns the first.
  void run();
  const Status& error() const { return error_; }

 private:
  TvmKernel() = default;
  Status call();

  void* module_ = nullptr;    // TVMFFIObjectHandle, owned
  void* function_ = nullptr;  // TVMFFIObjectHandle, owned
  struct Arguments;
  std::unique_ptr<Arguments> args_;
  Status error_;
};

}  // namespace tensorgym
