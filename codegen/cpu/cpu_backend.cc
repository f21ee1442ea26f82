#include "codegen/cpu/cpu_backend.h"

#include <llvm/IR/DiagnosticHandler.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <chrono>
#include <cstdio>

#include "codegen/cpu/host_machine.h"
#include "codegen/cpu/inst_count.h"
#include "codegen/cpu/jit_engine.h"
#include "codegen/cpu/runtime.h"
#include "codegen/lower/vectorize_loops.h"
#include "support/fnv.h"

namespace tensorgym {
namespace {

class LlvmKernel : public CpuKernel {
 public:
  LlvmKernel(JitEngine* engine, JitEngine::Added added, LoopNest nest, std::string ir,
             std::vector<std::string> remarks, double compile_ms)
      : engine_(engine), added_(added) {
    nest_ = std::move(nest);
    code_text_ = std::move(ir);
    remarks_ = std::move(remarks);
    compile_ms_ = compile_ms;
  }
  ~LlvmKernel() override { engine_->remove(added_.dylib); }

  void run(void* const* args, int num_threads) const override {
    set_kernel_threads(num_threads);
    added_.entry(const_cast<void**>(args));
  }

 private:
  JitEngine* engine_;
  JitEngine::Added added_;
};

// Collects the loop vectorizer's remarks of one compilation, and the loop unroller's
// full unrolls (LLVM emits remarks only for the passes a context's handler asks for).
class VectorizerRemarks final : public llvm::DiagnosticHandler {
 public:
  explicit VectorizerRemarks(std::vector<std::string>* out) : out_(out) {}
  bool isAnyRemarkEnabled() const override { return true; }
  bool isAnalysisRemarkEnabled(llvm::StringRef pass) const override { return pass == kVectorize; }
  bool isMissedOptRemarkEnabled(llvm::StringRef pass) const override { return pass == kVectorize; }
  bool isPassedOptRemarkEnabled(llvm::StringRef pass) const override { return pass == kVectorize || pass == kUnroll; }
  bool handleDiagnostics(const llvm::DiagnosticInfo& d) override {
    const auto* r = llvm::dyn_cast<llvm::DiagnosticInfoOptimizationBase>(&d);
    if (!r) return false;  // not a remark: LLVM's default handling
    if (r->getPassName() == kUnroll) {
      // Only full unrolls: partial and runtime unrolls and peels say other things.
      const std::string msg = r->getMsg();
      if (d.getKind() == llvm::DK_OptimizationRemark && msg.rfind("completely unrolled", 0) == 0)
        out_->push_back("unrolled: " + msg);
      return true;
    }
    if (r->getPassName() != kVectorize) return true;
    const char* kind = d.getKind() == llvm::DK_OptimizationRemark         ? "vectorized: "
                       : d.getKind() == llvm::DK_OptimizationRemarkMissed ? "missed: "
                                                                          : "analysis: ";
    out_->push_back(kind + r->getMsg());
    return true;
  }

 private:
  static constexpr const char* kVectorize = "loop-vectorize";
  static constexpr const char* kUnroll = "loop-unroll";
  std::vector<std::string>* out_;
};

class CpuBackend final : public Backend {
 public:
  const TargetInfo& target() const override {
    static const TargetInfo info = [] {
      const CpuTarget& t = CpuTarget::host();
      TargetInfo i;
      i.name = "cpu";
      i.triple = t.triple;
      i.device = t.cpu_name;
      i.features = t.features;
      i.compiler_version = t.llvm_version;
      i.num_cores = t.num_cores;
      i.vector_bits = t.vector_bits;
      i.auto_vector_bits = t.auto_vector_bits;
      i.fingerprint = t.fingerprint();
      i.can_run = !t.triple.empty();  // LLVM found this host's target
      i.has_cost_model = true;
      return i;
    }();
    return info;
  }

  // The passes lower() runs for the CPU after the generic ones.
  const LoweringTarget& lowering() const override {
    static const LoweringTarget lowering{"cpu", {{"vectorize_loops", vectorize_loops}}};
    return lowering;
  }

  Expected<std::shared_ptr<const Executable>> compile(const LoopNest& nest,
                                                      const CompileOptions& options) const override {
    CpuCompileOptions cpu;
    cpu.keep_llvm_ir = options.keep_code_text;
    cpu.keep_vectorizer_remarks = options.keep_remarks;
    TG_ASSIGN_OR_RETURN(std::shared_ptr<const CpuKernel> kernel, compile_cpu_kernel(nest, cpu));
    return std::shared_ptr<const Executable>(std::move(kernel));
  }

  const MachineModel* machine_model() const override { return &host_machine_model(); }
  const std::vector<std::string>& opcode_names() const override { return llvm_opcode_names(); }
  Expected<std::vector<int64_t>> count_opcodes(const std::string& code_text) const override {
    return count_llvm_opcodes(code_text);
  }
};

}  // namespace

const Backend& cpu_backend() {
  static const CpuBackend backend;
  return backend;
}

const CpuTarget& CpuTarget::host() {
  static const CpuTarget target = [] {
    Expected<JitEngine*> engine = JitEngine::get();
    return engine.ok() ? (*engine)->target() : CpuTarget{};
  }();
  return target;
}

std::string CpuTarget::fingerprint() const {
  // The fields that change generated code, each followed by a separator byte.
  uint64_t h = kFnvOffset;
  for (const std::string* s : {&triple, &cpu_name, &features, &llvm_version}) h = fnv1a64("\xff", fnv1a64(*s, h));
  return hex64(h);
}

Expected<std::shared_ptr<const CpuKernel>> compile_cpu_kernel(const LoopNest& nest, const CpuCompileOptions& options) {
  auto start = std::chrono::steady_clock::now();
  if (nest.target != "cpu") {
    return failed_precondition(
        nest.target.empty() ? std::string("the loop nest was not lowered for the cpu target (its passes did not run: "
                                          "lower it with the target, codegen/lower/lower.h)")
                            : "the loop nest was lowered for target " + nest.target + ", not cpu");
  }
  TG_ASSIGN_OR_RETURN(JitEngine * engine, JitEngine::get());

  auto context = std::make_unique<llvm::LLVMContext>();
  TG_ASSIGN_OR_RETURN(std::unique_ptr<llvm::Module> module,
                      emit_llvm_module(nest, nest.body, *context, engine->data_layout(), engine->emit_target()));
  std::vector<std::string> remarks;
  if (options.keep_vectorizer_remarks) context->setDiagnosticHandler(std::make_unique<VectorizerRemarks>(&remarks));
  TG_RETURN_IF_ERROR(engine->optimize(*module));
  // The JIT keeps the context: back to LLVM's own handler before `remarks` goes away.
  if (options.keep_vectorizer_remarks) context->setDiagnosticHandler(std::make_unique<llvm::DiagnosticHandler>());
  std::string ir;
  if (options.keep_llvm_ir) {
    llvm::raw_string_ostream os(ir);
    module->print(os, nullptr);
  }
  TG_ASSIGN_OR_RETURN(JitEngine::Added added, engine->add(std::move(module), std::move(context)));
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return std::shared_ptr<const CpuKernel>(
      std::make_shared<LlvmKernel>(engine, added, nest, std::move(ir), std::move(remarks), ms));
}

}  // namespace tensorgym
