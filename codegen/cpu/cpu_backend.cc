#include "codegen/cpu/cpu_backend.h"

#include <llvm/IR/DiagnosticHandler.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "codegen/analysis/constant_work.h"
#include "codegen/cpu/host_machine.h"
#include "codegen/cpu/inst_count.h"
#include "codegen/cpu/jit_engine.h"
#include "codegen/cpu/runtime.h"
#include "codegen/lower/vectorize_loops.h"
#include "support/fnv.h"
#include "support/read_slack.h"
#include "support/small_vector.h"

namespace tensorgym {
namespace {

// The buffers a kernel's constant work fills (prepare()), each with the read slack of
// an input (support/read_slack.h): the main part reads them as inputs.
class CpuPreparedConstants final : public PreparedConstants {
 public:
  explicit CpuPreparedConstants(const std::vector<BufferArg>& buffers) {
    for (const BufferArg& b : buffers) {
      const size_t bytes = size_t(b.shape.empty() ? 1 : b.shape[0]) * size_t(b.dtype.bytes());
      const size_t total = (bytes + 2 * size_t(kInputReadSlackBytes) + 63) / 64 * 64;
      auto* base = static_cast<char*>(std::aligned_alloc(64, total));
      if (!base) return;  // ok() says so
      std::memset(base, 0, total);
      bases_.push_back(base);
      data_.push_back(base + kInputReadSlackBytes);
    }
  }
  ~CpuPreparedConstants() override {
    for (char* base : bases_) std::free(base);
  }
  CpuPreparedConstants(const CpuPreparedConstants&) = delete;
  CpuPreparedConstants& operator=(const CpuPreparedConstants&) = delete;
  bool ok(size_t count) const { return data_.size() == count; }
  const std::vector<void*>& data() const { return data_; }

 private:
  std::vector<char*> bases_;
  std::vector<void*> data_;
};

class LlvmKernel : public CpuKernel {
 public:
  // `prologue` (entry null where there is none) fills `prepared` from the inputs; `main`
  // takes the inputs, the prepared buffers, then the outputs.
  LlvmKernel(JitEngine* engine, JitEngine::Added main, JitEngine::Added prologue, std::vector<BufferArg> prepared,
             LoopNest nest, std::string ir, std::vector<std::string> remarks, double compile_ms)
      : engine_(engine), main_(main), prologue_(prologue), prepared_(std::move(prepared)) {
    num_inputs_ = nest.inputs.size();
    num_outputs_ = nest.outputs.size();
    nest_ = std::move(nest);
    code_text_ = std::move(ir);
    remarks_ = std::move(remarks);
    compile_ms_ = compile_ms;
  }
  ~LlvmKernel() override {
    engine_->remove(main_.dylib);
    if (prologue_.dylib) engine_->remove(prologue_.dylib);
  }

  void run(void* const* args, int num_threads) const override {
    if (!prologue_.entry) {
      set_kernel_threads(num_threads);
      main_.entry(const_cast<void**>(args));
      return;
    }
    Expected<std::shared_ptr<const PreparedConstants>> prepared = prepare(args, num_threads);
    if (!prepared.ok()) {
      std::fprintf(stderr, "tensorgym: %s\n", prepared.status().message().c_str());
      std::abort();
    }
    run_prepared(prepared->get(), args, num_threads);
  }

  Expected<std::shared_ptr<const PreparedConstants>> prepare(void* const* args, int num_threads) const override {
    if (!prologue_.entry) return std::shared_ptr<const PreparedConstants>();
    auto prepared = std::make_shared<CpuPreparedConstants>(prepared_);
    if (!prepared->ok(prepared_.size()))
      return resource_exhausted("out of memory for the buffers of the kernel's constant work");
    SmallVector<void*, 16> call;
    for (size_t i = 0; i < num_inputs_; ++i) call.push_back(args[i]);
    for (void* p : prepared->data()) call.push_back(p);
    set_kernel_threads(num_threads);
    prologue_.entry(call.begin());
    return std::shared_ptr<const PreparedConstants>(std::move(prepared));
  }

  void run_prepared(const PreparedConstants* prepared, void* const* args, int num_threads) const override {
    const auto* p = dynamic_cast<const CpuPreparedConstants*>(prepared);
    if (!prologue_.entry || !p) {
      run(args, num_threads);
      return;
    }
    SmallVector<void*, 16> call;
    for (size_t i = 0; i < num_inputs_; ++i) call.push_back(args[i]);
    for (void* b : p->data()) call.push_back(b);
    for (size_t i = 0; i < num_outputs_; ++i) call.push_back(args[num_inputs_ + i]);
    set_kernel_threads(num_threads);
    main_.entry(call.begin());
  }

  bool has_constant_work() const override { return prologue_.entry != nullptr; }

 private:
  JitEngine* engine_;
  JitEngine::Added main_, prologue_;
  std::vector<BufferArg> prepared_;
  size_t num_inputs_ = 0, num_outputs_ = 0;
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

  std::string ir;
  std::vector<std::string> remarks;
  // One module per part; the IR text holds the main part, then the constant work.
  auto compile_part = [&](const LoopNest& part) -> Expected<JitEngine::Added> {
    auto context = std::make_unique<llvm::LLVMContext>();
    TG_ASSIGN_OR_RETURN(std::unique_ptr<llvm::Module> module,
                        emit_llvm_module(part, part.body, *context, engine->data_layout(), engine->emit_target()));
    if (options.keep_vectorizer_remarks) context->setDiagnosticHandler(std::make_unique<VectorizerRemarks>(&remarks));
    TG_RETURN_IF_ERROR(engine->optimize(*module));
    // The JIT keeps the context: back to LLVM's own handler before `remarks` goes away.
    if (options.keep_vectorizer_remarks) context->setDiagnosticHandler(std::make_unique<llvm::DiagnosticHandler>());
    if (options.keep_llvm_ir) {
      llvm::raw_string_ostream os(ir);
      if (!ir.empty()) os << "\n; the constant work, run once ahead of the runs (prepare)\n";
      module->print(os, nullptr);
    }
    return engine->add(std::move(module), std::move(context));
  };
  // Constant work (codegen/analysis/constant_work.h) becomes a prologue of its own.
  std::optional<ConstantWork> work = split_constant_work(nest);
  TG_ASSIGN_OR_RETURN(JitEngine::Added main, compile_part(work ? work->main : nest));
  JitEngine::Added prologue;
  std::vector<BufferArg> prepared;
  if (work) {
    Expected<JitEngine::Added> p = compile_part(work->prologue);
    if (!p.ok()) {
      engine->remove(main.dylib);
      return p.status();
    }
    prologue = *p;
    prepared = std::move(work->prepared);
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return std::shared_ptr<const CpuKernel>(std::make_shared<LlvmKernel>(engine, main, prologue, std::move(prepared),
                                                                       nest, std::move(ir), std::move(remarks), ms));
}

}  // namespace tensorgym
