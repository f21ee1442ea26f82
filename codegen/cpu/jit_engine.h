// The process-wide ORC LLJIT: host target detection, the O3 pipeline, and adding /
// removing compiled modules. Internal to codegen/cpu.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "codegen/cpu/cpu_backend.h"
#include "codegen/cpu/llvm_emitter.h"
#include "support/status.h"

namespace llvm {
class LLVMContext;
class Module;
class DataLayout;
class TargetMachine;
namespace orc {
class LLJIT;
class JITDylib;
}  // namespace orc
}  // namespace llvm

namespace tensorgym {

class JitEngine {
 public:
  // Initializes LLVM's native target once; an error when the host is unsupported.
  static Expected<JitEngine*> get();

  const CpuTarget& target() const { return target_; }
  EmitTarget emit_target() const { return {target_.triple, target_.cpu_name, features_all_}; }
  const llvm::DataLayout& data_layout() const;

  // Runs the O3 pipeline (new pass manager) for the host CPU.
  Status optimize(llvm::Module& module);

  // Adds a module in a JITDylib of its own and returns its entry point.
  struct Added {
    llvm::orc::JITDylib* dylib = nullptr;
    void (*entry)(void**) = nullptr;
  };
  Expected<Added> add(std::unique_ptr<llvm::Module> module, std::unique_ptr<llvm::LLVMContext> context);
  void remove(llvm::orc::JITDylib* dylib);

 private:
  JitEngine() = default;
  Status init();

  std::unique_ptr<llvm::orc::LLJIT> jit_;
  CpuTarget target_;
  std::string features_all_;  // every feature, + or -, as the subtarget wants them
  std::mutex mu_;
  uint64_t next_id_ = 0;
};

}  // namespace tensorgym
