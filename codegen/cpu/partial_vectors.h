// Partial vectors: a vectorized loop of 7 or 14 - 8 lanes becomes <7 x float> (see
// vectorize_loops.cc). LLVM's x86 backend widens the arithmetic to 8 lanes but splits
// each load and store of such a vector into 4 + 2 + 1 pieces (it may not touch the
// eighth element). This pass, run last in the optimizer, turns each remaining load and
// store of a vector whose lane count is not a power of two into a masked load or store
// of the next power of two lanes (the mask selects the real lanes), where the target has
// masked memory operations and rates them cheaper than the pieces: one instruction
// instead of three or more (AVX-512: loads and stores; AVX2: loads, its masked stores
// being slow). The rewrite means the same accesses, so it is correct on every target.
#pragma once

#include <llvm/IR/PassManager.h>

namespace tensorgym {

struct PartialVectorMemoryPass : llvm::PassInfoMixin<PartialVectorMemoryPass> {
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& fam);
};

}  // namespace tensorgym
