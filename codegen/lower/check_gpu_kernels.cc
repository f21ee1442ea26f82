// The cuda target, kernel by kernel. A kernel is a nest whose outermost loop is bound
// to blockIdx or threadIdx (gpu_launch.h); its launch must fit CUDA's limits. Work in
// a loop outside every kernel would run as a kernel of one thread: TVM rejects it
// ("did you forget to bind?"), and so does this pass. A lone statement outside any
// loop (a scalar) is such a kernel, and allowed: there is nothing to bind.
#include <fmt/format.h>

#include <vector>

#include "codegen/ir/ir_visitor.h"
#include "codegen/lower/gpu_checks.h"
#include "codegen/lower/gpu_launch.h"

namespace tensorgym {
namespace {

constexpr std::string_view kAxes[] = {"x", "y", "z"};

Status check_launch(const For* kernel) {
  const GpuLaunch launch = launch_of(kernel);
  const std::string_view stage = stage_of_loop(kernel->name);
  for (int axis = 0; axis < 3; ++axis) {
    for (GpuDim dim : {GpuDim::kBlock, GpuDim::kThread}) {
      const GpuTag tag{dim, axis};
      if (launch.extent(tag) > max_gpu_extent(tag))
        return failed_precondition(fmt::format(
            "the kernel of stage {} (loop {}) launches {} {} along {}{}; CUDA allows at most {}: split the loop "
            "bound to it",
            stage, kernel->name, launch.extent(tag), dim == GpuDim::kBlock ? "blocks" : "threads",
            dim == GpuDim::kBlock ? "blockIdx." : "threadIdx.", kAxes[axis], max_gpu_extent(tag)));
    }
  }
  if (launch.threads_per_block() > kMaxThreadsPerBlock)
    return failed_precondition(fmt::format(
        "the kernel of stage {} (loop {}) has {} threads per block (threadIdx.x {} x .y {} x .z {}); a block has at "
        "most {}: make the loops bound to threadIdx smaller (split them, bind the outer part to blockIdx)",
        stage, kernel->name, launch.threads_per_block(), launch.threads[0], launch.threads[1], launch.threads[2],
        kMaxThreadsPerBlock));
  return Status();
}

// Finds stores inside loops but outside every kernel.
class HostWorkFinder : public IRVisitor {
 public:
  Status status;

  void visit(const For* op) override {
    if (!status.ok() || is_launch_loop(op)) return;  // a kernel: its stores run on the device
    loops_.push_back(op);
    IRVisitor::visit(op);
    loops_.pop_back();
  }
  void visit(const Store* op) override {
    if (!status.ok() || loops_.empty()) return;
    std::string names;
    for (const For* l : loops_) names += (names.empty() ? "" : ", ") + l->name;
    status = failed_precondition(fmt::format(
        "stage {} runs outside any GPU kernel: none of the loops around its store ({}) is bound to blockIdx or "
        "threadIdx, so it would run on a single GPU thread; bind it: split a loop and bind the outer part to "
        "blockIdx.x and the inner part to threadIdx.x",
        op->name, names));
  }

 private:
  std::vector<const For*> loops_;  // enclosing loops, none bound
};

}  // namespace

Status check_gpu_launches(const Stmt& body) {
  Status status;
  for_each_kernel(body, [&](const For* kernel) {
    if (status.ok()) status = check_launch(kernel);
  });
  return status;
}

Status check_gpu_kernels(const Stmt& body) {
  TG_RETURN_IF_ERROR(check_gpu_launches(body));
  HostWorkFinder finder;
  finder.visit_stmt(body);
  return finder.status;
}

}  // namespace tensorgym
