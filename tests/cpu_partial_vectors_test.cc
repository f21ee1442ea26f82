// PartialVectorMemoryPass (codegen/cpu/partial_vectors.h): loads and stores of vectors
// whose lane count is not a power of two become masked accesses of the next power of
// two lanes where the target has masked memory operations, and stay as they are where
// it has none. The targets are named here (not the host), so the test means the same
// on every machine.
#include <gtest/gtest.h>
#include <llvm/AsmParser/Parser.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#include <memory>
#include <string>

#include "codegen/cpu/partial_vectors.h"

namespace tensorgym {
namespace {

// out[0..7) = a[0..7) * b[0..7), and a <4 x float> copy that must stay as it is.
constexpr const char* kModule = R"(
define void @row(ptr %a, ptr %b, ptr %out) {
  %x = load <7 x float>, ptr %a, align 4
  %y = load <7 x float>, ptr %b, align 4
  %p = fmul <7 x float> %x, %y
  store <7 x float> %p, ptr %out, align 4
  %q = getelementptr inbounds float, ptr %out, i64 8
  %v = load <4 x float>, ptr %a, align 4
  store <4 x float> %v, ptr %q, align 4
  ret void
}
)";

// The module after the pass, for x86-64 with `cpu` and `features`; empty when LLVM was
// built without the x86 target.
std::string run_pass(const std::string& cpu, const std::string& features) {
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86Target();
  LLVMInitializeX86TargetMC();
  const std::string triple = "x86_64-unknown-linux-gnu";
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) return "";
  std::unique_ptr<llvm::TargetMachine> tm(
      target->createTargetMachine(triple, cpu, features, llvm::TargetOptions(), std::nullopt));
  llvm::LLVMContext ctx;
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> m = llvm::parseAssemblyString(kModule, diag, ctx);
  EXPECT_TRUE(m) << diag.getMessage().str();
  if (!m) return "";
  m->setDataLayout(tm->createDataLayout());
  m->setTargetTriple(triple);

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(tm.get());
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm;
  mpm.addPass(llvm::createModuleToFunctionPassAdaptor(PartialVectorMemoryPass()));
  mpm.run(*m, mam);
  EXPECT_FALSE(llvm::verifyModule(*m, &llvm::errs()));
  std::string text;
  llvm::raw_string_ostream out(text);
  m->print(out, nullptr);
  return out.str();
}

TEST(PartialVectors, SevenLanesAreOneMaskedAccessOfEightWhereTheTargetHasMaskedMemory) {
  for (const char* cpu : {"skylake-avx512", "znver4", "haswell", "znver3"}) {  // AVX-512, AVX2
    SCOPED_TRACE(cpu);
    const std::string ir = run_pass(cpu, "");
    if (ir.empty()) GTEST_SKIP() << "LLVM without the x86 target";
    const bool avx512 = std::string(cpu) == "skylake-avx512" || std::string(cpu) == "znver4";
    EXPECT_EQ(ir.find("load <7 x float>"), std::string::npos) << ir;
    EXPECT_NE(ir.find("@llvm.masked.load.v8f32"), std::string::npos) << ir;
    // The mask holds the seven real lanes and not the eighth.
    EXPECT_NE(ir.find("<i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 false>"), std::string::npos)
        << ir;
    // AVX2's masked stores are slow (LLVM rates one dearer than the 4 + 2 + 1 pieces).
    EXPECT_EQ(ir.find("@llvm.masked.store.v8f32") != std::string::npos, avx512) << ir;
    EXPECT_EQ(ir.find("store <7 x float>") == std::string::npos, avx512) << ir;
    // Power-of-two vectors are left alone.
    EXPECT_NE(ir.find("load <4 x float>"), std::string::npos) << ir;
    EXPECT_NE(ir.find("store <4 x float>"), std::string::npos) << ir;
  }
}

TEST(PartialVectors, AccessesStayWhereTheTargetHasNoMaskedMemory) {
  const std::string ir = run_pass("x86-64", "");  // SSE2 only
  if (ir.empty()) GTEST_SKIP() << "LLVM without the x86 target";
  EXPECT_NE(ir.find("load <7 x float>"), std::string::npos) << ir;
  EXPECT_NE(ir.find("store <7 x float>"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("llvm.masked"), std::string::npos) << ir;
}

}  // namespace
}  // namespace tensorgym
