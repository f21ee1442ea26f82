// Storage flattening: every multi-dimensional access becomes one flat index over a
// row-major layout; storage_align pads the strides it names; each Allocate gets one
// extent, its element count.
#include <functional>
#include <unordered_map>

#include "codegen/ir/ir_mutator.h"
#include "codegen/lower/lowering_context.h"

namespace tensorgym {
namespace {

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape, const std::vector<StorageAlign>& aligns) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) {
    int64_t stride = strides[d] * shape[d];
    for (const StorageAlign& a : aligns) {
      if (size_t(a.axis) != d - 1) continue;
      // The smallest stride >= the dense one with stride % factor == offset.
      int64_t rem = stride % a.factor;
      stride += (a.offset - rem + a.factor) % a.factor;
    }
    strides[d - 1] = stride;
  }
  return strides;
}

class AllocateVisitor : public IRVisitor {
 public:
  explicit AllocateVisitor(const std::function<void(const Allocate*)>& f) : f_(f) {}
  void visit(const Allocate* op) override {
    f_(op);
    IRVisitor::visit(op);
  }

 private:
  const std::function<void(const Allocate*)>& f_;
};

void visit_stmts_allocate(const Stmt& s, const std::function<void(const Allocate*)>& f) {
  AllocateVisitor v(f);
  v.visit_stmt(s);
}

class Flattener : public IRMutator {
 public:
  Flattener(const LoweringContext& ctx, const std::vector<BufferArg>& args) : ctx_(ctx) {
    for (const BufferArg& a : args) strides_[a.name] = row_major_strides(a.shape, {});
  }

 protected:
  Expr flat_index(const std::string& name, const std::vector<Expr>& indices) {
    const std::vector<int64_t>& strides = strides_.at(name);
    Expr flat;
    for (size_t d = 0; d < indices.size(); ++d) {
      Expr term = mutate(indices[d]);
      if (strides[d] != 1) term = Mul::make(term, make_int(strides[d]));
      flat = flat.defined() ? Add::make(flat, term) : term;
    }
    return flat.defined() ? flat : make_int(0);
  }

  Expr visit(const Load* op) override { return Load::make(op->type, op->name, {flat_index(op->name, op->indices)}); }

  Stmt visit(const Store* op) override {
    return Store::make(op->name, {flat_index(op->name, op->indices)}, mutate(op->value));
  }

  Stmt visit(const Allocate* op) override {
    const StageSchedule* s = ctx_.state.find_stage(op->name);
    std::vector<int64_t> strides = row_major_strides(op->extents, s ? s->aligns : std::vector<StorageAlign>{});
    int64_t size = op->extents.empty() ? 1 : strides[0] * op->extents[0];
    strides_[op->name] = strides;
    Stmt body = mutate(op->body);
    return Allocate::make(op->name, op->dtype, {size}, body);
  }

 private:
  const LoweringContext& ctx_;
  std::unordered_map<std::string, std::vector<int64_t>> strides_;
};

}  // namespace

Status check_allocations(const Stmt& s) {
  ProgramLimits limits;
  Status status;
  visit_stmts_allocate(s, [&](const Allocate* a) {
    int64_t bytes = a->num_elements() * a->dtype.bytes();
    if (status.ok() && bytes > limits.max_tensor_bytes)
      status = resource_exhausted("local buffer " + a->name + " would take " + std::to_string(bytes) +
                                  " bytes, over the limit of " + std::to_string(limits.max_tensor_bytes) +
                                  " (storage_align padding or a large cache)");
  });
  return status;
}

Stmt storage_flatten(const Stmt& s, const LoweringContext& ctx, const std::vector<BufferArg>& args) {
  return Flattener(ctx, args).mutate(s);
}

}  // namespace tensorgym
