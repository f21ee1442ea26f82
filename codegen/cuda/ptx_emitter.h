// PTX from LLVM IR through LLVM's own NVPTX backend: the build needs no CUDA. The
// module's functions marked with mark_kernel() become PTX entry points.
#pragma once

#include <string>

#include "support/status.h"

namespace llvm {
class Function;
class Module;
}  // namespace llvm

namespace tensorgym::cuda {

inline constexpr const char* kNvptxTriple = "nvptx64-nvidia-cuda";
inline constexpr const char* kDefaultArch = "sm_90";

struct PtxOptions {
  std::string arch = kDefaultArch;  // "sm_80", "sm_90", ...
  int opt_level = 3;                // the code generator's: 0 to 3
  // libdevice's file (libdevice.h), linked in where the module calls its functions.
  std::string libdevice;
};

// Sets the module's triple and data layout for NVPTX, links libdevice where asked,
// optimizes it (O`opt_level`) and prints its PTX. INVALID_ARGUMENT for an architecture
// LLVM does not know; INTERNAL when the module does not verify, libdevice does not
// link or the backend cannot emit it.
Expected<std::string> emit_ptx(llvm::Module& module, const PtxOptions& options = {});

// Marks a function as a kernel (a PTX .entry), both ways LLVM 19 reads it.
void mark_kernel(llvm::Function& function);

// The NVPTX architectures this LLVM can target ("sm_35" ... "sm_90a").
std::string nvptx_architectures();

}  // namespace tensorgym::cuda
