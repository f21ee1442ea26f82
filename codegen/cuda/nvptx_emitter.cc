#include "codegen/cuda/nvptx_emitter.h"

#include <fmt/format.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <numbers>
#include <optional>
#include <unordered_map>

#include "codegen/cuda/ptx_emitter.h"
#include "codegen/ir/ir_visitor.h"
#include "codegen/lower/gpu_private_buffers.h"

namespace tensorgym::cuda {
namespace {

constexpr unsigned kGlobalSpace = 1;  // NVPTX's global address space
constexpr unsigned kSharedSpace = 3;  // a block's shared memory

// A load or a division may fault or read out of bounds where a select's condition
// does not choose it (padding): such an arm runs only when chosen.
bool may_trap(const Expr& e) {
  bool found = false;
  visit_exprs(e, [&](const Expr& n) {
    found |= n.kind() == NodeKind::kLoad || n.kind() == NodeKind::kDiv || n.kind() == NodeKind::kMod;
  });
  return found;
}

// What the host holds around a kernel: its statements reach the kernel as parameters
// (loop variables, global buffers) or are re-evaluated in it (lets, conditions).
struct HostFrame {
  enum Kind { kLoopVar, kGlobal, kLet, kCondition } kind;
  std::string name;  // the variable or buffer
  Expr value;        // the let's value or the condition
};

class KernelEmitter {
 public:
  KernelEmitter(const LoopNest& nest, llvm::Module& module, bool libdevice_math)
      : nest_(nest), mod_(module), ctx_(module.getContext()), b_(ctx_), libdevice_math_(libdevice_math) {
    llvm::FastMathFlags fmf;
    fmf.setAllowContract(true);  // a*b + c may become one FMA, as nvcc's default
    b_.setFastMathFlags(fmf);
  }

  Expected<KernelModule> emit() {
    walk_host(nest_.body);
    TG_RETURN_IF_ERROR(error_);
    return std::move(result_);
  }

 private:
  const LoopNest& nest_;
  llvm::Module& mod_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  const bool libdevice_math_;
  Status error_;
  KernelModule result_;
  std::vector<HostFrame> host_;

  // The kernel being emitted.
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* alloca_block_ = nullptr;
  GpuLaunch launch_;
  std::unordered_map<std::string, llvm::Value*> vars_;
  struct Buffer {
    llvm::Value* ptr;
    llvm::Type* elem;
    int64_t align;
  };
  std::unordered_map<std::string, Buffer> buffers_;

  void fail(const std::string& message) {
    if (error_.ok()) error_ = internal_error("PTX code generation: " + message);
  }

  // --- The host's side: where kernels start and what they take from around them ---

  void walk_host(const Stmt& s) {
    if (!s.defined() || !error_.ok()) return;
    if (!contains_launch_loop(s)) {
      // Work outside every launch loop that the checks allow (a scalar statement)
      // runs as a kernel of one thread.
      if (stores_anything(s)) emit_kernel(s, "");
      return;
    }
    switch (s.kind()) {
      case NodeKind::kFor: {
        const For* op = s.as<For>();
        if (is_launch_loop(op)) return emit_kernel(s, std::string(stage_of_loop(op->name)));
        // A host loop: one launch per iteration, its variable a kernel parameter.
        host_.push_back({HostFrame::kLoopVar, op->name, op->extent});
        walk_host(op->body);
        host_.pop_back();
        return;
      }
      case NodeKind::kAllocate: {
        const Allocate* op = s.as<Allocate>();
        result_.globals.push_back({op->name, op->dtype, op->num_elements()});
        host_.push_back({HostFrame::kGlobal, op->name, {}});
        walk_host(op->body);
        host_.pop_back();
        return;
      }
      case NodeKind::kLetStmt: {
        const LetStmt* op = s.as<LetStmt>();
        host_.push_back({HostFrame::kLet, op->name, op->value});
        walk_host(op->body);
        host_.pop_back();
        return;
      }
      case NodeKind::kIfThenElse: {
        const IfThenElse* op = s.as<IfThenElse>();
        host_.push_back({HostFrame::kCondition, "", op->condition});
        walk_host(op->then_case);
        host_.back().value = Not::make(op->condition);
        walk_host(op->else_case);
        host_.pop_back();
        return;
      }
      case NodeKind::kBlock:
        for (const Stmt& x : s.as<Block>()->stmts) walk_host(x);
        return;
      default: fail("unexpected statement on the host");
    }
  }

  llvm::Type* llvm_type(DataType t) {
    if (t.is_float()) return t.bits == 32 ? b_.getFloatTy() : b_.getDoubleTy();
    return b_.getIntNTy(t.bits);
  }

  void emit_kernel(const Stmt& body, const std::string& stage) {
    KernelSpec spec;
    spec.name = fmt::format("tg_kernel_{}", result_.kernels.size());
    spec.stage = stage;
    if (const For* loop = body.as<For>(); loop && is_launch_loop(loop)) spec.launch = launch_of(loop);
    launch_ = spec.launch;

    std::vector<BufferArg> args = nest_.args();
    std::vector<std::pair<std::string, Buffer>> params;
    std::vector<llvm::Type*> types;
    llvm::Type* global_ptr = b_.getPtrTy(kGlobalSpace);
    for (const BufferArg& a : args) {
      spec.buffer_params.push_back(a.name);
      params.push_back({a.name, {nullptr, llvm_type(a.dtype), std::max(1, a.dtype.bytes())}});
    }
    for (const HostFrame& f : host_) {
      if (f.kind != HostFrame::kGlobal) continue;
      auto g = std::find_if(result_.globals.begin(), result_.globals.end(),
                            [&](const GlobalBuffer& x) { return x.name == f.name; });
      spec.buffer_params.push_back(f.name);
      params.push_back({f.name, {nullptr, llvm_type(g->dtype), std::max(1, g->dtype.bytes())}});
    }
    types.assign(params.size(), global_ptr);
    for (const HostFrame& f : host_) {
      if (f.kind != HostFrame::kLoopVar) continue;
      spec.scalar_params.push_back(f.name);
      types.push_back(b_.getInt32Ty());
    }

    fn_ = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), types, false),
                                 llvm::GlobalValue::ExternalLinkage, spec.name, mod_);
    fn_->addFnAttr(llvm::Attribute::NoUnwind);
    mark_kernel(*fn_);
    vars_.clear();
    buffers_.clear();
    unsigned i = 0;
    for (auto& [name, buffer] : params) {
      llvm::Argument* arg = fn_->getArg(i);
      arg->setName(name);
      // Buffers never overlap; inputs are only read, so loads may use the read-only
      // data path (ld.global.nc).
      fn_->addParamAttr(i, llvm::Attribute::NoAlias);
      // Device allocations (cuMemAlloc) are 256-byte aligned: vector accesses may use it.
      fn_->addParamAttr(i, llvm::Attribute::getWithAlignment(ctx_, llvm::Align(16)));
      if (i < nest_.inputs.size()) fn_->addParamAttr(i, llvm::Attribute::ReadOnly);
      buffer.ptr = arg;
      buffers_[name] = buffer;
      ++i;
    }
    for (const std::string& name : spec.scalar_params) {
      fn_->getArg(i)->setName(name);
      vars_[name] = fn_->getArg(i++);
    }

    alloca_block_ = llvm::BasicBlock::Create(ctx_, "allocas", fn_);
    llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "exit", fn_);
    b_.SetInsertPoint(entry);
    // What the host evaluates around the launch, evaluated by each thread instead.
    for (const HostFrame& f : host_) {
      if (f.kind == HostFrame::kLet) {
        vars_[f.name] = emit_expr(f.value);
      } else if (f.kind == HostFrame::kCondition) {
        llvm::BasicBlock* next = llvm::BasicBlock::Create(ctx_, "host.if", fn_);
        b_.CreateCondBr(emit_expr(f.value), next, exit);
        b_.SetInsertPoint(next);
      }
    }
    emit_stmt(body);
    b_.CreateBr(exit);
    b_.SetInsertPoint(exit);
    b_.CreateRetVoid();
    llvm::IRBuilder<>(alloca_block_).CreateBr(entry);
    result_.kernels.push_back(std::move(spec));
  }

  // --- Statements inside a kernel ---

  void emit_stmt(const Stmt& s) {
    if (!s.defined() || !error_.ok()) return;
    switch (s.kind()) {
      case NodeKind::kLetStmt: {
        const LetStmt* op = s.as<LetStmt>();
        with_var(op->name, emit_expr(op->value), [&] { emit_stmt(op->body); });
        return;
      }
      case NodeKind::kFor: return emit_for(s.as<For>());
      case NodeKind::kStore: {
        const Store* op = s.as<Store>();
        const Buffer buf = buffer(op->name);
        llvm::Value* value = emit_expr(op->value);
        b_.CreateAlignedStore(value, element_ptr(buf, op->indices[0]), llvm::Align(buf.align));
        return;
      }
      case NodeKind::kAllocate: return emit_allocate(s.as<Allocate>());
      case NodeKind::kIfThenElse: {
        const IfThenElse* op = s.as<IfThenElse>();
        emit_if(
            emit_expr(op->condition), [&] { emit_stmt(op->then_case); },
            op->else_case.defined() ? [&] { emit_stmt(op->else_case); } : std::function<void()>());
        return;
      }
      case NodeKind::kBlock:
        for (const Stmt& x : s.as<Block>()->stmts) emit_stmt(x);
        return;
      case NodeKind::kBarrier: b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {}); return;
      default: fail("unexpected statement node");
    }
  }

  template <class F>
  void with_var(const std::string& name, llvm::Value* v, F&& f) {
    auto it = vars_.find(name);
    llvm::Value* old = it == vars_.end() ? nullptr : it->second;
    vars_[name] = v;
    f();
    if (old) {
      vars_[name] = old;
    } else {
      vars_.erase(name);
    }
  }

  void emit_if(llvm::Value* condition, const std::function<void()>& then_case, const std::function<void()>& else_case) {
    llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "if.then", fn_);
    llvm::BasicBlock* else_bb = else_case ? llvm::BasicBlock::Create(ctx_, "if.else", fn_) : nullptr;
    llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx_, "if.end", fn_);
    b_.CreateCondBr(condition, then_bb, else_bb ? else_bb : join);
    b_.SetInsertPoint(then_bb);
    then_case();
    b_.CreateBr(join);
    if (else_bb) {
      b_.SetInsertPoint(else_bb);
      else_case();
      b_.CreateBr(join);
    }
    b_.SetInsertPoint(join);
  }

  // A per-thread buffer: an alloca in the entry block (PTX local memory, or registers
  // once LLVM promotes it). A shared one: a __shared__ array of the kernel (a global
  // in address space 3, one per block).
  void emit_allocate(const Allocate* op) {
    // A buffer private to each thread but allocated outside its thread loops: each
    // thread keeps only its own part (check_gpu_stores accepted its layout).
    if (op->scope != MemoryScope::kShared) {
      Expected<PrivateLayout> layout = private_layout(op);
      if (layout.ok() && layout->uses_threads()) {
        const Stmt own = privatize_buffer(op, *layout);
        return emit_buffer(own.as<Allocate>());
      }
    }
    emit_buffer(op);
  }

  void emit_buffer(const Allocate* op) {
    llvm::Type* elem = llvm_type(op->dtype);
    llvm::Value* storage = nullptr;
    if (op->scope == MemoryScope::kShared) {
      llvm::ArrayType* type = llvm::ArrayType::get(elem, uint64_t(op->num_elements()));
      auto* g = new llvm::GlobalVariable(mod_, type, false, llvm::GlobalValue::InternalLinkage,
                                         llvm::UndefValue::get(type), fn_->getName() + "." + op->name, nullptr,
                                         llvm::GlobalValue::NotThreadLocal, kSharedSpace);
      g->setAlignment(llvm::Align(16));
      storage = g;
    } else {
      llvm::IRBuilder<> ab(alloca_block_);
      llvm::AllocaInst* a = ab.CreateAlloca(elem, ab.getInt32(uint32_t(op->num_elements())), op->name);
      a->setAlignment(llvm::Align(16));
      storage = a;
    }
    std::optional<Buffer> old;
    if (auto it = buffers_.find(op->name); it != buffers_.end()) old = it->second;
    buffers_[op->name] = {storage, elem, std::max(1, op->dtype.bytes())};
    emit_stmt(op->body);
    if (old) {
      buffers_[op->name] = *old;
    } else {
      buffers_.erase(op->name);
    }
  }

  llvm::Value* special_register(GpuTag tag) {
    using ID = llvm::Intrinsic::ID;
    static constexpr ID kBlock[] = {llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x,
                                    llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y,
                                    llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z};
    static constexpr ID kThread[] = {llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x,
                                     llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y,
                                     llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z};
    const ID id = tag.dim == GpuDim::kBlock ? kBlock[tag.axis] : kThread[tag.axis];
    return b_.CreateIntrinsic(id, {}, {});
  }

  void emit_for(const For* op) {
    llvm::Value* min = emit_expr(op->min);
    const int64_t* extent = as_const_int(op->extent);
    if (is_launch_loop(op)) {
      // The loop's iterations are the launch's blocks or threads along its dimension.
      const GpuTag tag = parse_gpu_tag(op->thread_tag);
      if (!extent) return fail("bound loop " + op->name + " has no constant extent");
      llvm::Value* index = special_register(tag);
      llvm::Value* v = b_.CreateAdd(min, index, op->name, false, true);
      auto body = [&] { with_var(op->name, v, [&] { emit_stmt(op->body); }); };
      // A dimension launched wider than this loop: the threads past it do nothing.
      if (*extent < launch_.extent(tag)) {
        emit_if(b_.CreateICmpULT(index, b_.getInt32(uint32_t(*extent))), body, {});
      } else {
        body();
      }
      return;
    }
    // A vectorized loop (innermost: check_gpu_loops) is unrolled; LLVM's NVPTX
    // load/store vectorizer then merges its neighbouring accesses into ld/st.v2 / .v4
    // where their alignment is known (buffers are 16-byte aligned).
    if ((op->kind == ForKind::kUnrolled || op->kind == ForKind::kVectorized) && extent) {
      for (int64_t i = 0; i < *extent; ++i)
        with_var(op->name, b_.CreateAdd(min, b_.getInt32(uint32_t(i)), op->name, false, true),
                 [&] { emit_stmt(op->body); });
      return;
    }
    // Serial and vthread loops are loops of each thread.
    llvm::Value* end = b_.CreateAdd(min, emit_expr(op->extent), "", false, true);
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, op->name + ".header", fn_);
    llvm::BasicBlock* loop = llvm::BasicBlock::Create(ctx_, op->name + ".body", fn_);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, op->name + ".end", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* var = b_.CreatePHI(b_.getInt32Ty(), 2, op->name);
    var->addIncoming(min, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(var, end), loop, done);
    b_.SetInsertPoint(loop);
    with_var(op->name, var, [&] { emit_stmt(op->body); });
    var->addIncoming(b_.CreateAdd(var, b_.getInt32(1), "", true, true), b_.GetInsertBlock());
    b_.CreateBr(header);
    b_.SetInsertPoint(done);
  }

  // --- Expressions (scalars: the cuda target does not vectorize) ---

  Buffer buffer(const std::string& name) {
    auto it = buffers_.find(name);
    if (it != buffers_.end()) return it->second;
    fail("unknown buffer " + name);
    return {llvm::PoisonValue::get(b_.getPtrTy(kGlobalSpace)), b_.getFloatTy(), 4};
  }

  llvm::Value* element_ptr(const Buffer& buf, const Expr& index) {
    return b_.CreateInBoundsGEP(buf.elem, buf.ptr, b_.CreateSExt(emit_expr(index), b_.getInt64Ty()));
  }

  llvm::Value* emit_expr(const Expr& e) {
    if (!e.defined() || e.type().is_vector()) {
      fail("a vector expression in a kernel");
      return llvm::PoisonValue::get(b_.getInt32Ty());
    }
    switch (e.kind()) {
      case NodeKind::kIntImm: return llvm::ConstantInt::get(llvm_type(e.type()), uint64_t(e.as<IntImm>()->value), true);
      case NodeKind::kFloatImm: return llvm::ConstantFP::get(llvm_type(e.type()), e.as<FloatImm>()->value);
      case NodeKind::kVariable: {
        auto it = vars_.find(e.as<Variable>()->name);
        if (it != vars_.end()) return it->second;
        fail("unbound variable " + e.as<Variable>()->name);
        return llvm::PoisonValue::get(llvm_type(e.type()));
      }
      case NodeKind::kCast: return emit_cast(e.as<Cast>());
      case NodeKind::kAdd: return arith(e, e.as<Add>()->a, e.as<Add>()->b);
      case NodeKind::kSub: return arith(e, e.as<Sub>()->a, e.as<Sub>()->b);
      case NodeKind::kMul: return arith(e, e.as<Mul>()->a, e.as<Mul>()->b);
      case NodeKind::kDiv: return div_mod(e.as<Div>()->a, e.as<Div>()->b, false);
      case NodeKind::kMod: return div_mod(e.as<Mod>()->a, e.as<Mod>()->b, true);
      case NodeKind::kMin:
      case NodeKind::kMax: {
        const bool is_min = e.kind() == NodeKind::kMin;
        llvm::Value* a = emit_expr(is_min ? e.as<Min>()->a : e.as<Max>()->a);
        llvm::Value* b = emit_expr(is_min ? e.as<Min>()->b : e.as<Max>()->b);
        const llvm::Intrinsic::ID id = e.type().is_float()
                                           ? (is_min ? llvm::Intrinsic::minimum : llvm::Intrinsic::maximum)
                                           : (is_min ? llvm::Intrinsic::smin : llvm::Intrinsic::smax);
        return b_.CreateBinaryIntrinsic(id, a, b);
      }
      case NodeKind::kEQ: return compare(e, e.as<EQ>()->a, e.as<EQ>()->b);
      case NodeKind::kNE: return compare(e, e.as<NE>()->a, e.as<NE>()->b);
      case NodeKind::kLT: return compare(e, e.as<LT>()->a, e.as<LT>()->b);
      case NodeKind::kLE: return compare(e, e.as<LE>()->a, e.as<LE>()->b);
      case NodeKind::kGT: return compare(e, e.as<GT>()->a, e.as<GT>()->b);
      case NodeKind::kGE: return compare(e, e.as<GE>()->a, e.as<GE>()->b);
      case NodeKind::kAnd: return b_.CreateAnd(emit_expr(e.as<And>()->a), emit_expr(e.as<And>()->b));
      case NodeKind::kOr: return b_.CreateOr(emit_expr(e.as<Or>()->a), emit_expr(e.as<Or>()->b));
      case NodeKind::kNot: return b_.CreateNot(emit_expr(e.as<Not>()->a));
      case NodeKind::kSelect: return emit_select(e.as<Select>());
      case NodeKind::kLoad: {
        const Load* op = e.as<Load>();
        const Buffer buf = buffer(op->name);
        return b_.CreateAlignedLoad(llvm_type(op->type), element_ptr(buf, op->indices[0]), llvm::Align(buf.align));
      }
      case NodeKind::kCall: return emit_call(e.as<Call>());
      default: fail("unexpected expression node"); return llvm::PoisonValue::get(llvm_type(e.type()));
    }
  }

  llvm::Value* arith(const Expr& e, const Expr& x, const Expr& y) {
    llvm::Value *a = emit_expr(x), *b = emit_expr(y);
    if (e.type().is_float()) {
      if (e.kind() == NodeKind::kAdd) return b_.CreateFAdd(a, b);
      return e.kind() == NodeKind::kSub ? b_.CreateFSub(a, b) : b_.CreateFMul(a, b);
    }
    if (e.kind() == NodeKind::kAdd) return b_.CreateAdd(a, b);
    return e.kind() == NodeKind::kSub ? b_.CreateSub(a, b) : b_.CreateMul(a, b);
  }

  // Integer division and modulo round toward negative infinity, as the IR defines them.
  llvm::Value* div_mod(const Expr& x, const Expr& y, bool mod) {
    llvm::Value *a = emit_expr(x), *b = emit_expr(y);
    if (x.type().is_float()) return mod ? b_.CreateFRem(a, b) : b_.CreateFDiv(a, b);
    llvm::Value* q = b_.CreateSDiv(a, b);
    llvm::Value* r = b_.CreateSRem(a, b);
    llvm::Value* zero = llvm::Constant::getNullValue(a->getType());
    llvm::Value* adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateICmpSLT(b_.CreateXor(r, b), zero));
    if (mod) return b_.CreateSelect(adjust, b_.CreateAdd(r, b), r);
    return b_.CreateSub(q, b_.CreateZExt(adjust, q->getType()));
  }

  llvm::Value* compare(const Expr& e, const Expr& x, const Expr& y) {
    llvm::Value *a = emit_expr(x), *b = emit_expr(y);
    if (x.type().is_float()) {
      switch (e.kind()) {
        case NodeKind::kEQ: return b_.CreateFCmpOEQ(a, b);
        case NodeKind::kNE: return b_.CreateFCmpUNE(a, b);
        case NodeKind::kLT: return b_.CreateFCmpOLT(a, b);
        case NodeKind::kLE: return b_.CreateFCmpOLE(a, b);
        case NodeKind::kGT: return b_.CreateFCmpOGT(a, b);
        default: return b_.CreateFCmpOGE(a, b);
      }
    }
    switch (e.kind()) {
      case NodeKind::kEQ: return b_.CreateICmpEQ(a, b);
      case NodeKind::kNE: return b_.CreateICmpNE(a, b);
      case NodeKind::kLT: return b_.CreateICmpSLT(a, b);
      case NodeKind::kLE: return b_.CreateICmpSLE(a, b);
      case NodeKind::kGT: return b_.CreateICmpSGT(a, b);
      default: return b_.CreateICmpSGE(a, b);
    }
  }

  llvm::Value* emit_cast(const Cast* op) {
    const DataType from = op->value.type(), to = op->type;
    llvm::Value* v = emit_expr(op->value);
    llvm::Type* t = llvm_type(to);
    if (to.is_bool())
      return from.is_float() ? b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()))
                             : b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
    if (from.is_float() && to.is_float()) return b_.CreateFPCast(v, t);
    if (from.is_float()) return b_.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {t, v->getType()}, {v});
    if (to.is_float()) return from.is_bool() ? b_.CreateUIToFP(v, t) : b_.CreateSIToFP(v, t);
    return from.is_bool() ? b_.CreateZExtOrTrunc(v, t) : b_.CreateSExtOrTrunc(v, t);
  }

  llvm::Value* emit_select(const Select* op) {
    llvm::Value* c = emit_expr(op->condition);
    if (!may_trap(op->true_value) && !may_trap(op->false_value))
      return b_.CreateSelect(c, emit_expr(op->true_value), emit_expr(op->false_value));
    llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "select.true", fn_);
    llvm::BasicBlock* else_bb = llvm::BasicBlock::Create(ctx_, "select.false", fn_);
    llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx_, "select.join", fn_);
    b_.CreateCondBr(c, then_bb, else_bb);
    b_.SetInsertPoint(then_bb);
    llvm::Value* t = emit_expr(op->true_value);
    llvm::BasicBlock* then_end = b_.GetInsertBlock();
    b_.CreateBr(join);
    b_.SetInsertPoint(else_bb);
    llvm::Value* f = emit_expr(op->false_value);
    llvm::BasicBlock* else_end = b_.GetInsertBlock();
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
    llvm::PHINode* phi = b_.CreatePHI(t->getType(), 2);
    phi->addIncoming(t, then_end);
    phi->addIncoming(f, else_end);
    return phi;
  }

  // NVPTX has no libm: exp, log and tanh call libdevice where it is found (precise, in
  // the argument's type), else use PTX's approximate ex2 / lg2 (as nvcc's fast-math
  // intrinsics do) in f32, f64 arguments going through f32.
  llvm::Value* emit_call(const Call* op) {
    llvm::Value* x = emit_expr(op->args[0]);
    switch (op->op) {
      case CallOp::kAbs:
        if (op->type.is_float()) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
        return b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b_.getFalse());
      case CallOp::kSqrt: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
      case CallOp::kExp:
      case CallOp::kLog:
      case CallOp::kTanh: break;
    }
    llvm::Type* type = x->getType();
    if (libdevice_math_ && (type->isFloatTy() || type->isDoubleTy())) {
      const bool f32 = type->isFloatTy();
      const char* name = op->op == CallOp::kExp   ? (f32 ? "__nv_expf" : "__nv_exp")
                         : op->op == CallOp::kLog ? (f32 ? "__nv_logf" : "__nv_log")
                                                  : (f32 ? "__nv_tanhf" : "__nv_tanh");
      return b_.CreateCall(mod_.getOrInsertFunction(name, type, type), {x});
    }
    llvm::Value* f = b_.CreateFPCast(x, b_.getFloatTy());
    auto exp = [&](llvm::Value* v) {
      return b_.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_f, {},
                                {b_.CreateFMul(v, llvm::ConstantFP::get(b_.getFloatTy(), std::numbers::log2e))});
    };
    llvm::Value* r = nullptr;
    if (op->op == CallOp::kExp) {
      r = exp(f);
    } else if (op->op == CallOp::kLog) {
      r = b_.CreateFMul(b_.CreateIntrinsic(llvm::Intrinsic::nvvm_lg2_approx_f, {}, {f}),
                        llvm::ConstantFP::get(b_.getFloatTy(), std::numbers::ln2));
    } else {
      // tanh(x) = 1 - 2 / (exp(2x) + 1), which saturates to +-1 without overflow.
      llvm::Value* one = llvm::ConstantFP::get(b_.getFloatTy(), 1.0);
      llvm::Value* e2x = exp(b_.CreateFMul(f, llvm::ConstantFP::get(b_.getFloatTy(), 2.0)));
      r = b_.CreateFSub(one, b_.CreateFDiv(llvm::ConstantFP::get(b_.getFloatTy(), 2.0), b_.CreateFAdd(e2x, one)));
    }
    return b_.CreateFPCast(r, type);
  }
};

}  // namespace

Expected<KernelModule> emit_kernels(const LoopNest& nest, llvm::Module& module, bool libdevice_math) {
  if (nest.target != "cuda") return failed_precondition("the loop nest was not lowered for the cuda target");
  return KernelEmitter(nest, module, libdevice_math).emit();
}

}  // namespace tensorgym::cuda
