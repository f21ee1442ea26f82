// The cuda target, store by store: no two GPU threads write one element.
//
// A buffer allocated inside a kernel and not in shared memory is private to each
// thread, so every thread computes all of it; a stage whose loops inside the
// allocation are bound to blockIdx/threadIdx would have each thread fill only its
// slice of its own copy, and is rejected. Every other buffer (outputs, buffers
// allocated outside the kernels) is shared by all threads: a store to it inside a
// kernel must, for every dimension the kernel launches more than once, sit inside a
// loop bound to that dimension whose variable the index uses. Otherwise the threads
// along that dimension write the same elements: a reduction across threads (bind()
// refuses reduction loops, this catches any other way to get there) or redundant
// racing writes. A shared-memory buffer is shared by the threads of one block: the
// same rule, for the threadIdx dimensions only.
#include <fmt/format.h>

#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/ir/ir_visitor.h"
#include "codegen/lower/gpu_checks.h"
#include "codegen/lower/gpu_launch.h"
#include "codegen/lower/gpu_private_buffers.h"

namespace tensorgym {
namespace {

using VarSet = std::set<std::string>;

class StoreChecker : public IRVisitor {
 public:
  Status status;

  void visit(const For* op) override {
    if (!status.ok()) return;
    const bool starts_kernel = loops_.empty() && is_launch_loop(op);
    if (starts_kernel) launch_ = launch_of(op);
    if (starts_kernel || !loops_.empty()) loops_.push_back(op);
    IRVisitor::visit(op);
    if (!loops_.empty() && loops_.back() == op) loops_.pop_back();
  }
  void visit(const Allocate* op) override {
    if (!status.ok()) return;
    // Inside a kernel: private to each thread, allocated under the first loops_.size()
    // loops; or one per block.
    const bool per_block = op->scope == MemoryScope::kShared;
    if (!loops_.empty() && !per_block) private_[op->name] = {loops_.size(), op};
    if (per_block) per_block_.insert(op->name);
    IRVisitor::visit(op);
    private_.erase(op->name);
    per_block_.erase(op->name);
  }
  void visit(const LetStmt* op) override {
    if (!status.ok()) return;
    lets_[op->name] = vars_of(op->value);
    IRVisitor::visit(op);
    lets_.erase(op->name);
  }
  void visit(const Store* op) override {
    if (!status.ok() || loops_.empty()) return;
    if (auto it = private_.find(op->name); it != private_.end()) {
      status = check_private(op, it->second.first, it->second.second);
      return;
    }
    status = check_shared(op, per_block_.count(op->name) > 0);
  }

 private:
  // The variables an expression depends on, through the lets around it.
  VarSet vars_of(const Expr& e) const {
    VarSet vars;
    visit_exprs(e, [&](const Expr& x) {
      if (const Variable* v = x.as<Variable>()) {
        if (auto it = lets_.find(v->name); it != lets_.end())
          vars.insert(it->second.begin(), it->second.end());
        else
          vars.insert(v->name);
      }
    });
    return vars;
  }

  // A thread's own part of a buffer allocated outside its thread loops is kept by that
  // thread where the accesses allow it (gpu_private_buffers.h).
  Status check_private(const Store* op, size_t allocated_under, const Allocate* alloc) const {
    for (size_t i = allocated_under; i < loops_.size(); ++i) {
      const For* loop = loops_[i];
      const int64_t* extent = as_const_int(loop->extent);
      if (!is_launch_loop(loop) || (extent && *extent <= 1)) continue;
      std::string why;
      if (parse_gpu_tag(loop->thread_tag).dim == GpuDim::kThread) {
        Expected<PrivateLayout> layout = private_layout(alloc);
        if (layout.ok()) return Status();
        why = " (" + layout.status().message() + ")";
      }
      return failed_precondition(fmt::format(
          "stage {} is split across GPU threads (loop {} is bound to {}) but its buffer is allocated inside the "
          "kernel, outside that loop, so each thread has a private copy it would fill only in part, and its threads' "
          "parts cannot be told apart{}; threads sharing a buffer need it in shared memory (set_scope(STAGE, shared), "
          "computed outside the threadIdx loops): place it there, leave the stage's loops unbound or compute it at "
          "root",
          op->name, loop->name, loop->thread_tag, why));
    }
    return Status();
  }

  // `per_block`: the buffer is one block's, shared by its threads only.
  Status check_shared(const Store* op, bool per_block) const {
    VarSet index_vars;
    for (const Expr& index : op->indices) {
      VarSet v = vars_of(index);
      index_vars.insert(v.begin(), v.end());
    }
    bool accumulates = false;
    visit_exprs(op->value, [&](const Expr& x) {
      if (const Load* load = x.as<Load>(); load && load->name == op->name) accumulates = true;
    });
    for (GpuDim dim : {GpuDim::kBlock, GpuDim::kThread}) {
      if (per_block && dim == GpuDim::kBlock) continue;
      for (int axis = 0; axis < 3; ++axis) {
        const GpuTag tag{dim, axis};
        if (launch_.extent(tag) <= 1) continue;
        const For* bound = nullptr;
        for (const For* loop : loops_) {
          const GpuTag t = parse_gpu_tag(loop->thread_tag);
          if (t.dim == tag.dim && t.axis == tag.axis) bound = loop;
        }
        if (bound && index_vars.count(bound->name)) continue;
        const std::string tag_name =
            fmt::format("{}.{}", dim == GpuDim::kBlock ? "blockIdx" : "threadIdx", char('x' + axis));
        const std::string where =
            bound ? fmt::format("its index does not depend on loop {}, bound to {}", bound->name, tag_name)
                  : fmt::format("it is inside no loop bound to {}, which the kernel launches {} times", tag_name,
                                launch_.extent(tag));
        if (accumulates)
          return failed_precondition(fmt::format(
              "stage {} accumulates into one element from several GPU threads ({}): a reduction across threads "
              "would race; keep reduction loops unbound (inside the thread loops) or rfactor the reduction first",
              op->name, where));
        return failed_precondition(fmt::format(
            "every GPU thread along {} writes the same elements of {} ({}): the writes would race; bind one of "
            "stage {}'s own loops to {}",
            tag_name, op->name, where, op->name, tag_name));
      }
    }
    return Status();
  }

  std::vector<const For*> loops_;                    // the enclosing loops of the current kernel, from its first
  GpuLaunch launch_;                                 // of the current kernel
  // buffer -> the loops around its Allocate, and the Allocate
  std::unordered_map<std::string, std::pair<size_t, const Allocate*>> private_;
  std::set<std::string> per_block_;                  // shared-memory buffers
  std::unordered_map<std::string, VarSet> lets_;     // let -> the variables its value depends on
};

}  // namespace

Status check_gpu_stores(const Stmt& body) {
  StoreChecker checker;
  checker.visit_stmt(body);
  return checker.status;
}

}  // namespace tensorgym
