#include "codegen/cpu/inst_count.h"

#include <llvm/AsmParser/Parser.h>
#include <llvm/IR/Instruction.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

namespace tensorgym {

const std::vector<std::string>& llvm_opcode_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (unsigned op = 1; op < llvm::Instruction::OtherOpsEnd; ++op) n.push_back(llvm::Instruction::getOpcodeName(op));
    return n;
  }();
  return names;
}

Expected<std::vector<int64_t>> count_llvm_opcodes(const std::string& ir_text) {
  llvm::LLVMContext context;
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> m = llvm::parseAssemblyString(ir_text, diag, context);
  if (!m) {
    std::string message;
    llvm::raw_string_ostream os(message);
    diag.print("llvm_ir", os);
    return invalid_argument("cannot parse LLVM IR: " + os.str());
  }
  std::vector<int64_t> counts(llvm_opcode_names().size(), 0);
  for (const llvm::Function& f : *m)
    for (const llvm::BasicBlock& bb : f)
      for (const llvm::Instruction& inst : bb) {
        unsigned op = inst.getOpcode();
        if (op >= 1 && op - 1 < counts.size()) ++counts[op - 1];
      }
  return counts;
}

}  // namespace tensorgym
