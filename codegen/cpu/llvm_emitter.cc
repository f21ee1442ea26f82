#include "codegen/cpu/llvm_emitter.h"

#include <llvm/IR/DataLayout.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "codegen/analysis/speculative_loads.h"
#include "codegen/ir/interval.h"
#include "codegen/ir/ir_visitor.h"
#include "codegen/lower/strided_loads.h"

namespace tensorgym {
namespace {

// Local buffers up to this size live on the stack; larger ones on the heap.
constexpr int64_t kMaxStackBytes = int64_t(512) << 10;

struct BufferBinding {
  llvm::Value* ptr = nullptr;
  llvm::Type* elem = nullptr;
};

// Names a statement reads or writes that come from outside it: variables and buffers.
struct FreeNames {
  std::unordered_set<std::string> vars;
  std::unordered_set<std::string> buffers;
};

class FreeNameCollector : public IRVisitor {
 public:
  FreeNames names;

 private:
  std::unordered_set<std::string> bound_vars_, bound_buffers_;
  void visit(const Variable* op) override {
    if (!bound_vars_.count(op->name)) names.vars.insert(op->name);
  }
  void visit(const Load* op) override {
    if (!bound_buffers_.count(op->name)) names.buffers.insert(op->name);
    IRVisitor::visit(op);
  }
  void visit(const Store* op) override {
    if (!bound_buffers_.count(op->name)) names.buffers.insert(op->name);
    IRVisitor::visit(op);
  }
  void visit(const For* op) override {
    visit_expr(op->min);
    visit_expr(op->extent);
    bool fresh = bound_vars_.insert(op->name).second;
    visit_stmt(op->body);
    if (fresh) bound_vars_.erase(op->name);
  }
  void visit(const LetStmt* op) override {
    visit_expr(op->value);
    bool fresh = bound_vars_.insert(op->name).second;
    visit_stmt(op->body);
    if (fresh) bound_vars_.erase(op->name);
  }
  void visit(const Allocate* op) override {
    bool fresh = bound_buffers_.insert(op->name).second;
    visit_stmt(op->body);
    if (fresh) bound_buffers_.erase(op->name);
  }
};

bool contains_load(const Expr& e) {
  bool found = false;
  visit_exprs(e, [&](const Expr& n) { found |= n.kind() == NodeKind::kLoad || n.kind() == NodeKind::kDiv ||
                                                n.kind() == NodeKind::kMod; });
  return found;
}

class Emitter {
 public:
  Emitter(llvm::LLVMContext& ctx, llvm::Module& mod, const EmitTarget& target)
      : ctx_(ctx), mod_(mod), b_(ctx), target_(target) {
    llvm::FastMathFlags fmf;
    fmf.setAllowContract(true);  // a*b + c may become one FMA
    b_.setFastMathFlags(fmf);
  }

  Status emit(const LoopNest& nest, const Stmt& body) {
    std::vector<BufferArg> args = nest.args();
    inputs_ = nest.inputs;
    llvm::Type* ptr = b_.getPtrTy();

    // The body takes each buffer as a noalias, 64-byte aligned pointer.
    std::vector<llvm::Type*> param_types(args.size(), ptr);
    llvm::Function* body_fn = make_function("tg_body", llvm::FunctionType::get(b_.getVoidTy(), param_types, false),
                                            llvm::GlobalValue::InternalLinkage);
    for (size_t i = 0; i < args.size(); ++i) mark_buffer_param(body_fn, unsigned(i));

    // The entry unpacks the argument array and calls the body.
    llvm::Function* entry = make_function(kKernelEntry, llvm::FunctionType::get(b_.getVoidTy(), {ptr}, false),
                                          llvm::GlobalValue::ExternalLinkage);
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", entry));
    std::vector<llvm::Value*> call_args;
    for (size_t i = 0; i < args.size(); ++i) {
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptr, entry->getArg(0), i);
      call_args.push_back(b_.CreateLoad(ptr, slot, args[i].name));
    }
    b_.CreateCall(body_fn, call_args);
    b_.CreateRetVoid();

    begin_function(body_fn);
    for (size_t i = 0; i < args.size(); ++i) {
      body_fn->getArg(unsigned(i))->setName(args[i].name);
      buffers_[args[i].name] = {body_fn->getArg(unsigned(i)), llvm_type(args[i].dtype)};
    }
    emit_stmt(body);
    end_function();
    return error_;
  }

 private:
  llvm::LLVMContext& ctx_;
  llvm::Module& mod_;
  llvm::IRBuilder<> b_;
  EmitTarget target_;
  Status error_;

  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* alloca_block_ = nullptr;
  std::unordered_map<std::string, llvm::Value*> vars_;  // loop, let variables (i32 or vectors)
  std::unordered_map<std::string, int64_t> var_max_;    // loop variables of constant bounds: the largest value
  // The ranges of loop and let variables, as the cost model's summary has them
  // (codegen/analysis/features.cc), for arms_evaluable_unconditionally.
  RangeScope ranges_;
  std::vector<BufferArg> inputs_;
  const Select* store_value_ = nullptr;  // the value of the store being emitted, when a select
  std::unordered_map<std::string, BufferBinding> buffers_;
  llvm::Value* mask_ = nullptr;  // active lanes inside vector-conditional code
  bool index_mode_ = false;      // emitting an index: integer arithmetic cannot overflow
  int outlined_ = 0;

  void fail(const std::string& message) {
    if (error_.ok()) error_ = internal_error("LLVM emission: " + message);
  }

  llvm::Function* make_function(const std::string& name, llvm::FunctionType* type,
                                llvm::GlobalValue::LinkageTypes linkage) {
    llvm::Function* f = llvm::Function::Create(type, linkage, name, mod_);
    f->addFnAttr("target-cpu", target_.cpu);
    f->addFnAttr("target-features", target_.features);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    return f;
  }

  void mark_buffer_param(llvm::Function* f, unsigned i) {
    f->addParamAttr(i, llvm::Attribute::NoAlias);
    f->addParamAttr(i, llvm::Attribute::NoCapture);
    f->addParamAttr(i, llvm::Attribute::getWithAlignment(ctx_, llvm::Align(64)));
  }

  void begin_function(llvm::Function* f) {
    fn_ = f;
    alloca_block_ = llvm::BasicBlock::Create(ctx_, "allocas", f);
    llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "body", f);
    b_.SetInsertPoint(body);
  }

  void end_function() {
    b_.CreateRetVoid();
    llvm::IRBuilder<> ab(alloca_block_);
    ab.CreateBr(&*std::next(fn_->begin()));
  }

  llvm::Type* llvm_type(DataType t) {
    llvm::Type* scalar = nullptr;
    if (t.is_float()) {
      scalar = t.bits == 32 ? b_.getFloatTy() : b_.getDoubleTy();
    } else {
      scalar = b_.getIntNTy(t.bits);
    }
    return t.lanes > 1 ? llvm::FixedVectorType::get(scalar, t.lanes) : scalar;
  }

  llvm::Value* splat(llvm::Value* v, unsigned lanes) {
    if (v->getType()->isVectorTy()) return v;
    return b_.CreateVectorSplat(lanes, v);
  }

  // --- Expressions -------------------------------------------------------------

  llvm::Value* emit_index(const Expr& e) {
    bool saved = index_mode_;
    index_mode_ = true;
    llvm::Value* v = emit_expr(e);
    index_mode_ = saved;
    return v;
  }

  llvm::Value* emit_expr(const Expr& e) {
    switch (e.kind()) {
      case NodeKind::kIntImm:
        return llvm::ConstantInt::get(llvm_type(e.type()), uint64_t(e.as<IntImm>()->value), true);
      case NodeKind::kFloatImm: return llvm::ConstantFP::get(llvm_type(e.type()), e.as<FloatImm>()->value);
      case NodeKind::kVariable: {
        auto it = vars_.find(e.as<Variable>()->name);
        if (it == vars_.end()) {
          fail("unbound variable " + e.as<Variable>()->name);
          return llvm::UndefValue::get(llvm_type(e.type()));
        }
        return it->second;
      }
      case NodeKind::kCast: return emit_cast(e.as<Cast>());
      case NodeKind::kAdd: return emit_arith(e, e.as<Add>()->a, e.as<Add>()->b);
      case NodeKind::kSub: return emit_arith(e, e.as<Sub>()->a, e.as<Sub>()->b);
      case NodeKind::kMul: return emit_arith(e, e.as<Mul>()->a, e.as<Mul>()->b);
      case NodeKind::kDiv: return emit_div_mod(e, e.as<Div>()->a, e.as<Div>()->b, false);
      case NodeKind::kMod: return emit_div_mod(e, e.as<Mod>()->a, e.as<Mod>()->b, true);
      case NodeKind::kMin:
      case NodeKind::kMax: {
        bool is_min = e.kind() == NodeKind::kMin;
        Expr x = is_min ? e.as<Min>()->a : e.as<Max>()->a;
        Expr y = is_min ? e.as<Min>()->b : e.as<Max>()->b;
        llvm::Value *a = emit_expr(x), *b = emit_expr(y);
        llvm::Intrinsic::ID id = e.type().is_float() ? (is_min ? llvm::Intrinsic::minimum : llvm::Intrinsic::maximum)
                                                     : (is_min ? llvm::Intrinsic::smin : llvm::Intrinsic::smax);
        return b_.CreateBinaryIntrinsic(id, a, b);
      }
      case NodeKind::kEQ: return emit_compare(e, e.as<EQ>()->a, e.as<EQ>()->b);
      case NodeKind::kNE: return emit_compare(e, e.as<NE>()->a, e.as<NE>()->b);
      case NodeKind::kLT: return emit_compare(e, e.as<LT>()->a, e.as<LT>()->b);
      case NodeKind::kLE: return emit_compare(e, e.as<LE>()->a, e.as<LE>()->b);
      case NodeKind::kGT: return emit_compare(e, e.as<GT>()->a, e.as<GT>()->b);
      case NodeKind::kGE: return emit_compare(e, e.as<GE>()->a, e.as<GE>()->b);
      case NodeKind::kAnd: return b_.CreateAnd(emit_expr(e.as<And>()->a), emit_expr(e.as<And>()->b));
      case NodeKind::kOr: return b_.CreateOr(emit_expr(e.as<Or>()->a), emit_expr(e.as<Or>()->b));
      case NodeKind::kNot: return b_.CreateNot(emit_expr(e.as<Not>()->a));
      case NodeKind::kSelect: return emit_select(e.as<Select>());
      case NodeKind::kLoad: return emit_load(e.as<Load>());
      case NodeKind::kCall: return emit_call(e.as<Call>());
      case NodeKind::kRamp: {
        const Ramp* r = e.as<Ramp>();
        llvm::Value* base = emit_expr(r->base);
        llvm::Value* stride = emit_expr(r->stride);
        std::vector<llvm::Constant*> steps;
        for (int i = 0; i < r->lanes; ++i) steps.push_back(llvm::ConstantInt::get(base->getType(), i));
        llvm::Value* offsets = b_.CreateMul(splat(stride, unsigned(r->lanes)), llvm::ConstantVector::get(steps), "",
                                            false, index_mode_);
        return b_.CreateAdd(splat(base, unsigned(r->lanes)), offsets, "", false, index_mode_);
      }
      case NodeKind::kBroadcast: {
        const Broadcast* bc = e.as<Broadcast>();
        return splat(emit_expr(bc->value), unsigned(bc->lanes));
      }
      default: fail("unexpected expression node"); return llvm::UndefValue::get(llvm_type(e.type()));
    }
  }

  llvm::Value* emit_arith(const Expr& e, const Expr& x, const Expr& y) {
    llvm::Value *a = emit_expr(x), *b = emit_expr(y);
    bool nsw = index_mode_;  // index arithmetic is bounded by the tensor size caps
    if (e.type().is_float()) {
      switch (e.kind()) {
        case NodeKind::kAdd: return b_.CreateFAdd(a, b);
        case NodeKind::kSub: return b_.CreateFSub(a, b);
        default: return b_.CreateFMul(a, b);
      }
    }
    switch (e.kind()) {
      case NodeKind::kAdd: return b_.CreateAdd(a, b, "", false, nsw);
      case NodeKind::kSub: return b_.CreateSub(a, b, "", false, nsw);
      default: return b_.CreateMul(a, b, "", false, nsw);
    }
  }

  // Integer division and modulo round toward negative infinity.
  llvm::Value* emit_div_mod(const Expr& e, const Expr& x, const Expr& y, bool mod) {
    llvm::Value *a = emit_expr(x), *b = emit_expr(y);
    if (e.type().is_float()) return mod ? b_.CreateFRem(a, b) : b_.CreateFDiv(a, b);
    llvm::Value* q = b_.CreateSDiv(a, b);
    llvm::Value* r = b_.CreateSRem(a, b);
    llvm::Value* zero = llvm::Constant::getNullValue(a->getType());
    // Adjust when the remainder is nonzero and its sign differs from the divisor's.
    llvm::Value* adjust = b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateICmpSLT(b_.CreateXor(r, b), zero));
    if (mod) return b_.CreateSelect(adjust, b_.CreateAdd(r, b), r);
    return b_.CreateSub(q, b_.CreateZExt(adjust, q->getType()));
  }

  llvm::Value* emit_compare(const Expr& e, const Expr& x, const Expr& y) {
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
    DataType from = op->value.type(), to = op->type;
    llvm::Value* v = emit_expr(op->value);
    llvm::Type* t = llvm_type(to);
    if (to.is_bool()) {
      return from.is_float() ? b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()))
                             : b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
    }
    if (from.is_float() && to.is_float()) return b_.CreateFPCast(v, t);
    if (from.is_float()) return b_.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {t, v->getType()}, {v});
    if (to.is_float()) return from.is_bool() ? b_.CreateUIToFP(v, t) : b_.CreateSIToFP(v, t);
    return from.is_bool() ? b_.CreateZExtOrTrunc(v, t) : b_.CreateSExtOrTrunc(v, t);
  }

  llvm::Value* emit_call(const Call* op) {
    llvm::Value* x = emit_expr(op->args[0]);
    switch (op->op) {
      case CallOp::kAbs:
        if (op->type.is_float()) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
        return b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b_.getFalse());
      case CallOp::kExp: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::exp, x);
      case CallOp::kLog: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::log, x);
      case CallOp::kSqrt: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
      case CallOp::kTanh: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::tanh, x);
    }
    return x;
  }

  llvm::Value* emit_select(const Select* op) {
    llvm::Value* c = emit_expr(op->condition);
    if (c->getType()->isVectorTy()) {
      // Per-lane choice: each side's loads only touch the lanes that select it.
      llvm::Value* saved = mask_;
      mask_ = and_mask(saved, c);
      llvm::Value* t = emit_expr(op->true_value);
      mask_ = and_mask(saved, b_.CreateNot(c));
      llvm::Value* f = emit_expr(op->false_value);
      mask_ = saved;
      return b_.CreateSelect(c, t, f);
    }
    if ((!contains_load(op->true_value) && !contains_load(op->false_value)) ||
        select_evaluates_both_arms(*op, op == store_value_, inputs_, ranges_)) {
      return b_.CreateSelect(c, emit_expr(op->true_value), emit_expr(op->false_value));
    }
    // Only the chosen side runs: the other may read out of bounds (padding) of a
    // buffer with no slack, or divide by zero.
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

  // Runs body() with `name` in ranges_ bound to `r` (unbounded: not in ranges_).
  template <class F>
  void with_range(const std::string& name, const IntRange& r, F&& body) {
    std::optional<IntRange> saved;
    if (auto it = ranges_.find(name); it != ranges_.end()) saved = it->second;
    if (r.bounded()) {
      ranges_[name] = r;
    } else {
      ranges_.erase(name);
    }
    body();
    if (saved) {
      ranges_[name] = *saved;
    } else {
      ranges_.erase(name);
    }
  }

  llvm::Value* and_mask(llvm::Value* mask, llvm::Value* c) { return mask ? b_.CreateAnd(mask, c) : c; }

  // Any lane active: a scalar access under a vector mask happens when one lane needs it.
  llvm::Value* any_lane(llvm::Value* mask) { return b_.CreateOrReduce(mask); }

  BufferBinding buffer(const std::string& name) {
    auto it = buffers_.find(name);
    if (it == buffers_.end()) {
      fail("unknown buffer " + name);
      return {llvm::UndefValue::get(b_.getPtrTy()), b_.getFloatTy()};
    }
    return it->second;
  }

  llvm::Value* element_ptr(const BufferBinding& buf, llvm::Value* index) {
    llvm::Type* i64 = b_.getInt64Ty();
    if (auto* v = llvm::dyn_cast<llvm::FixedVectorType>(index->getType()))
      i64 = llvm::FixedVectorType::get(i64, v->getNumElements());
    return b_.CreateInBoundsGEP(buf.elem, buf.ptr, b_.CreateSExt(index, i64));
  }

  // A ramp index with stride 1: one contiguous vector access at its base.
  static const Ramp* dense_ramp(const Expr& index) {
    const Ramp* r = index.as<Ramp>();
    return r && is_const(r->stride, 1) ? r : nullptr;
  }

  llvm::Align element_align(const BufferBinding& buf) {
    return llvm::Align(mod_.getDataLayout().getTypeAllocSize(buf.elem).getFixedValue());
  }

  llvm::Value* emit_load(const Load* op) {
    BufferBinding buf = buffer(op->name);
    const Expr& index = op->indices[0];
    llvm::Type* type = llvm_type(op->type);
    llvm::Align align = element_align(buf);
    if (!op->type.is_vector()) {
      llvm::Value* ptr = element_ptr(buf, emit_index(index));
      if (!mask_) return b_.CreateAlignedLoad(type, ptr, align);
      llvm::Value* one = b_.CreateMaskedLoad(llvm::FixedVectorType::get(type, 1), ptr, align,
                                             splat(any_lane(mask_), 1));
      return b_.CreateExtractElement(one, uint64_t(0));
    }
    unsigned lanes = unsigned(op->type.lanes);
    if (const Ramp* r = dense_ramp(index)) {
      llvm::Value* ptr = element_ptr(buf, emit_index(r->base));
      if (!mask_) return b_.CreateAlignedLoad(type, ptr, align);
      return b_.CreateMaskedLoad(type, ptr, align, mask_);
    }
    if (const Ramp* r = index.as<Ramp>()) {
      if (const int64_t* stride = as_const_int(r->stride); stride && strided_load_fits(*stride, lanes))
        return emit_strided_load(buf, type, align, r, *stride, lanes);
    }
    llvm::Value* ptrs = element_ptr(buf, emit_index(index));
    llvm::Value* mask = mask_ ? mask_ : llvm::Constant::getAllOnesValue(llvm::FixedVectorType::get(b_.getInt1Ty(), lanes));
    return b_.CreateMaskedGather(type, ptrs, align, mask);
  }

  // A load whose lanes are a constant stride apart: one wide contiguous load over the
  // span and a shuffle that picks every stride-th element (vector loads and permutes),
  // where a gather would take one load per lane. Without a mask the span's elements
  // between two lanes are read too (they lie inside the buffer between two addresses
  // the load reads); under a mask only the active lanes' elements are, since a masked
  // lane's address may be outside the buffer.
  llvm::Value* emit_strided_load(const BufferBinding& buf, llvm::Type* type, llvm::Align align, const Ramp* r,
                                 int64_t stride, unsigned lanes) {
    const unsigned s = unsigned(stride < 0 ? -stride : stride), wide = lanes * s;
    // The lowest address: lane 0's for a positive stride, the last lane's otherwise.
    llvm::Value* low = emit_index(r->base);
    if (stride < 0) low = b_.CreateAdd(low, llvm::ConstantInt::get(low->getType(), int64_t(lanes - 1) * stride, true));
    llvm::Value* ptr = element_ptr(buf, low);
    std::vector<int> pick(lanes);
    for (unsigned i = 0; i < lanes; ++i) pick[i] = int(stride > 0 ? i * s : (lanes - 1 - i) * s);
    llvm::Type* wide_type = llvm::FixedVectorType::get(type->getScalarType(), wide);
    llvm::Value* mask;
    if (!mask_) {
      std::vector<llvm::Constant*> m(wide);
      for (unsigned j = 0; j < wide; ++j) m[j] = b_.getInt1(j <= (lanes - 1) * s);
      mask = llvm::ConstantVector::get(m);
    } else {
      // Element pick[i] takes lane i's mask; the others (index `lanes`: a false) none.
      std::vector<int> spread(wide, int(lanes));
      for (unsigned i = 0; i < lanes; ++i) spread[size_t(pick[i])] = int(i);
      mask = b_.CreateShuffleVector(mask_, llvm::Constant::getNullValue(mask_->getType()), spread);
    }
    llvm::Value* all = b_.CreateMaskedLoad(wide_type, ptr, align, mask);
    return b_.CreateShuffleVector(all, pick);
  }

  // --- Statements --------------------------------------------------------------

  void emit_stmt(const Stmt& s) {
    if (!s.defined() || !error_.ok()) return;
    switch (s.kind()) {
      case NodeKind::kLetStmt: {
        const LetStmt* op = s.as<LetStmt>();
        llvm::Value* v = emit_index(op->value);
        with_range(op->name, constant_bounds(op->value, ranges_), [&] {
          with_var(op->name, v, [&] { emit_stmt(op->body); });
        });
        return;
      }
      case NodeKind::kFor: return emit_for(s.as<For>());
      case NodeKind::kStore: return emit_store(s.as<Store>());
      case NodeKind::kAllocate: return emit_allocate(s.as<Allocate>());
      case NodeKind::kIfThenElse: return emit_if(s.as<IfThenElse>());
      case NodeKind::kBlock:
        for (const Stmt& x : s.as<Block>()->stmts) emit_stmt(x);
        return;
      default: fail("unexpected statement node");
    }
  }

  template <class F>
  void with_var(const std::string& name, llvm::Value* v, F&& f) {
    auto it = vars_.find(name);
    llvm::Value* old = it == vars_.end() ? nullptr : it->second;
    vars_[name] = v;
    f();
    if (old) vars_[name] = old;
    else vars_.erase(name);
  }

  void emit_store(const Store* op) {
    BufferBinding buf = buffer(op->name);
    const Expr& index = op->indices[0];
    store_value_ = op->value.as<Select>();
    llvm::Value* value = emit_expr(op->value);
    store_value_ = nullptr;
    llvm::Align align = element_align(buf);
    if (!index.type().is_vector()) {
      llvm::Value* ptr = element_ptr(buf, emit_index(index));
      if (!mask_) {
        b_.CreateAlignedStore(value, ptr, align);
      } else {
        b_.CreateMaskedStore(splat(value, 1), ptr, align, splat(any_lane(mask_), 1));
      }
      return;
    }
    if (const Ramp* r = dense_ramp(index)) {
      llvm::Value* ptr = element_ptr(buf, emit_index(r->base));
      if (!mask_) {
        b_.CreateAlignedStore(value, ptr, align);
      } else {
        b_.CreateMaskedStore(value, ptr, align, mask_);
      }
      return;
    }
    unsigned lanes = unsigned(index.type().lanes);
    llvm::Value* ptrs = element_ptr(buf, emit_index(index));
    llvm::Value* mask = mask_ ? mask_ : llvm::Constant::getAllOnesValue(llvm::FixedVectorType::get(b_.getInt1Ty(), lanes));
    b_.CreateMaskedScatter(value, ptrs, align, mask);
  }

  void emit_if(const IfThenElse* op) {
    llvm::Value* c = emit_expr(op->condition);
    if (c->getType()->isVectorTy()) {
      // Both sides run under complementary masks, skipped when no lane needs them.
      llvm::Value* saved = mask_;
      emit_masked(and_mask(saved, c), op->then_case);
      if (op->else_case.defined()) emit_masked(and_mask(saved, b_.CreateNot(c)), op->else_case);
      mask_ = saved;
      return;
    }
    llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "if.then", fn_);
    llvm::BasicBlock* else_bb = op->else_case.defined() ? llvm::BasicBlock::Create(ctx_, "if.else", fn_) : nullptr;
    llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx_, "if.end", fn_);
    b_.CreateCondBr(c, then_bb, else_bb ? else_bb : join);
    b_.SetInsertPoint(then_bb);
    emit_stmt(op->then_case);
    b_.CreateBr(join);
    if (else_bb) {
      b_.SetInsertPoint(else_bb);
      emit_stmt(op->else_case);
      b_.CreateBr(join);
    }
    b_.SetInsertPoint(join);
  }

  void emit_masked(llvm::Value* mask, const Stmt& s) {
    llvm::BasicBlock* run = llvm::BasicBlock::Create(ctx_, "mask.any", fn_);
    llvm::BasicBlock* join = llvm::BasicBlock::Create(ctx_, "mask.end", fn_);
    b_.CreateCondBr(any_lane(mask), run, join);
    b_.SetInsertPoint(run);
    llvm::Value* saved = mask_;
    mask_ = mask;
    emit_stmt(s);
    mask_ = saved;
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
  }

  void emit_allocate(const Allocate* op) {
    int64_t elements = op->num_elements();
    llvm::Type* elem = llvm_type(op->dtype);
    int64_t bytes = elements * op->dtype.bytes();
    llvm::Value* ptr = nullptr;
    bool heap = bytes > kMaxStackBytes;
    if (!heap) {
      // In the entry block, so loops around the allocation do not grow the stack.
      llvm::IRBuilder<> ab(alloca_block_);
      llvm::AllocaInst* a = ab.CreateAlloca(elem, ab.getInt64(uint64_t(elements)), op->name);
      a->setAlignment(llvm::Align(64));
      ptr = a;
    } else {
      llvm::FunctionCallee alloc = mod_.getOrInsertFunction(
          "tg_alloc", llvm::FunctionType::get(b_.getPtrTy(), {b_.getInt64Ty()}, false));
      // Each block is new memory, as malloc's: without noalias LLVM assumes two local
      // buffers may overlap, and keeps an accumulator in one in memory while the other
      // is read (a channel reduction over an rfactor buffer ran 4 times slower).
      llvm::CallInst* call = b_.CreateCall(alloc, {b_.getInt64(uint64_t(bytes))}, op->name);
      call->addRetAttr(llvm::Attribute::NoAlias);
      ptr = call;
    }
    auto it = buffers_.find(op->name);
    std::optional<BufferBinding> old;
    if (it != buffers_.end()) old = it->second;
    buffers_[op->name] = {ptr, elem};
    emit_stmt(op->body);
    if (heap) {
      llvm::FunctionCallee free_fn =
          mod_.getOrInsertFunction("tg_free", llvm::FunctionType::get(b_.getVoidTy(), {b_.getPtrTy()}, false));
      b_.CreateCall(free_fn, {ptr});
    }
    if (old) buffers_[op->name] = *old;
    else buffers_.erase(op->name);
  }

  void emit_for(const For* op) {
    // The loop variable's largest value, while the body is emitted, when its bounds
    // are constants (a parallel body inside hands it on as a known range).
    const int64_t* cmin = as_const_int(op->min);
    const int64_t* cext = as_const_int(op->extent);
    std::optional<int64_t> saved_max;
    if (auto it = var_max_.find(op->name); it != var_max_.end()) saved_max = it->second;
    var_max_.erase(op->name);
    if (cmin && cext && *cmin >= 0 && *cext >= 1 && *cmin + *cext - 1 <= INT32_MAX) var_max_[op->name] = *cmin + *cext - 1;
    const IntRange rmin = constant_bounds(op->min, ranges_), rext = constant_bounds(op->extent, ranges_);
    IntRange r;  // unbounded unless both bounds are
    if (rmin.bounded() && rext.bounded() && rext.max >= 1) r = {rmin.min, rmin.max + rext.max - 1};
    with_range(op->name, r, [&] { emit_for_body(op); });
    var_max_.erase(op->name);
    if (saved_max) var_max_[op->name] = *saved_max;
  }

  void emit_for_body(const For* op) {
    if (op->kind == ForKind::kParallel) return emit_parallel_for(op);
    llvm::Value* min = emit_index(op->min);
    const int64_t* extent = as_const_int(op->extent);
    if (op->kind == ForKind::kUnrolled && extent) {
      for (int64_t i = 0; i < *extent; ++i) {
        llvm::Value* v = b_.CreateAdd(min, b_.getInt32(uint32_t(i)), op->name, false, true);
        with_var(op->name, v, [&] { emit_stmt(op->body); });
      }
      return;
    }
    llvm::Value* end = b_.CreateAdd(min, emit_index(op->extent), "", false, true);
    emit_loop(op->name, min, end, [&] { emit_stmt(op->body); });
  }

  // for (var = begin; var < end; ++var) body()
  template <class F>
  void emit_loop(const std::string& name, llvm::Value* begin, llvm::Value* end, F&& body) {
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, name + ".header", fn_);
    llvm::BasicBlock* loop = llvm::BasicBlock::Create(ctx_, name + ".body", fn_);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, name + ".end", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* var = b_.CreatePHI(b_.getInt32Ty(), 2, name);
    var->addIncoming(begin, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(var, end), loop, exit);
    b_.SetInsertPoint(loop);
    with_var(name, var, body);
    llvm::Value* next = b_.CreateAdd(var, b_.getInt32(1), "", true, true);
    var->addIncoming(next, b_.GetInsertBlock());
    b_.CreateBr(header);
    b_.SetInsertPoint(exit);
  }

  // The body becomes a function over a range of iterations; the runtime splits the
  // range across threads. Captured buffers reach it as noalias parameters.
  void emit_parallel_for(const For* op) {
    FreeNameCollector c;
    c.visit_stmt(op->body);
    c.names.vars.erase(op->name);
    // The body recomputes the loop's minimum and extent: their variables travel too.
    c.visit_expr(op->min);
    c.visit_expr(op->extent);
    std::vector<std::string> vars, bufs;
    for (const std::string& v : c.names.vars)
      if (vars_.count(v)) vars.push_back(v);
    for (const std::string& v : c.names.buffers)
      if (buffers_.count(v)) bufs.push_back(v);
    std::sort(vars.begin(), vars.end());
    std::sort(bufs.begin(), bufs.end());

    llvm::Type* ptr_ty = b_.getPtrTy();
    llvm::Type* i32 = b_.getInt32Ty();
    std::vector<llvm::Type*> fields;
    for (const std::string& v : vars) fields.push_back(vars_.at(v)->getType());
    for (size_t i = 0; i < bufs.size(); ++i) fields.push_back(ptr_ty);
    llvm::StructType* closure_ty = llvm::StructType::get(ctx_, fields);

    // The caller packs the closure and calls the runtime.
    llvm::Value* extent = emit_index(op->extent);
    llvm::AllocaInst* closure = llvm::IRBuilder<>(alloca_block_).CreateAlloca(closure_ty, nullptr, "closure");
    unsigned f = 0;
    for (const std::string& v : vars) b_.CreateStore(vars_.at(v), b_.CreateStructGEP(closure_ty, closure, f++));
    for (const std::string& name : bufs) b_.CreateStore(buffers_.at(name).ptr, b_.CreateStructGEP(closure_ty, closure, f++));

    std::string base = fmt::format("tg_parallel_{}", outlined_++);
    // Body: (buffers..., vars..., begin, end) with noalias buffer parameters.
    std::vector<llvm::Type*> body_params(bufs.size(), ptr_ty);
    for (const std::string& v : vars) body_params.push_back(vars_.at(v)->getType());
    body_params.insert(body_params.end(), {i32, i32});
    llvm::Function* body_fn = make_function(base + "_body", llvm::FunctionType::get(b_.getVoidTy(), body_params, false),
                                            llvm::GlobalValue::InternalLinkage);
    for (size_t i = 0; i < bufs.size(); ++i) mark_buffer_param(body_fn, unsigned(i));
    // Wrapper: what the runtime calls, (closure, begin, end).
    llvm::Function* wrapper = make_function(base, llvm::FunctionType::get(b_.getVoidTy(), {ptr_ty, i32, i32}, false),
                                            llvm::GlobalValue::InternalLinkage);

    llvm::FunctionCallee runtime = mod_.getOrInsertFunction(
        "tg_parallel_for", llvm::FunctionType::get(b_.getVoidTy(), {ptr_ty, ptr_ty, i32}, false));
    b_.CreateCall(runtime, {wrapper, closure, extent});

    // Emit the wrapper.
    {
      llvm::IRBuilder<> wb(llvm::BasicBlock::Create(ctx_, "entry", wrapper));
      llvm::Value* cl = wrapper->getArg(0);
      std::vector<llvm::Value*> args;
      unsigned k = unsigned(vars.size());
      for (size_t i = 0; i < bufs.size(); ++i)
        args.push_back(wb.CreateLoad(ptr_ty, wb.CreateStructGEP(closure_ty, cl, k + unsigned(i))));
      for (unsigned i = 0; i < vars.size(); ++i)
        args.push_back(wb.CreateLoad(fields[i], wb.CreateStructGEP(closure_ty, cl, i)));
      args.push_back(wrapper->getArg(1));
      args.push_back(wrapper->getArg(2));
      wb.CreateCall(body_fn, args);
      wb.CreateRetVoid();
    }

    // Emit the body in a fresh scope.
    auto saved_vars = std::move(vars_);
    auto saved_buffers = std::move(buffers_);
    llvm::Function* saved_fn = fn_;
    llvm::BasicBlock* saved_alloca = alloca_block_;
    llvm::BasicBlock* saved_block = b_.GetInsertBlock();
    llvm::Value* saved_mask = mask_;
    mask_ = nullptr;
    vars_.clear();
    buffers_.clear();
    begin_function(body_fn);
    unsigned a = 0;
    for (const std::string& name : bufs) {
      body_fn->getArg(a)->setName(name);
      buffers_[name] = {body_fn->getArg(a++), saved_buffers.at(name).elem};
    }
    for (const std::string& v : vars) {
      body_fn->getArg(a)->setName(v);
      vars_[v] = body_fn->getArg(a++);
      // A captured loop variable is an opaque parameter here: clamped to its loop's
      // range (a no-op), it tells LLVM what the serial nest knew, so that index
      // arithmetic stays provably free of overflow and the loops inside vectorize.
      if (auto it = var_max_.find(v); it != var_max_.end() && vars_[v]->getType()->isIntegerTy(32))
        vars_[v] = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, vars_[v], b_.getInt32(uint32_t(it->second)));
    }
    // The loop's minimum is an expression of captured variables: recomputed here.
    llvm::Value* loop_min = emit_index(op->min);
    // The runtime hands out sub-ranges of [0, extent); clamping to it tells LLVM so
    // (unsigned min: two instructions per chunk). Without a known range the index
    // arithmetic of the body is not provably free of overflow once widened, and LLVM
    // neither unrolls nor vectorizes loops inside that it does in a serial nest.
    llvm::Value* body_extent = emit_index(op->extent);
    llvm::Value* first = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, body_fn->getArg(a), body_extent);
    llvm::Value* last = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, body_fn->getArg(a + 1), body_extent);
    llvm::Value* begin = b_.CreateAdd(loop_min, first, "", false, true);
    llvm::Value* end = b_.CreateAdd(loop_min, last, "", false, true);
    emit_loop(op->name, begin, end, [&] { emit_stmt(op->body); });
    end_function();
    vars_ = std::move(saved_vars);
    buffers_ = std::move(saved_buffers);
    fn_ = saved_fn;
    alloca_block_ = saved_alloca;
    mask_ = saved_mask;
    b_.SetInsertPoint(saved_block);
  }
};

}  // namespace

Expected<std::unique_ptr<llvm::Module>> emit_llvm_module(const LoopNest& nest, const Stmt& body,
                                                         llvm::LLVMContext& context, const llvm::DataLayout& layout,
                                                         const EmitTarget& target) {
  auto module = std::make_unique<llvm::Module>("tensorgym_kernel", context);
  module->setDataLayout(layout);
  module->setTargetTriple(target.triple);
  Emitter emitter(context, *module, target);
  TG_RETURN_IF_ERROR(emitter.emit(nest, body));
  std::string message;
  llvm::raw_string_ostream os(message);
  if (llvm::verifyModule(*module, &os)) return internal_error("generated LLVM IR is invalid: " + os.str());
  return module;
}

}  // namespace tensorgym
