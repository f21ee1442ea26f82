#include "codegen/lower/gpu_launch.h"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/ir/ir_equality.h"
#include "codegen/ir/ir_visitor.h"

namespace tensorgym {

GpuTag parse_gpu_tag(std::string_view tag) {
  if (tag == "vthread") return {GpuDim::kVirtual, 0};
  GpuDim dim = GpuDim::kNone;
  if (tag.starts_with("blockIdx."))
    dim = GpuDim::kBlock;
  else if (tag.starts_with("threadIdx."))
    dim = GpuDim::kThread;
  if (dim == GpuDim::kNone || tag.size() != tag.find('.') + 2) return {};
  const char axis = tag.back();
  if (axis < 'x' || axis > 'z') return {};
  return {dim, axis - 'x'};
}

int64_t max_gpu_extent(GpuTag tag) {
  if (tag.dim == GpuDim::kThread) return tag.axis == 2 ? 64 : 1024;
  if (tag.dim == GpuDim::kBlock) return tag.axis == 0 ? (int64_t(1) << 31) - 1 : 65535;
  return INT64_MAX;
}

bool is_launch_loop(const For* loop) {
  const GpuDim dim = parse_gpu_tag(loop->thread_tag).dim;
  return dim == GpuDim::kBlock || dim == GpuDim::kThread;
}

std::string GpuLaunch::describe() const {
  return fmt::format("blocks {} x {} x {}, threads {} x {} x {}", blocks[0], blocks[1], blocks[2], threads[0],
                     threads[1], threads[2]);
}

GpuLaunch launch_of(const For* kernel) {
  struct Collector : IRVisitor {
    GpuLaunch launch;
    void visit(const For* op) override {
      const GpuTag tag = parse_gpu_tag(op->thread_tag);
      const int64_t* extent = as_const_int(op->extent);
      if (extent && tag.dim == GpuDim::kBlock) launch.blocks[tag.axis] = std::max(launch.blocks[tag.axis], *extent);
      if (extent && tag.dim == GpuDim::kThread) launch.threads[tag.axis] = std::max(launch.threads[tag.axis], *extent);
      IRVisitor::visit(op);
    }
  } c;
  c.visit(kernel);
  return c.launch;
}

void for_each_kernel(const Stmt& s, const std::function<void(const For* kernel)>& f) {
  struct Finder : IRVisitor {
    const std::function<void(const For*)>& f;
    explicit Finder(const std::function<void(const For*)>& fn) : f(fn) {}
    void visit(const For* op) override {
      if (is_launch_loop(op))
        f(op);  // its inner launch loops belong to it
      else
        IRVisitor::visit(op);
    }
  } finder(f);
  finder.visit_stmt(s);
}

namespace {
bool same_indices(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!structural_equal(a[i], b[i])) return false;
  return true;
}
}  // namespace

BufferUse buffer_use(const Stmt& s, std::string_view buffer) {
  struct Finder : IRVisitor {
    std::string_view buffer;
    BufferUse use;
    const Store* store = nullptr;  // the store whose value is being visited
    void visit(const Store* op) override {
      if (op->name != buffer) return IRVisitor::visit(op);
      use.writes = true;
      for (const Expr& i : op->indices) visit_expr(i);
      store = op;
      visit_expr(op->value);
      store = nullptr;
    }
    void visit(const Load* op) override {
      if (op->name == buffer && !(store && same_indices(op->indices, store->indices))) use.reads = true;
      IRVisitor::visit(op);
    }
  } finder;
  finder.buffer = buffer;
  finder.visit_stmt(s);
  return finder.use;
}

bool contains_launch_loop(const Stmt& s) {
  bool found = false;
  for_each_kernel(s, [&](const For*) { found = true; });
  return found;
}

bool stores_anything(const Stmt& s) {
  struct Finder : IRVisitor {
    bool found = false;
    void visit(const Store*) override { found = true; }
  } finder;
  finder.visit_stmt(s);
  return finder.found;
}

std::string_view stage_of_loop(std::string_view loop_name) {
  return loop_name.substr(0, std::min(loop_name.find('.'), loop_name.size()));
}

}  // namespace tensorgym
