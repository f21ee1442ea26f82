// The CUDA driver API, loaded at run time from libcuda.so.1 with dlopen: the build needs
// no CUDA headers or libraries, and a machine without a GPU runs everything else. The
// types and entry points below are the few this runner calls, declared as the driver's
// header (cuda.h) declares them, with the versioned symbols it maps them to.
//
// CUDA does not survive fork(): a process that initialized the driver must not fork a
// child that uses it. The measurement workers are exec'd (posix_spawn), not forked, and
// initialize the driver themselves on their first run; `run_unavailable_reason()` tells
// whether a GPU could run kernels here without initializing anything. Internal to
// codegen/cuda.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "support/status.h"

namespace tensorgym::cuda {

using CUresult = int;  // 0 is CUDA_SUCCESS
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;  // null: the context's default stream
using CUevent = struct CUevent_st*;

inline constexpr CUresult kCudaSuccess = 0;
inline constexpr CUresult kCudaErrorOutOfMemory = 2;

// CUdevice_attribute values (cuda.h).
inline constexpr int kAttributeMultiprocessorCount = 16;
inline constexpr int kAttributeComputeCapabilityMajor = 75;
inline constexpr int kAttributeComputeCapabilityMinor = 76;

// CUjit_option values (cuda.h).
inline constexpr int kJitInfoLogBuffer = 3;
inline constexpr int kJitInfoLogBufferSizeBytes = 4;
inline constexpr int kJitErrorLogBuffer = 5;
inline constexpr int kJitErrorLogBufferSizeBytes = 6;

// The entry points, each resolved from the symbol named in its comment.
struct DriverApi {
  CUresult (*init)(unsigned flags);                                              // cuInit
  CUresult (*driver_get_version)(int* version);                                  // cuDriverGetVersion
  CUresult (*device_get_count)(int* count);                                      // cuDeviceGetCount
  CUresult (*device_get)(CUdevice* device, int ordinal);                         // cuDeviceGet
  CUresult (*device_get_name)(char* name, int length, CUdevice device);          // cuDeviceGetName
  CUresult (*device_get_attribute)(int* value, int attribute, CUdevice device);  // cuDeviceGetAttribute
  CUresult (*primary_ctx_retain)(CUcontext* context, CUdevice device);           // cuDevicePrimaryCtxRetain
  CUresult (*ctx_set_current)(CUcontext context);                                // cuCtxSetCurrent
  CUresult (*ctx_synchronize)();                                                 // cuCtxSynchronize
  CUresult (*module_load_data_ex)(CUmodule* module, const void* image, unsigned num_options, int* options,
                                  void** values);                                            // cuModuleLoadDataEx
  CUresult (*module_unload)(CUmodule module);                                                // cuModuleUnload
  CUresult (*module_get_function)(CUfunction* function, CUmodule module, const char* name);  // cuModuleGetFunction
  CUresult (*mem_alloc)(CUdeviceptr* pointer, size_t bytes);                                 // cuMemAlloc_v2
  CUresult (*mem_free)(CUdeviceptr pointer);                                                 // cuMemFree_v2
  CUresult (*memcpy_htod)(CUdeviceptr dst, const void* src, size_t bytes);                   // cuMemcpyHtoD_v2
  CUresult (*memcpy_dtoh)(void* dst, CUdeviceptr src, size_t bytes);                         // cuMemcpyDtoH_v2
  CUresult (*memset_d8)(CUdeviceptr dst, unsigned char value, size_t bytes);                 // cuMemsetD8_v2
  CUresult (*launch_kernel)(CUfunction f, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                            unsigned block_y, unsigned block_z, unsigned shared_bytes, CUstream stream, void** params,
                            void** extra);                   // cuLaunchKernel
  CUresult (*event_create)(CUevent* event, unsigned flags);  // cuEventCreate
  CUresult (*event_record)(CUevent event, CUstream stream);  // cuEventRecord
  CUresult (*event_synchronize)(CUevent event);              // cuEventSynchronize
  // cuEventElapsedTime_v2 (CUDA 12.8 and later), else cuEventElapsedTime: same signature.
  CUresult (*event_elapsed_time)(float* ms, CUevent start, CUevent end);
  CUresult (*event_destroy)(CUevent event);                         // cuEventDestroy_v2
  CUresult (*get_error_name)(CUresult error, const char** text);    // cuGetErrorName
  CUresult (*get_error_string)(CUresult error, const char** text);  // cuGetErrorString
};

// What the device says about itself.
struct DeviceInfo {
  std::string name;       // "NVIDIA H100 80GB HBM3"
  int compute_major = 0;  // 9 for sm_90
  int compute_minor = 0;
  int multiprocessors = 0;
  int driver_version = 0;    // 12040 for CUDA 12.4
  std::string arch() const;  // "sm_90"
};

// The process's driver: libcuda.so.1 opened, cuInit done, device 0's primary context
// retained (shared with any library that uses the CUDA runtime, cuBLAS included).
class Driver {
 public:
  // Loads and initializes it on the first call (thread-safe), then returns the same
  // one. UNAVAILABLE saying "no GPU on this machine: ..." when libcuda.so.1 is missing,
  // is a stub, or finds no device; the failing call and the driver's error otherwise.
  static Expected<const Driver*> get();

  const DriverApi& api() const { return api_; }
  const DeviceInfo& device() const { return device_; }

  // Makes the primary context current on the calling thread (each thread has its own
  // current context; every entry point into the runner calls this first).
  Status make_current() const;

  // OK for CUDA_SUCCESS; otherwise the call's name and the driver's error name and text:
  // "cuLaunchKernel: CUDA_ERROR_INVALID_VALUE (invalid argument)". Out of device memory
  // is RESOURCE_EXHAUSTED; the rest INTERNAL.
  Status check(CUresult result, std::string_view call) const;

 private:
  Driver() = default;
  static Expected<const Driver*> load();

  DriverApi api_{};
  DeviceInfo device_;
  CUcontext context_ = nullptr;
};

// The driver's library: libcuda.so.1 (installed with the NVIDIA driver, not the toolkit).
inline constexpr const char* kDriverLibrary = "libcuda.so.1";

// Whether kernels could run on this machine, found without initializing CUDA (so the
// caller may fork afterwards): OK when `library` loads with dlopen and a GPU device
// node exists (/dev/nvidia0, ...); otherwise UNAVAILABLE "no GPU on this machine: ...".
Status probe_gpu(const char* library = kDriverLibrary);

// probe_gpu()'s message, computed once per process: empty when kernels can run here.
const std::string& run_unavailable_reason();

}  // namespace tensorgym::cuda
