// PTX through LLVM's NVPTX backend, and ptxas where the CUDA toolkit is installed: the
// GPU path compiles and assembles on a machine without a GPU.
#include <gtest/gtest.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "codegen/cuda/libdevice.h"
#include "codegen/cuda/ptx_emitter.h"
#include "codegen/cuda/ptxas.h"

namespace tensorgym::cuda {
namespace {

// c[i] = a[i] + b[i] for i = blockIdx.x * blockDim.x + threadIdx.x < n.
std::unique_ptr<llvm::Module> vector_add(llvm::LLVMContext& ctx) {
  auto module = std::make_unique<llvm::Module>("vadd", ctx);
  llvm::IRBuilder<> b(ctx);
  llvm::Type* f32 = b.getFloatTy();
  llvm::Type* ptr = llvm::PointerType::get(ctx, 1);  // global memory
  auto* type = llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr, ptr, b.getInt32Ty()}, false);
  auto* f = llvm::Function::Create(type, llvm::Function::ExternalLinkage, "vadd", module.get());
  mark_kernel(*f);
  auto* entry = llvm::BasicBlock::Create(ctx, "entry", f);
  auto* body = llvm::BasicBlock::Create(ctx, "body", f);
  auto* done = llvm::BasicBlock::Create(ctx, "done", f);
  b.SetInsertPoint(entry);
  llvm::Value* tid = b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {}, {});
  llvm::Value* ctaid = b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x, {}, {});
  llvm::Value* ntid = b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x, {}, {});
  llvm::Value* i = b.CreateAdd(b.CreateMul(ctaid, ntid), tid);
  b.CreateCondBr(b.CreateICmpSLT(i, f->getArg(3)), body, done);
  b.SetInsertPoint(body);
  llvm::Value* at = b.CreateSExt(i, b.getInt64Ty());
  llvm::Value* sum = b.CreateFAdd(b.CreateLoad(f32, b.CreateGEP(f32, f->getArg(0), at)),
                                  b.CreateLoad(f32, b.CreateGEP(f32, f->getArg(1), at)));
  b.CreateStore(sum, b.CreateGEP(f32, f->getArg(2), at));
  b.CreateBr(done);
  b.SetInsertPoint(done);
  b.CreateRetVoid();
  return module;
}

// A block reverses 256 floats through shared memory, with a barrier in between.
std::unique_ptr<llvm::Module> shared_reverse(llvm::LLVMContext& ctx) {
  auto module = std::make_unique<llvm::Module>("reverse", ctx);
  llvm::IRBuilder<> b(ctx);
  llvm::Type* f32 = b.getFloatTy();
  auto* tile_type = llvm::ArrayType::get(f32, 256);
  auto* tile = new llvm::GlobalVariable(*module, tile_type, false, llvm::GlobalValue::InternalLinkage,
                                        llvm::UndefValue::get(tile_type), "tile", nullptr,
                                        llvm::GlobalValue::NotThreadLocal, 3);  // shared memory
  tile->setAlignment(llvm::Align(16));
  llvm::Type* ptr = llvm::PointerType::get(ctx, 1);
  auto* f = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {ptr}, false),
                                   llvm::Function::ExternalLinkage, "reverse", module.get());
  mark_kernel(*f);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
  llvm::Value* tid = b.CreateZExt(b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {}, {}), b.getInt64Ty());
  llvm::Value* data = f->getArg(0);
  b.CreateStore(b.CreateLoad(f32, b.CreateGEP(f32, data, tid)), b.CreateGEP(tile_type, tile, {b.getInt64(0), tid}));
  b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {});
  llvm::Value* mirror = b.CreateSub(b.getInt64(255), tid);
  b.CreateStore(b.CreateLoad(f32, b.CreateGEP(tile_type, tile, {b.getInt64(0), mirror})), b.CreateGEP(f32, data, tid));
  b.CreateRetVoid();
  return module;
}

// out[0] = <name>(out[0]) in `type` (f32 or f64): one call of a libdevice function.
std::unique_ptr<llvm::Module> calls_libdevice(llvm::LLVMContext& ctx, const char* name, llvm::Type* type) {
  auto module = std::make_unique<llvm::Module>("math", ctx);
  llvm::IRBuilder<> b(ctx);
  auto* f = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {llvm::PointerType::get(ctx, 1)}, false),
                                   llvm::Function::ExternalLinkage, "math", module.get());
  mark_kernel(*f);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
  llvm::Value* x = b.CreateLoad(type, f->getArg(0));
  b.CreateStore(b.CreateCall(module->getOrInsertFunction(name, type, type), {x}), f->getArg(0));
  b.CreateRetVoid();
  return module;
}

TEST(CudaPtx, LibdeviceIsLinkedOnlyWhereCalledAndItsReflectionResolved) {
  const std::string libdevice = find_libdevice();
  if (libdevice.empty()) GTEST_SKIP() << "no libdevice (CUDA toolkit) on this machine";
  llvm::LLVMContext ctx;
  for (int level : {3, 0}) {
    for (auto [name, type] :
         {std::pair{"__nv_tanhf", llvm::Type::getFloatTy(ctx)}, std::pair{"__nv_log", llvm::Type::getDoubleTy(ctx)}}) {
      SCOPED_TRACE(std::string(name) + " at O" + std::to_string(level));
      auto module = calls_libdevice(ctx, name, type);
      Expected<std::string> ptx = emit_ptx(*module, {.opt_level = level, .libdevice = libdevice});
      ASSERT_TRUE(ptx.ok()) << ptx.status().to_string();
      EXPECT_EQ(ptx->find("__nvvm_reflect"), std::string::npos) << *ptx;
      // Linked internal: inlined at O3; at O0 a .func of the module, not an extern.
      EXPECT_EQ(ptx->find(".extern"), std::string::npos) << *ptx;
      if (level > 0) EXPECT_EQ(ptx->find(name), std::string::npos) << *ptx;
      // Only what is called: not every libdevice function of the same family.
      EXPECT_EQ(module->getFunction("__nv_expf"), nullptr);
      if (!find_ptxas().empty()) EXPECT_TRUE(assemble_ptx(*ptx, "sm_90").ok());
    }
  }
  // A module that calls none of it is left as it is.
  auto vadd = vector_add(ctx);
  ASSERT_TRUE(emit_ptx(*vadd, {.libdevice = libdevice}).ok());
  EXPECT_EQ(vadd->getModuleFlag("nvvm-reflect-ftz"), nullptr);
}

TEST(CudaPtx, EmitsAKernelEntryForTheArchitecture) {
  llvm::LLVMContext ctx;
  auto module = vector_add(ctx);
  Expected<std::string> ptx = emit_ptx(*module, {.arch = "sm_90"});
  ASSERT_TRUE(ptx.ok()) << ptx.status().to_string();
  EXPECT_NE(ptx->find(".target sm_90"), std::string::npos) << *ptx;
  EXPECT_NE(ptx->find(".visible .entry vadd("), std::string::npos) << *ptx;
  EXPECT_NE(ptx->find("%tid.x"), std::string::npos) << *ptx;
  EXPECT_NE(ptx->find("ld.global"), std::string::npos) << *ptx;
  EXPECT_NE(ptx->find("add.rn.f32"), std::string::npos) << *ptx;
  EXPECT_EQ(module->getTargetTriple(), kNvptxTriple);
}

TEST(CudaPtx, AnUnknownArchitectureIsAnErrorThatListsTheKnownOnes) {
  llvm::LLVMContext ctx;
  auto module = vector_add(ctx);
  Expected<std::string> ptx = emit_ptx(*module, {.arch = "sm_999"});
  ASSERT_FALSE(ptx.ok());
  EXPECT_EQ(ptx.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ptx.status().message().find("sm_999"), std::string::npos);
  EXPECT_NE(ptx.status().message().find("sm_90"), std::string::npos) << ptx.status().message();
}

TEST(CudaPtx, AModuleThatDoesNotVerifyIsAnError) {
  llvm::LLVMContext ctx;
  llvm::Module module("broken", ctx);
  auto* f = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), false),
                                   llvm::Function::ExternalLinkage, "broken", &module);
  llvm::BasicBlock::Create(ctx, "entry", f);  // no terminator
  Expected<std::string> ptx = emit_ptx(module);
  ASSERT_FALSE(ptx.ok());
  EXPECT_NE(ptx.status().message().find("does not verify"), std::string::npos) << ptx.status().message();
}

TEST(CudaPtx, PtxasReportsRegistersAndSharedMemory) {
  if (find_ptxas().empty()) GTEST_SKIP() << "no ptxas on this machine";
  llvm::LLVMContext ctx;
  auto vadd = vector_add(ctx);
  Expected<std::string> ptx = emit_ptx(*vadd);
  ASSERT_TRUE(ptx.ok()) << ptx.status().to_string();
  auto stats = assemble_ptx(*ptx, "sm_90");
  ASSERT_TRUE(stats.ok()) << stats.status().to_string();
  ASSERT_EQ(stats->count("vadd"), 1u);
  EXPECT_GT(stats->at("vadd").registers, 0);
  EXPECT_EQ(stats->at("vadd").shared_bytes, 0);
  EXPECT_EQ(stats->at("vadd").spill_store_bytes, 0);

  auto reverse = shared_reverse(ctx);
  ptx = emit_ptx(*reverse);
  ASSERT_TRUE(ptx.ok()) << ptx.status().to_string();
  EXPECT_NE(ptx->find("bar.sync"), std::string::npos) << *ptx;
  stats = assemble_ptx(*ptx, "sm_90");
  ASSERT_TRUE(stats.ok()) << stats.status().to_string();
  EXPECT_EQ(stats->at("reverse").shared_bytes, 256 * 4);
}

TEST(CudaPtx, PtxThatDoesNotAssembleIsAnErrorWithPtxasText) {
  if (find_ptxas().empty()) GTEST_SKIP() << "no ptxas on this machine";
  const std::string bad = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() { bogus.op; }\n";
  auto stats = assemble_ptx(bad, "sm_90");
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(stats.status().message().find("kernel.ptx"), std::string::npos) << stats.status().message();
  EXPECT_EQ(stats.status().message().find("tensorgym-ptxas-"), std::string::npos) << stats.status().message();
}

TEST(CudaPtx, ParsesPtxasVerboseOutput) {
  const std::string text =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'gemm' for 'sm_90'\n"
      "ptxas info    : Function properties for gemm\n"
      "    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 128 registers, used 1 barriers, 8192 bytes smem, 380 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'copy' for 'sm_90'\n"
      "ptxas info    : Function properties for copy\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 6 registers, 368 bytes cmem[0]\n";
  auto stats = parse_ptxas_verbose(text);
  ASSERT_EQ(stats.size(), 2u);
  const PtxasStats& g = stats.at("gemm");
  EXPECT_EQ(g.registers, 128);
  EXPECT_EQ(g.barriers, 1);
  EXPECT_EQ(g.shared_bytes, 8192);
  EXPECT_EQ(g.stack_bytes, 16);
  EXPECT_EQ(g.spill_store_bytes, 8);
  EXPECT_EQ(g.spill_load_bytes, 12);
  EXPECT_EQ(g.constant_bytes, 380);
  EXPECT_EQ(stats.at("copy").registers, 6);
  EXPECT_EQ(stats.at("copy").shared_bytes, 0);
}

}  // namespace
}  // namespace tensorgym::cuda
