#include "codegen/backend/registry.h"

#include <fmt/format.h>

#include "codegen/cpu/cpu_backend.h"
#include "codegen/cuda/cuda_backend.h"
#include "codegen/fpga/fpga_backend.h"

namespace tensorgym {
namespace {

struct Registration {
  std::string_view target;
  const Backend& (*backend)();
};

// One line per backend.
constexpr Registration kBackends[] = {
    {"cpu", cpu_backend},    // codegen/cpu: LLVM x86 + ORC JIT
    {"cuda", cuda_backend},  // codegen/cuda: LLVM NVPTX + the CUDA driver API
    {"fpga", fpga_backend},  // codegen/fpga: the accelerator's compiler, fsim and its RTL under Verilator
};

}  // namespace

Expected<const Backend*> find_backend(std::string_view target) {
  if (target.empty()) target = kDefaultTarget;
  for (const Registration& r : kBackends)
    if (r.target == target) return &r.backend();
  // Joined by hand: GCC 12 warns (wrongly) inside fmt 9's join.
  std::string known;
  for (const std::string& name : backend_names()) known += (known.empty() ? "" : ", ") + name;
  return not_found(fmt::format("unknown target '{}' (known targets: {})", target, known));
}

const Backend& host_backend() { return **find_backend(kDefaultTarget); }

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const Registration& r : kBackends) names.emplace_back(r.target);
  return names;
}

}  // namespace tensorgym
