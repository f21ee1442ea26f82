// Storage flattening: every multi-dimensional access becomes one flat index over the
// buffer's layout (row-major, or the order reorder_storage chose); storage_align pads
// the strides it names; each Allocate gets one extent, its element count.
// build_loop_nest.cc emits flat accesses directly through BufferLayouts, so the nest
// is built once instead of built and then rebuilt.
#include "codegen/lower/lowering_context.h"

namespace tensorgym {
namespace {

// Strides of a buffer stored in `order` (dimensions outermost first; empty: row-major),
// with storage_align padding. Returns the element count through *size.
std::vector<int64_t> storage_strides(const std::vector<int64_t>& shape, const std::vector<StorageAlign>& aligns,
                                     const std::vector<int>& order, int64_t* size) {
  // The dimension at position p, outermost first (no vector built for row-major).
  auto dim = [&](size_t p) { return order.empty() ? p : size_t(order[p]); };
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t p = order.empty() ? shape.size() : order.size(); p-- > 1;) {
    size_t inner = dim(p), d = dim(p - 1);
    int64_t stride = strides[inner] * shape[inner];
    for (const StorageAlign& a : aligns) {
      if (size_t(a.axis) != d) continue;
      // The smallest stride >= the dense one with stride % factor == offset.
      int64_t rem = stride % a.factor;
      stride += (a.offset - rem + a.factor) % a.factor;
    }
    strides[d] = stride;
  }
  if (size) *size = shape.empty() ? 1 : strides[dim(0)] * shape[dim(0)];
  return strides;
}

// Calls f on every Allocate in pre-order. Statements only: no expression holds one,
// so the walk skips them (it runs on every lowering).
template <class F>
void visit_allocates(const Stmt& s, F& f) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case NodeKind::kAllocate:
      f(s.as<Allocate>());
      return visit_allocates(s.as<Allocate>()->body, f);
    case NodeKind::kFor: return visit_allocates(s.as<For>()->body, f);
    case NodeKind::kLetStmt: return visit_allocates(s.as<LetStmt>()->body, f);
    case NodeKind::kIfThenElse:
      visit_allocates(s.as<IfThenElse>()->then_case, f);
      return visit_allocates(s.as<IfThenElse>()->else_case, f);
    case NodeKind::kBlock:
      for (const Stmt& x : s.as<Block>()->stmts) visit_allocates(x, f);
      return;
    default: return;
  }
}

}  // namespace

BufferLayouts::BufferLayouts(const LoweringContext& ctx, const LoopNest& nest) {
  static const std::vector<StorageAlign> kNoAligns;
  static const std::vector<int> kRowMajor;
  layouts_.reserve(nest.inputs.size() + nest.outputs.size() + ctx.stages.size());
  for (const std::vector<BufferArg>* args : {&nest.inputs, &nest.outputs})
    for (const BufferArg& a : *args) layouts_[a.name] = {storage_strides(a.shape, kNoAligns, kRowMajor, nullptr), 0};
  for (const StageSchedule* s : ctx.stages) {
    if (!LoweringContext::has_allocation(*s)) continue;
    Layout& l = layouts_[s->name()];
    l.strides = storage_strides(ctx.regions.at(s->name()).extent, s->aligns, s->storage_order, &l.size);
  }
}

Expr BufferLayouts::flat_index(const std::string& name, const std::vector<Expr>& indices) const {
  const std::vector<int64_t>& strides = layouts_.at(name).strides;
  Expr flat;
  for (size_t d = 0; d < indices.size(); ++d) {
    Expr term = indices[d];
    if (strides[d] != 1) term = Mul::make(term, make_int(strides[d]));
    flat = flat.defined() ? Add::make(flat, term) : term;
  }
  return flat.defined() ? flat : make_int(0);
}

Status check_allocations(const Stmt& s) {
  ProgramLimits limits;
  Status status;
  auto check = [&](const Allocate* a) {
    int64_t bytes = a->num_elements() * a->dtype.bytes();
    if (status.ok() && bytes > limits.max_tensor_bytes)
      status = resource_exhausted("local buffer " + a->name + " would take " + std::to_string(bytes) +
                                  " bytes, over the limit of " + std::to_string(limits.max_tensor_bytes) +
                                  " (storage_align padding or a large cache)");
  };
  visit_allocates(s, check);
  return status;
}

}  // namespace tensorgym
