#include "codegen/cpu/jit_engine.h"

#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/ErrorHandling.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <thread>

#include <fmt/format.h>

#include "codegen/cpu/partial_vectors.h"
#include "codegen/cpu/runtime.h"

namespace tensorgym {
namespace {

std::string error_text(llvm::Error e) { return llvm::toString(std::move(e)); }

int widest_vector_bits(const std::string& features) {
  auto has = [&](const char* f) { return features.find(std::string("+") + f + ",") != std::string::npos ||
                                         features.rfind(std::string("+") + f) == features.size() - std::strlen(f) - 1; };
  if (has("avx512f")) return 512;
  if (has("avx")) return 256;
  return 128;
}

// The widest vector LLVM's loop vectorizer uses on this target: its cost model's
// register width (256 bits on Intel's AVX-512 parts, which prefer 256-bit vectors;
// 512 on AMD Zen 4), asked of an empty function as the vectorizer asks of a kernel's.
int loop_vectorizer_bits(llvm::TargetMachine& tm) {
  llvm::LLVMContext context;
  llvm::Module module("tg_probe", context);
  llvm::Function* f = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(context), false),
                                             llvm::Function::ExternalLinkage, "tg_probe", module);
  const llvm::TypeSize bits =
      tm.getTargetTransformInfo(*f).getRegisterBitWidth(llvm::TargetTransformInfo::RGK_FixedWidthVector);
  return std::max(128, int(bits.getFixedValue()));
}

}  // namespace

Expected<JitEngine*> JitEngine::get() {
  static JitEngine* engine = nullptr;
  static Status init_status;
  static std::once_flag once;
  std::call_once(once, [] {
    auto* e = new JitEngine();  // lives for the process: kernels may run until exit
    init_status = e->init();
    engine = e;
  });
  if (!init_status.ok()) return init_status;
  return engine;
}

Status JitEngine::init() {
  // LLVM out of memory: the process's new handler when it has one (a measurement
  // worker exits with its out-of-memory status), else LLVM's own report and abort.
  llvm::install_bad_alloc_error_handler([](void*, const char* reason, bool) {
    if (std::new_handler handler = std::get_new_handler()) handler();
    std::fprintf(stderr, "LLVM ERROR: out of memory: %s\n", reason ? reason : "");
    std::abort();
  });
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::InitializeNativeTargetAsmParser();

  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) return internal_error("cannot detect the host target: " + error_text(jtmb.takeError()));
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  target_.triple = jtmb->getTargetTriple().str();
  target_.cpu_name = jtmb->getCPU();
  features_all_ = jtmb->getFeatures().getString();
  std::string enabled;
  for (const std::string& f : jtmb->getFeatures().getFeatures()) {
    if (!f.empty() && f[0] == '+') enabled += (enabled.empty() ? "" : ",") + f;
  }
  target_.features = enabled;
  target_.llvm_version = LLVM_VERSION_STRING;
  target_.vector_bits = widest_vector_bits(enabled);
  {
    auto tm = jtmb->createTargetMachine();
    if (!tm) return internal_error("cannot create a target machine: " + error_text(tm.takeError()));
    target_.auto_vector_bits = std::min(target_.vector_bits, loop_vectorizer_bits(**tm));
  }
  target_.num_cores = int(std::max(1u, std::thread::hardware_concurrency()));

  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
  if (!jit) return internal_error("cannot create the JIT: " + error_text(jit.takeError()));
  jit_ = std::move(*jit);

  // Kernels call the runtime (by address) and libm (from this process).
  llvm::orc::JITDylib& main = jit_->getMainJITDylib();
  llvm::orc::MangleAndInterner mangle(jit_->getExecutionSession(), jit_->getDataLayout());
  llvm::orc::SymbolMap runtime;
  auto define = [&](const char* name, void* address) {
    runtime[mangle(name)] = {llvm::orc::ExecutorAddr::fromPtr(address), llvm::JITSymbolFlags::Exported};
  };
  define("tg_parallel_for", reinterpret_cast<void*>(&tg_parallel_for));
  define("tg_alloc", reinterpret_cast<void*>(&tg_alloc));
  define("tg_free", reinterpret_cast<void*>(&tg_free));
  if (llvm::Error e = main.define(llvm::orc::absoluteSymbols(std::move(runtime))))
    return internal_error("cannot define the runtime symbols: " + error_text(std::move(e)));
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit_->getDataLayout().getGlobalPrefix());
  if (!process) return internal_error("cannot search the process for symbols: " + error_text(process.takeError()));
  main.addGenerator(std::move(*process));
  return Status();
}

const llvm::DataLayout& JitEngine::data_layout() const { return jit_->getDataLayout(); }

Status JitEngine::optimize(llvm::Module& module) {
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) return internal_error(error_text(jtmb.takeError()));
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto tm = jtmb->createTargetMachine();
  if (!tm) return internal_error("cannot create a target machine: " + error_text(tm.takeError()));

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions options;
  options.LoopVectorization = true;
  options.SLPVectorization = true;
  options.LoopUnrolling = true;
  llvm::PassBuilder pb(tm->get(), options);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.registerOptimizerLastEPCallback([](llvm::ModulePassManager& mpm, llvm::OptimizationLevel) {
    mpm.addPass(llvm::createModuleToFunctionPassAdaptor(PartialVectorMemoryPass()));
  });
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(module, mam);
  return Status();
}

Expected<JitEngine::Added> JitEngine::add(std::unique_ptr<llvm::Module> module,
                                          std::unique_ptr<llvm::LLVMContext> context) {
  std::string name;
  {
    std::lock_guard<std::mutex> lock(mu_);
    name = fmt::format("kernel_{}", next_id_++);
  }
  auto dylib = jit_->createJITDylib(name);
  if (!dylib) return internal_error("cannot create a JIT dylib: " + error_text(dylib.takeError()));
  llvm::orc::JITDylib& jd = *dylib;
  jd.addToLinkOrder(jit_->getMainJITDylib());
  if (llvm::Error e = jit_->addIRModule(jd, llvm::orc::ThreadSafeModule(std::move(module), std::move(context)))) {
    remove(&jd);
    return internal_error("cannot add the module to the JIT: " + error_text(std::move(e)));
  }
  // Looking the entry up makes the JIT generate machine code now.
  auto entry = jit_->lookup(jd, kKernelEntry);
  if (!entry) {
    std::string message = error_text(entry.takeError());
    remove(&jd);
    return internal_error("JIT code generation failed: " + message);
  }
  Added added;
  added.dylib = &jd;
  added.entry = entry->toPtr<void (*)(void**)>();
  return added;
}

void JitEngine::remove(llvm::orc::JITDylib* dylib) {
  if (!dylib) return;
  if (llvm::Error e = jit_->getExecutionSession().removeJITDylib(*dylib)) llvm::consumeError(std::move(e));
}

}  // namespace tensorgym
