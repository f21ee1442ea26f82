// libdevice: the CUDA toolkit's bitcode library of precise math (__nv_expf, __nv_log,
// ...). Where it is found, kernels call it for exp / log / tanh and its functions are
// linked into the kernel module; without it they keep PTX's approximate instructions.
// The build never needs it.
#pragma once

#include <string>

#include "support/status.h"

namespace llvm {
class Module;
}  // namespace llvm

namespace tensorgym::cuda {

// $TENSORGYM_LIBDEVICE when set (a path that does not load: none, so the approximate
// math), else nvvm/libdevice/libdevice.10.bc under $CUDA_HOME, $CUDA_PATH,
// /usr/local/cuda, then the toolkit holding ptxas (find_ptxas()'s bin/..); "" when
// none. A file is read and checked once per process.
std::string find_libdevice();

// Links the libdevice functions `module` declares (its __nv_* calls) from `path` into
// it, internal so the optimizer inlines or drops them, and sets nvvm-reflect-ftz to 0
// (no flush to zero, as the interpreter). The module's triple and data layout must be
// set; NVVMReflect (in the NVPTX pipeline) then resolves libdevice's __nvvm_reflect.
// INTERNAL when the file does not load or link.
Status link_libdevice(llvm::Module& module, const std::string& path);

}  // namespace tensorgym::cuda
