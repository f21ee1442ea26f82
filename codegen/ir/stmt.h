// Statement nodes of the lowered loop nest. `Stmt` is the handle.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/ir/expr.h"

namespace tensorgym {

struct BaseStmtNode : IRNode {
  explicit BaseStmtNode(NodeKind k) : IRNode(k) {}
};

class Stmt {
 public:
  Stmt() = default;
  Stmt(const BaseStmtNode* n) : ptr_(n) {}  // NOLINT(google-explicit-constructor)

  bool defined() const { return bool(ptr_); }
  const BaseStmtNode* get() const { return ptr_.get(); }
  const BaseStmtNode* operator->() const { return ptr_.get(); }
  NodeKind kind() const { return ptr_->kind; }
  bool same_as(const Stmt& o) const { return ptr_.same_as(o.ptr_); }

  template <class T>
  const T* as() const {
    return ptr_ && ptr_->kind == T::kKind ? static_cast<const T*>(ptr_.get()) : nullptr;
  }

 private:
  IntrusivePtr<const BaseStmtNode> ptr_;
};

template <NodeKind K>
struct StmtNode : BaseStmtNode {
  static constexpr NodeKind kKind = K;
  StmtNode() : BaseStmtNode(K) {}
};

// `name` = value within body.
struct LetStmt : StmtNode<NodeKind::kLetStmt> {
  LetStmt(std::string n, Expr v, Stmt b) : name(std::move(n)), value(std::move(v)), body(std::move(b)) {}
  const std::string name;
  const Expr value;
  const Stmt body;
  static Stmt make(std::string name, Expr value, Stmt body);
};

enum class ForKind : uint8_t { kSerial, kParallel, kVectorized, kUnrolled };
const char* for_kind_name(ForKind kind);

// for name in [min, min + extent): body. The loop variable is i32.
struct For : StmtNode<NodeKind::kFor> {
  For(std::string n, Expr m, Expr e, ForKind k, Stmt b, std::string t)
      : name(std::move(n)),
        min(std::move(m)),
        extent(std::move(e)),
        kind(k),
        body(std::move(b)),
        thread_tag(std::move(t)) {}
  const std::string name;
  const Expr min, extent;
  const ForKind kind;
  const Stmt body;
  // The GPU dimension the loop is bound to (bind(): "blockIdx.x", "threadIdx.y",
  // "vthread"); empty for a loop the code runs itself. A bound loop is serial: its
  // iterations are the GPU's blocks or threads, and anything that runs it as an
  // ordinary loop (the interpreter) computes the same result.
  const std::string thread_tag;
  static Stmt make(std::string name, Expr min, Expr extent, ForKind kind, Stmt body, std::string thread_tag = {});
};

// name[indices] = value (one index per dimension, or one flat index after flattening).
struct Store : StmtNode<NodeKind::kStore> {
  Store(std::string n, std::vector<Expr> idx, Expr v)
      : name(std::move(n)), indices(std::move(idx)), value(std::move(v)) {}
  const std::string name;
  const std::vector<Expr> indices;
  const Expr value;
  static Stmt make(std::string name, std::vector<Expr> indices, Expr value);
};

// Where a buffer lives (set_scope, cache_read/cache_write's scope argument). On a GPU:
// global, shared (per block) or local (per thread); kAuto: where it is allocated
// decides (outside every kernel: global memory; inside one: private to each thread).
// On the accelerator (codegen/fpga): its on-chip input, weight and accumulator buffers.
// The cpu has one memory and accepts only kAuto.
enum class MemoryScope : uint8_t { kAuto, kGlobal, kShared, kLocal, kInpBuffer, kWgtBuffer, kAccBuffer };
// "auto", "global", "shared", "local", "inp_buffer", "wgt_buffer", "acc_buffer"
const char* memory_scope_name(MemoryScope scope);

// A buffer of `dtype` with constant `extents` (one per dimension; one total after
// flattening), live within body, in `scope`.
struct Allocate : StmtNode<NodeKind::kAllocate> {
  Allocate(std::string n, DataType t, std::vector<int64_t> e, Stmt b, MemoryScope s)
      : name(std::move(n)), dtype(t), extents(std::move(e)), body(std::move(b)), scope(s) {}
  const std::string name;
  const DataType dtype;
  const std::vector<int64_t> extents;
  const Stmt body;
  const MemoryScope scope;
  int64_t num_elements() const;
  static Stmt make(std::string name, DataType dtype, std::vector<int64_t> extents, Stmt body,
                   MemoryScope scope = MemoryScope::kAuto);
  // The same allocation around another body.
  Stmt with_body(Stmt body) const { return make(name, dtype, extents, std::move(body), scope); }
};

struct IfThenElse : StmtNode<NodeKind::kIfThenElse> {
  IfThenElse(Expr c, Stmt t, Stmt e) : condition(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  const Expr condition;
  const Stmt then_case, else_case;  // else_case may be undefined
  static Stmt make(Expr condition, Stmt then_case, Stmt else_case = Stmt());
};

// Statements run in order.
struct Block : StmtNode<NodeKind::kBlock> {
  explicit Block(std::vector<Stmt> s) : stmts(std::move(s)) {}
  const std::vector<Stmt> stmts;
  // Flattens nested blocks and drops undefined statements; returns the lone statement
  // when only one is left.
  static Stmt make(std::vector<Stmt> stmts);
};

// A GPU block's barrier (__syncthreads): every thread of the block waits here until
// all have arrived, and then sees the shared-memory writes made before it. Lowering
// for cuda places it (insert_gpu_barriers.cc) only outside every threadIdx loop, so
// the block's threads reach it together and a run of the nest that runs thread loops
// one after the other (the interpreter) computes what the GPU computes.
struct Barrier : StmtNode<NodeKind::kBarrier> {
  static Stmt make();
};

}  // namespace tensorgym
