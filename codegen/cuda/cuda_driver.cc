#include "codegen/cuda/cuda_driver.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <filesystem>
#include <mutex>

#include "codegen/cuda/shared_library.h"

namespace tensorgym::cuda {
namespace {

constexpr const char* kNoGpu = "no GPU on this machine: ";

// dlerror()'s text without the library's name it starts with, or what to say when it
// has none.
std::string dl_error(const char* library, const char* otherwise) {
  const char* e = dlerror();
  std::string text = e ? e : otherwise;
  const std::string prefix = std::string(library) + ": ";
  if (text.rfind(prefix, 0) == 0) text.erase(0, prefix.size());
  return text;
}

// Whether a GPU device node exists. The NVIDIA driver creates one per GPU; a container
// sees those it was given.
bool has_gpu_device_node() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 6 && name.rfind("nvidia", 0) == 0 && name.find_first_not_of("0123456789", 6) == std::string::npos)
      return true;
  }
  return false;
}

}  // namespace

std::string DeviceInfo::arch() const { return fmt::format("sm_{}{}", compute_major, compute_minor); }

Status probe_gpu(const char* library) {
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return Status(StatusCode::kUnavailable, fmt::format("{}{} not found, dlopen says: {}", kNoGpu, library,
                                                        dl_error(library, "no reason given")));
  dlclose(handle);
  if (!has_gpu_device_node())
    return Status(StatusCode::kUnavailable,
                  fmt::format("{}{} loads but there is no GPU device (no /dev/nvidia0, ...)", kNoGpu, library));
  return Status();
}

const std::string& run_unavailable_reason() {
  static const std::string reason = [] {
    Status s = probe_gpu();
    return s.ok() ? std::string() : s.message();
  }();
  return reason;
}

Status Driver::check(CUresult result, std::string_view call) const {
  if (result == kCudaSuccess) return Status();
  const char* name = nullptr;
  const char* text = nullptr;
  if (!api_.get_error_name || api_.get_error_name(result, &name) != kCudaSuccess) name = nullptr;
  if (!api_.get_error_string || api_.get_error_string(result, &text) != kCudaSuccess) text = nullptr;
  std::string message = fmt::format("{}: {} ({})", call, name ? name : fmt::format("CUDA error {}", result),
                                    text ? text : "no description");
  return Status(result == kCudaErrorOutOfMemory ? StatusCode::kResourceExhausted : StatusCode::kInternal,
                std::move(message));
}

Status Driver::make_current() const { return check(api_.ctx_set_current(context_), "cuCtxSetCurrent"); }

Expected<const Driver*> Driver::get() {
  // Loaded once; a failure is remembered too (the machine does not change).
  static const Expected<const Driver*> driver = load();
  return driver;
}

Expected<const Driver*> Driver::load() {
  void* lib = dlopen(kDriverLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return Status(StatusCode::kUnavailable, fmt::format("{}{} not found, dlopen says: {}", kNoGpu, kDriverLibrary,
                                                        dl_error(kDriverLibrary, "no reason given")));
  // Never closed: the driver lives as long as the process.
  auto* d = new Driver();
  DriverApi& a = d->api_;
  bool ok =
      resolve_symbol(lib, "cuInit", a.init) && resolve_symbol(lib, "cuDriverGetVersion", a.driver_get_version) &&
      resolve_symbol(lib, "cuDeviceGetCount", a.device_get_count) && resolve_symbol(lib, "cuDeviceGet", a.device_get) &&
      resolve_symbol(lib, "cuDeviceGetName", a.device_get_name) &&
      resolve_symbol(lib, "cuDeviceGetAttribute", a.device_get_attribute) &&
      resolve_symbol(lib, "cuDevicePrimaryCtxRetain", a.primary_ctx_retain) &&
      resolve_symbol(lib, "cuCtxSetCurrent", a.ctx_set_current) &&
      resolve_symbol(lib, "cuCtxSynchronize", a.ctx_synchronize) &&
      resolve_symbol(lib, "cuModuleLoadDataEx", a.module_load_data_ex) &&
      resolve_symbol(lib, "cuModuleUnload", a.module_unload) &&
      resolve_symbol(lib, "cuModuleGetFunction", a.module_get_function) &&
      resolve_symbol(lib, "cuMemAlloc_v2", a.mem_alloc) && resolve_symbol(lib, "cuMemFree_v2", a.mem_free) &&
      resolve_symbol(lib, "cuMemcpyHtoD_v2", a.memcpy_htod) && resolve_symbol(lib, "cuMemcpyDtoH_v2", a.memcpy_dtoh) &&
      resolve_symbol(lib, "cuMemsetD8_v2", a.memset_d8) && resolve_symbol(lib, "cuLaunchKernel", a.launch_kernel) &&
      resolve_symbol(lib, "cuEventCreate", a.event_create) && resolve_symbol(lib, "cuEventRecord", a.event_record) &&
      resolve_symbol(lib, "cuEventSynchronize", a.event_synchronize) &&
      (resolve_symbol(lib, "cuEventElapsedTime_v2", a.event_elapsed_time) ||
       resolve_symbol(lib, "cuEventElapsedTime", a.event_elapsed_time)) &&
      resolve_symbol(lib, "cuEventDestroy_v2", a.event_destroy) &&
      resolve_symbol(lib, "cuGetErrorName", a.get_error_name) &&
      resolve_symbol(lib, "cuGetErrorString", a.get_error_string);
  if (!ok) {
    delete d;
    return Status(StatusCode::kUnavailable,
                  fmt::format("{} lacks a driver entry point this runner needs ({}); the NVIDIA driver is too old",
                              kDriverLibrary, dl_error(kDriverLibrary, "unknown symbol")));
  }
  // The toolkit's stub library (for linking only) answers CUDA_ERROR_STUB_LIBRARY, a
  // machine without a GPU CUDA_ERROR_NO_DEVICE: both mean nothing runs here.
  if (Status s = d->check(a.init(0), "cuInit"); !s.ok()) {
    delete d;
    return Status(StatusCode::kUnavailable, kNoGpu + s.message());
  }
  int count = 0;
  if (Status s = d->check(a.device_get_count(&count), "cuDeviceGetCount"); !s.ok() || count == 0) {
    delete d;
    return Status(StatusCode::kUnavailable,
                  kNoGpu + (s.ok() ? std::string("cuDeviceGetCount found no CUDA device") : s.message()));
  }
  CUdevice device = 0;
  DeviceInfo& info = d->device_;
  char name[256] = {};
  Status s = d->check(a.device_get(&device, 0), "cuDeviceGet");
  if (s.ok()) s = d->check(a.device_get_name(name, int(sizeof name) - 1, device), "cuDeviceGetName");
  if (s.ok())
    s = d->check(a.device_get_attribute(&info.compute_major, kAttributeComputeCapabilityMajor, device),
                 "cuDeviceGetAttribute");
  if (s.ok())
    s = d->check(a.device_get_attribute(&info.compute_minor, kAttributeComputeCapabilityMinor, device),
                 "cuDeviceGetAttribute");
  if (s.ok())
    s = d->check(a.device_get_attribute(&info.multiprocessors, kAttributeMultiprocessorCount, device),
                 "cuDeviceGetAttribute");
  if (s.ok()) s = d->check(a.driver_get_version(&info.driver_version), "cuDriverGetVersion");
  if (s.ok()) s = d->check(a.primary_ctx_retain(&d->context_, device), "cuDevicePrimaryCtxRetain");
  if (!s.ok()) {
    delete d;
    return s;
  }
  info.name = name;
  return static_cast<const Driver*>(d);
}

}  // namespace tensorgym::cuda
