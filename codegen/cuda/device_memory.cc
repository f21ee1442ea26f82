#include "codegen/cuda/device_memory.h"

#include <fmt/format.h>

namespace tensorgym::cuda {
namespace {

// An event destroyed with its scope.
class Event {
 public:
  explicit Event(const Driver& driver) : driver_(driver) {}
  ~Event() {
    if (event_) driver_.api().event_destroy(event_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Status create() { return driver_.check(driver_.api().event_create(&event_, 0), "cuEventCreate"); }
  CUevent get() const { return event_; }

 private:
  const Driver& driver_;
  CUevent event_ = nullptr;
};

}  // namespace

DeviceAllocations::~DeviceAllocations() {
  for (CUdeviceptr base : bases_) driver_.api().mem_free(base);
}

Expected<CUdeviceptr> DeviceAllocations::allocate(size_t bytes, size_t slack, const std::string& what) {
  const size_t total = std::max<size_t>(bytes, 1) + 2 * slack;
  CUdeviceptr base = 0;
  if (Status s = driver_.check(driver_.api().mem_alloc(&base, total), "cuMemAlloc"); !s.ok())
    return Status(s.code(), fmt::format("{} bytes for {}: {}", total, what, s.message()));
  bases_.push_back(base);
  if (slack > 0) TG_RETURN_IF_ERROR(driver_.check(driver_.api().memset_d8(base, 0, total), "cuMemsetD8"));
  return base + CUdeviceptr(slack);
}

Status DeviceAllocations::copy_in(CUdeviceptr dst, const void* src, size_t bytes) const {
  if (bytes == 0) return Status();
  return driver_.check(driver_.api().memcpy_htod(dst, src, bytes), "cuMemcpyHtoD");
}

Status DeviceAllocations::copy_out(void* dst, CUdeviceptr src, size_t bytes) const {
  if (bytes == 0) return Status();
  return driver_.check(driver_.api().memcpy_dtoh(dst, src, bytes), "cuMemcpyDtoH");
}

Expected<std::vector<double>> time_with_events(const Driver& driver, const std::function<Status()>& launch_once,
                                               int warmup_runs, int number, int repeat) {
  if (warmup_runs < 0 || number < 1 || repeat < 1)
    return invalid_argument("device timing: warmup_runs must be >= 0, number and repeat >= 1");
  const DriverApi& api = driver.api();
  for (int i = 0; i < warmup_runs; ++i) TG_RETURN_IF_ERROR(launch_once());
  TG_RETURN_IF_ERROR(driver.check(api.ctx_synchronize(), "cuCtxSynchronize (warm-up runs)"));
  Event start(driver), stop(driver);
  TG_RETURN_IF_ERROR(start.create());
  TG_RETURN_IF_ERROR(stop.create());
  std::vector<double> samples;
  for (int r = 0; r < repeat; ++r) {
    TG_RETURN_IF_ERROR(driver.check(api.event_record(start.get(), nullptr), "cuEventRecord"));
    for (int i = 0; i < number; ++i) TG_RETURN_IF_ERROR(launch_once());
    TG_RETURN_IF_ERROR(driver.check(api.event_record(stop.get(), nullptr), "cuEventRecord"));
    // A fault in the kernels surfaces here, when the device has run them.
    TG_RETURN_IF_ERROR(driver.check(api.event_synchronize(stop.get()), "cuEventSynchronize (running the kernels)"));
    float ms = 0;
    TG_RETURN_IF_ERROR(driver.check(api.event_elapsed_time(&ms, start.get(), stop.get()), "cuEventElapsedTime"));
    samples.push_back(double(ms) / 1e3 / number);
  }
  return samples;
}

}  // namespace tensorgym::cuda
