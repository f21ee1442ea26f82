#include "codegen/cuda/ptx_emitter.h"

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Triple.h>

#include <memory>
#include <mutex>

#include "codegen/cuda/libdevice.h"

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace tensorgym::cuda {
namespace {

const llvm::Target* nvptx_target(std::string* error) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  return llvm::TargetRegistry::lookupTarget(kNvptxTriple, *error);
}

llvm::OptimizationLevel pass_level(int level) {
  switch (level) {
    case 0: return llvm::OptimizationLevel::O0;
    case 1: return llvm::OptimizationLevel::O1;
    case 2: return llvm::OptimizationLevel::O2;
    default: return llvm::OptimizationLevel::O3;
  }
}

}  // namespace

std::string nvptx_architectures() {
  std::string error;
  const llvm::Target* target = nvptx_target(&error);
  if (!target) return "";
  std::unique_ptr<llvm::MCSubtargetInfo> info(target->createMCSubtargetInfo(kNvptxTriple, "sm_90", ""));
  std::string out;
  for (const llvm::SubtargetSubTypeKV& cpu : info->getAllProcessorDescriptions()) {
    if (!out.empty()) out += ", ";
    out += cpu.Key;
  }
  return out;
}

void mark_kernel(llvm::Function& function) {
  function.setCallingConv(llvm::CallingConv::PTX_Kernel);
  llvm::Module& module = *function.getParent();
  llvm::LLVMContext& ctx = module.getContext();
  llvm::Metadata* fields[] = {llvm::ValueAsMetadata::get(&function), llvm::MDString::get(ctx, "kernel"),
                              llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(ctx), 1))};
  module.getOrInsertNamedMetadata("nvvm.annotations")->addOperand(llvm::MDNode::get(ctx, fields));
}

Expected<std::string> emit_ptx(llvm::Module& module, const PtxOptions& options) {
  std::string error;
  const llvm::Target* target = nvptx_target(&error);
  if (!target) return internal_error("LLVM has no NVPTX target: " + error);
  // Asked of a known processor's info, so LLVM prints no warning of its own for a bad name.
  std::unique_ptr<llvm::MCSubtargetInfo> info(target->createMCSubtargetInfo(kNvptxTriple, kDefaultArch, ""));
  if (!info || !info->isCPUStringValid(options.arch))
    return invalid_argument("unknown GPU architecture '" + options.arch + "' (LLVM's NVPTX targets: " +
                            nvptx_architectures() + ")");
  llvm::TargetOptions target_options;
  const auto level = options.opt_level <= 0 ? llvm::CodeGenOptLevel::None
                     : options.opt_level >= 3 ? llvm::CodeGenOptLevel::Aggressive
                                              : llvm::CodeGenOptLevel::Default;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      kNvptxTriple, options.arch, "", target_options, std::nullopt, std::nullopt, level));
  if (!machine) return internal_error("cannot make an NVPTX target machine for " + options.arch);
  module.setTargetTriple(kNvptxTriple);
  module.setDataLayout(machine->createDataLayout());
  if (!options.libdevice.empty()) TG_RETURN_IF_ERROR(link_libdevice(module, options.libdevice));

  std::string verify_errors;
  llvm::raw_string_ostream verify_stream(verify_errors);
  if (llvm::verifyModule(module, &verify_stream))
    return internal_error("the kernel module does not verify: " + verify_stream.str());

  if (options.opt_level > 0) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder builder(machine.get());
    builder.registerModuleAnalyses(mam);
    builder.registerCGSCCAnalyses(cgam);
    builder.registerFunctionAnalyses(fam);
    builder.registerLoopAnalyses(lam);
    builder.crossRegisterProxies(lam, fam, cgam, mam);
    builder.buildPerModuleDefaultPipeline(pass_level(options.opt_level)).run(module, mam);
  }

  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream out(ptx);
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, out, nullptr, llvm::CodeGenFileType::AssemblyFile))
    return internal_error("the NVPTX backend cannot emit assembly for " + options.arch);
  codegen.run(module);
  return std::string(ptx.str());
}

}  // namespace tensorgym::cuda
