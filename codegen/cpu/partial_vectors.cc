#include "codegen/cpu/partial_vectors.h"

#include <llvm/Analysis/TargetTransformInfo.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/Support/MathExtras.h>

#include <vector>

namespace tensorgym {
namespace {

// The lanes of a vector type that is not a power of two wide, or 0.
unsigned partial_lanes(llvm::Type* type) {
  auto* v = llvm::dyn_cast<llvm::FixedVectorType>(type);
  if (!v) return 0;
  const unsigned n = v->getNumElements();
  return n > 1 && !llvm::isPowerOf2_32(n) ? n : 0;
}

llvm::FixedVectorType* widened(llvm::Type* type) {
  auto* v = llvm::cast<llvm::FixedVectorType>(type);
  return llvm::FixedVectorType::get(v->getElementType(), unsigned(llvm::PowerOf2Ceil(v->getNumElements())));
}

// <wide x i1>: the first `lanes` true.
llvm::Constant* prefix_mask(llvm::LLVMContext& ctx, unsigned lanes, unsigned wide) {
  std::vector<llvm::Constant*> bits(wide);
  for (unsigned i = 0; i < wide; ++i) bits[i] = llvm::ConstantInt::getBool(ctx, i < lanes);
  return llvm::ConstantVector::get(bits);
}

// Shuffle indices 0..n-1, then poison up to `size` lanes.
std::vector<int> first_lanes(unsigned n, unsigned size) {
  std::vector<int> pick(size, -1);
  for (unsigned i = 0; i < n; ++i) pick[i] = int(i);
  return pick;
}

}  // namespace

llvm::PreservedAnalyses PartialVectorMemoryPass::run(llvm::Function& f, llvm::FunctionAnalysisManager& fam) {
  const llvm::TargetTransformInfo& tti = fam.getResult<llvm::TargetIRAnalysis>(f);
  // Rewritten where the target has the masked access and its cost model rates it
  // cheaper than the pieces (AVX2's masked stores are rated dearer: they stay).
  auto cheaper_masked = [&](llvm::Instruction* inst, llvm::Type* type, llvm::Align align) {
    llvm::FixedVectorType* wide = widened(type);
    const bool load = llvm::isa<llvm::LoadInst>(inst);
    if (load ? !tti.isLegalMaskedLoad(wide, align) : !tti.isLegalMaskedStore(wide, align)) return false;
    const unsigned space = llvm::getLoadStoreAddressSpace(inst);
    return tti.getMaskedMemoryOpCost(inst->getOpcode(), wide, align, space) <
           tti.getMemoryOpCost(inst->getOpcode(), type, align, space);
  };
  std::vector<llvm::Instruction*> accesses;
  for (llvm::BasicBlock& bb : f)
    for (llvm::Instruction& inst : bb) {
      if (auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst)) {
        if (load->isSimple() && partial_lanes(load->getType()) &&
            cheaper_masked(load, load->getType(), load->getAlign()))
          accesses.push_back(load);
      } else if (auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst)) {
        llvm::Type* type = store->getValueOperand()->getType();
        if (store->isSimple() && partial_lanes(type) && cheaper_masked(store, type, store->getAlign()))
          accesses.push_back(store);
      }
    }
  if (accesses.empty()) return llvm::PreservedAnalyses::all();
  for (llvm::Instruction* inst : accesses) {
    llvm::IRBuilder<> b(inst);
    if (auto* load = llvm::dyn_cast<llvm::LoadInst>(inst)) {
      const unsigned n = partial_lanes(load->getType());
      llvm::FixedVectorType* wide = widened(load->getType());
      llvm::Value* all = b.CreateMaskedLoad(wide, load->getPointerOperand(), load->getAlign(),
                                            prefix_mask(f.getContext(), n, wide->getNumElements()));
      llvm::Value* part = b.CreateShuffleVector(all, first_lanes(n, n));
      part->takeName(load);
      load->replaceAllUsesWith(part);
    } else {
      auto* store = llvm::cast<llvm::StoreInst>(inst);
      llvm::Value* value = store->getValueOperand();
      const unsigned n = partial_lanes(value->getType());
      const unsigned wide = widened(value->getType())->getNumElements();
      llvm::Value* padded = b.CreateShuffleVector(value, first_lanes(n, wide));
      b.CreateMaskedStore(padded, store->getPointerOperand(), store->getAlign(),
                          prefix_mask(f.getContext(), n, wide));
    }
    inst->eraseFromParent();
  }
  llvm::PreservedAnalyses kept;
  kept.preserveSet<llvm::CFGAnalyses>();
  return kept;
}

}  // namespace tensorgym
