// The vendor libraries the runner loads at run time with dlopen (the driver, cuBLAS,
// cuDNN), so that the build needs no CUDA and a machine without them runs everything
// else: the first of a library's names that loads, and its entry points by symbol.
// Internal to codegen/cuda.
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <string>
#include <string_view>

#include "support/status.h"

namespace tensorgym::cuda {

struct SharedLibrary {
  void* handle = nullptr;  // never closed: the library lives as long as the process
  std::string name;        // the name that loaded: "libcublas.so.13"
};

// The first of `names` that dlopen loads (RTLD_NOW | RTLD_LOCAL). UNAVAILABLE
// "<what> not found: <dlopen's error for each name, in order>" when none does.
Expected<SharedLibrary> open_first_library(std::initializer_list<const char*> names, std::string_view what);

// `fn` set to the entry point `symbol` names in `library`; false when it has none.
template <class Fn>
bool resolve_symbol(void* library, const char* symbol, Fn*& fn) {
  fn = reinterpret_cast<Fn*>(dlsym(library, symbol));
  return fn != nullptr;
}

}  // namespace tensorgym::cuda
