#include "codegen/cuda/library_executable.h"

#include <cstdio>
#include <cstdlib>

#include "codegen/cuda/device_memory.h"

namespace tensorgym::cuda {
namespace {

// The driver with the primary context current on this thread.
Expected<const Driver*> current_driver() {
  TG_ASSIGN_OR_RETURN(const Driver* driver, Driver::get());
  TG_RETURN_IF_ERROR(driver->make_current());
  return driver;
}

// The operands on the device, the inputs copied in; `addresses` in operand order.
Status allocate_operands(DeviceAllocations& memory, const std::vector<LibraryExecutable::Operand>& operands,
                         void* const* args, std::vector<CUdeviceptr>& addresses) {
  size_t arg = 0;
  for (const LibraryExecutable::Operand& o : operands) {
    TG_ASSIGN_OR_RETURN(CUdeviceptr p, memory.allocate(o.bytes, 0, o.name));
    addresses.push_back(p);
    if (o.role == LibraryExecutable::Role::kScratch) continue;
    if (o.role == LibraryExecutable::Role::kInput) TG_RETURN_IF_ERROR(memory.copy_in(p, args[arg], o.bytes));
    ++arg;
  }
  return Status();
}

}  // namespace

void LibraryExecutable::run(void* const* args, int num_threads) const {
  const Status s = run_checked(args, num_threads);
  if (s.ok()) return;
  std::fprintf(stderr, "tensorgym: %s failed: %s\n", what_.c_str(), s.to_string().c_str());
  std::abort();
}

Status LibraryExecutable::run_checked(void* const* args, int) const {
  TG_ASSIGN_OR_RETURN(const Driver* driver, current_driver());
  TG_RETURN_IF_ERROR(prepare());
  DeviceAllocations memory(*driver);
  std::vector<CUdeviceptr> addresses;
  TG_RETURN_IF_ERROR(allocate_operands(memory, operands_, args, addresses));
  TG_RETURN_IF_ERROR(call(addresses));
  TG_RETURN_IF_ERROR(driver->check(driver->api().ctx_synchronize(), "cuCtxSynchronize (" + what_ + ")"));
  size_t arg = 0;
  for (size_t i = 0; i < operands_.size(); ++i) {
    if (operands_[i].role == Role::kScratch) continue;
    if (operands_[i].role == Role::kOutput)
      TG_RETURN_IF_ERROR(memory.copy_out(args[arg], addresses[i], operands_[i].bytes));
    ++arg;
  }
  return Status();
}

Expected<std::vector<double>> LibraryExecutable::time_on_device(void* const* args, int warmup_runs, int number,
                                                                int repeat) const {
  TG_ASSIGN_OR_RETURN(const Driver* driver, current_driver());
  TG_RETURN_IF_ERROR(prepare());
  DeviceAllocations memory(*driver);
  std::vector<CUdeviceptr> addresses;
  TG_RETURN_IF_ERROR(allocate_operands(memory, operands_, args, addresses));
  return time_with_events(
      *driver, [&] { return call(addresses); }, warmup_runs, number, repeat);
}

}  // namespace tensorgym::cuda
