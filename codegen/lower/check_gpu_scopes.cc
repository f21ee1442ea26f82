// The cuda target, buffer by buffer: each memory scope where a GPU has it.
//
//   global  allocated by the host, outside every kernel
//   shared  one per block: inside a kernel, outside its threadIdx loops (the block's
//           threads fill it together; insert_gpu_barriers.cc separates the writes
//           from the reads), all of a kernel's within CUDA's 48 KiB of static
//           shared memory per block
//   local   private to each thread: inside a kernel
//
// A buffer without a scope is global outside the kernels and private inside them.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

#include "codegen/ir/ir_visitor.h"
#include "codegen/lower/gpu_checks.h"
#include "codegen/lower/gpu_launch.h"

namespace tensorgym {
namespace {

class ScopeChecker : public IRVisitor {
 public:
  Status status;

  void visit(const For* op) override {
    if (!status.ok()) return;
    if (!kernel_ && is_launch_loop(op)) {
      kernel_ = op;
      shared_.clear();
      shared_bytes_ = 0;
      IRVisitor::visit(op);
      kernel_ = nullptr;
      return;
    }
    const bool thread_loop = kernel_ && parse_gpu_tag(op->thread_tag).dim == GpuDim::kThread;
    if (thread_loop) {
      status = check_no_exchange_inside(op);
      if (!status.ok()) return;
      thread_loops_.push_back(op);
    }
    IRVisitor::visit(op);
    if (thread_loop) thread_loops_.pop_back();
  }

  void visit(const Allocate* op) override {
    if (!status.ok()) return;
    status = check_allocation(op);
    if (!status.ok()) return;
    if (op->scope == MemoryScope::kShared) live_shared_.push_back(op->name);
    IRVisitor::visit(op);
    if (op->scope == MemoryScope::kShared) live_shared_.pop_back();
  }

 private:
  const For* kernel_ = nullptr;           // the kernel being checked
  std::vector<const For*> thread_loops_;  // the threadIdx loops around the statement, in it
  std::vector<std::string> live_shared_;  // shared buffers allocated around the statement
  std::vector<std::string> shared_;       // the kernel's shared buffers, for the limit's message
  int64_t shared_bytes_ = 0;

  std::string kernel_text() const {
    return fmt::format("the kernel of stage {} (loop {})", stage_of_loop(kernel_->name), kernel_->name);
  }

  Status check_allocation(const Allocate* op) {
    const int64_t bytes = op->num_elements() * op->dtype.bytes();
    switch (op->scope) {
      case MemoryScope::kAuto: return Status();
      case MemoryScope::kGlobal:
        if (kernel_)
          return failed_precondition(fmt::format(
              "stage {} is in global memory, which the host allocates, but it is computed inside {}: compute_root "
              "it, or place it in shared or local memory",
              op->name, kernel_text()));
        return Status();
      case MemoryScope::kLocal:
        if (!kernel_)
          return failed_precondition(fmt::format(
              "stage {} is local (private to each GPU thread) but is computed outside every GPU kernel: compute_at "
              "it at a loop inside the kernel that reads it",
              op->name));
        return Status();
      case MemoryScope::kShared: break;
      case MemoryScope::kInpBuffer:
      case MemoryScope::kWgtBuffer:
      case MemoryScope::kAccBuffer:
        return failed_precondition(fmt::format(
            "stage {} is in the accelerator's {}; a GPU has global, shared and local memory", op->name,
            memory_scope_name(op->scope)));
    }
    if (!kernel_)
      return failed_precondition(fmt::format(
          "stage {} is in shared memory, which exists only while a block runs, but it is computed outside every GPU "
          "kernel: compute_at it at a loop of its consumer inside the blockIdx loops and outside the threadIdx loops",
          op->name));
    if (!thread_loops_.empty())
      return failed_precondition(fmt::format(
          "stage {} is in shared memory but is computed inside loop {}, bound to {}: each thread would fill a "
          "block-wide buffer on its own; compute_at it at a loop outside the threadIdx loops (the block's tile), "
          "and bind its own loops to threadIdx so the threads load it together",
          op->name, thread_loops_.back()->name, thread_loops_.back()->thread_tag));
    shared_.push_back(fmt::format("{} {}", op->name, bytes));
    shared_bytes_ += bytes;
    if (shared_bytes_ > kMaxStaticSharedBytes)
      return failed_precondition(fmt::format(
          "{} needs {} bytes of shared memory per block ({}); a block has at most {} bytes of static shared "
          "memory: make the tiles smaller (split the loop they are computed at)",
          kernel_text(), shared_bytes_, fmt::join(shared_, " + "), kMaxStaticSharedBytes));
    return Status();
  }

  // A thread loop that writes a shared buffer allocated outside it and reads what
  // other threads wrote would need a barrier inside it, where the block's threads do
  // not all arrive. The allocation rule above leaves no way to get here; this says so
  // rather than generate a race.
  Status check_no_exchange_inside(const For* loop) const {
    for (const std::string& buffer : live_shared_) {
      const BufferUse use = buffer_use(loop->body, buffer);
      if (use.writes && use.reads)
        return failed_precondition(fmt::format(
            "shared buffer {} is written and read again inside loop {}, bound to {}: its threads would need a "
            "barrier inside the loop; compute the stage that writes it at a loop outside the threadIdx loops",
            buffer, loop->name, loop->thread_tag));
    }
    return Status();
  }
};

}  // namespace

Status check_gpu_scopes(const Stmt& body) {
  ScopeChecker checker;
  checker.visit_stmt(body);
  return checker.status;
}

}  // namespace tensorgym
