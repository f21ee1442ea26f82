// The cuda target, loop by loop: what a GPU cannot run as written. A parallel loop has
// no CPU threads to run on; a vectorized loop becomes one vector access per thread, so
// nothing may be inside it; a bound loop is one dimension of a launch, so its extent
// is a constant, a dimension is not bound twice along one path, and blocks hold
// threads, never the other way round.
#include <fmt/format.h>

#include <vector>

#include "codegen/ir/ir_visitor.h"
#include "codegen/lower/gpu_checks.h"
#include "codegen/lower/gpu_launch.h"

namespace tensorgym {
namespace {

class LoopChecker : public IRVisitor {
 public:
  Status status;

  void visit(const For* op) override {
    if (!status.ok()) return;
    status = check(op);
    if (!status.ok()) return;
    if (op->kind == ForKind::kVectorized) vectorized_.push_back(op);
    if (!op->thread_tag.empty()) bound_.push_back(op);
    IRVisitor::visit(op);
    if (!op->thread_tag.empty()) bound_.pop_back();
    if (op->kind == ForKind::kVectorized) vectorized_.pop_back();
  }

 private:
  Status check(const For* op) const {
    if (op->kind == ForKind::kParallel)
      return failed_precondition(fmt::format(
          "loop {} is parallel; the cuda target has no CPU threads to run it on: bind it to blockIdx/threadIdx "
          "instead",
          op->name));
    if (!vectorized_.empty())
      return failed_precondition(fmt::format(
          "loop {} is inside vectorized loop {}; on the cuda target a vectorized loop must be innermost (it becomes "
          "one vector access per thread)",
          op->name, vectorized_.back()->name));
    if (op->thread_tag.empty()) return Status();

    const GpuTag tag = parse_gpu_tag(op->thread_tag);
    if (tag.dim == GpuDim::kNone)
      return failed_precondition(fmt::format("loop {} is bound to unknown tag '{}'", op->name, op->thread_tag));
    const int64_t* extent = as_const_int(op->extent);
    if (!extent)
      return failed_precondition(
          fmt::format("loop {} is bound to {} but its extent is not a constant; a launch dimension needs a fixed size",
                      op->name, op->thread_tag));
    for (const For* outer : bound_) {
      if (outer->thread_tag == op->thread_tag && tag.dim != GpuDim::kVirtual)
        return failed_precondition(fmt::format(
            "loop {} is bound to {} inside loop {}, already bound to {}: one launch dimension cannot index two nested "
            "loops; bind one of them to another tag",
            op->name, op->thread_tag, outer->name, outer->thread_tag));
      if (tag.dim == GpuDim::kBlock && parse_gpu_tag(outer->thread_tag).dim == GpuDim::kThread)
        return failed_precondition(fmt::format(
            "loop {} is bound to {} inside loop {}, bound to {}: blocks hold threads, so blockIdx loops go outside "
            "threadIdx loops (reorder them)",
            op->name, op->thread_tag, outer->name, outer->thread_tag));
    }
    return Status();
  }

  std::vector<const For*> vectorized_;  // enclosing vectorized loops
  std::vector<const For*> bound_;       // enclosing bound loops, outermost first
};

}  // namespace

Status check_gpu_loops(const Stmt& body) {
  LoopChecker checker;
  checker.visit_stmt(body);
  return checker.status;
}

}  // namespace tensorgym
