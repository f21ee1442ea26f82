#include "codegen/cuda/shared_library.h"

#include <fmt/format.h>

namespace tensorgym::cuda {

Expected<SharedLibrary> open_first_library(std::initializer_list<const char*> names, std::string_view what) {
  std::string tried;
  for (const char* name : names) {
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return SharedLibrary{handle, name};
    const char* e = dlerror();
    tried += fmt::format("{}{}", tried.empty() ? "" : "; ", e ? e : name);
  }
  return Status(StatusCode::kUnavailable, fmt::format("{} not found: {}", what, tried));
}

}  // namespace tensorgym::cuda
