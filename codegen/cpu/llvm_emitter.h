// Emits LLVM IR for a lowered (and vectorized) loop nest. Internal to codegen/cpu:
// only files of this folder include LLVM headers.
#pragma once

#include <memory>
#include <string>

#include "codegen/lower/loop_nest.h"
#include "support/status.h"

namespace llvm {
class LLVMContext;
class Module;
class DataLayout;
}  // namespace llvm

namespace tensorgym {

// The generated module defines `void <entry>(ptr args)`: args points at one buffer
// pointer per nest argument (inputs, then outputs).
struct EmitTarget {
  std::string triple;
  std::string cpu;
  std::string features;
};

inline constexpr const char* kKernelEntry = "tg_kernel";

Expected<std::unique_ptr<llvm::Module>> emit_llvm_module(const LoopNest& nest, const Stmt& body,
                                                         llvm::LLVMContext& context, const llvm::DataLayout& layout,
                                                         const EmitTarget& target);

}  // namespace tensorgym
