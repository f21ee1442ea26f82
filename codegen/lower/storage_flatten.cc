// Storage flattening: every multi-dimensional access becomes one flat index over the
// buffer's layout (row-major, or the order reorder_storage chose); storage_align pads
// the strides it names; each Allocate gets one extent, its element count.
// build_loop_nest.cc emits flat accesses directly through BufferLayouts, so the nest
// is built once instead of built and then rebuilt.
#include <algorithm>
#include <string_view>

#include <fmt/format.h>

#include "codegen/lower/lowering_context.h"

namespace tensorgym {
namespace {

// Appends to *strides the strides of a buffer stored in `order` (dimensions outermost
// first; empty: row-major), with storage_align padding. Returns the element count.
int64_t append_storage_strides(const std::vector<int64_t>& shape, const std::vector<StorageAlign>& aligns,
                               const std::vector<int>& order, std::vector<int64_t>* strides_out) {
  size_t base = strides_out->size();
  strides_out->resize(base + shape.size(), 1);
  int64_t* strides = strides_out->data() + base;
  // The dimension at position p, outermost first (no vector built for row-major).
  auto dim = [&](size_t p) { return order.empty() ? p : size_t(order[p]); };
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
  return shape.empty() ? 1 : strides[dim(0)] * shape[dim(0)];
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
  size_t rank = 0;
  for (const std::vector<BufferArg>* args : {&nest.inputs.get(), &nest.outputs.get()})
    for (const BufferArg& a : *args) rank += a.shape.size();
  for (const StageSchedule* s : ctx.stages) rank += s->def->axes.size();
  strides_.reserve(rank);
  for (const std::vector<BufferArg>* args : {&nest.inputs.get(), &nest.outputs.get()}) {
    for (const BufferArg& a : *args) {
      layouts_.emplace(a.name, Layout{nullptr, strides_.size(), a.shape.size(), 0});
      append_storage_strides(a.shape, kNoAligns, kRowMajor, &strides_);
    }
  }
  for (const StageSchedule* s : ctx.stages) {
    Layout& l = layouts_.emplace(s->name(), Layout{}).first->second;  // an output's exists
    l.region = &ctx.regions.at(s->name());
    if (!LoweringContext::has_allocation(*s)) continue;  // an output: its argument's layout
    l.first_stride = strides_.size();
    l.rank = l.region->extent.size();
    l.size = append_storage_strides(l.region->extent, s->aligns, s->storage_order, &strides_);
  }
}

Expr BufferLayouts::flat_index(const Layout& layout, const std::vector<Expr>& indices) const {
  const int64_t* strides = strides_.data() + layout.first_stride;
  Expr flat;
  for (size_t d = 0; d < indices.size(); ++d) {
    Expr term = indices[d];
    if (strides[d] != 1) term = Mul::make(term, make_int(strides[d]));
    flat = flat.defined() ? Add::make(flat, term) : term;
  }
  return flat.defined() ? flat : make_int(0);
}

Status check_allocations(const Stmt& s, const LoopNest& nest) {
  const ProgramLimits limits;
  struct Buffer {
    const char* kind;
    std::string_view name;
    int64_t bytes;
  };
  std::vector<Buffer> buffers;
  for (const BufferArg& a : nest.inputs) buffers.push_back({"input", a.name, num_elements(a.shape) * a.dtype.bytes()});
  for (const BufferArg& a : nest.outputs)
    buffers.push_back({"output", a.name, num_elements(a.shape) * a.dtype.bytes()});
  Status status;
  auto check = [&](const Allocate* a) {
    const int64_t bytes = a->num_elements() * a->dtype.bytes();
    if (status.ok() && bytes > limits.max_tensor_bytes)
      status = resource_exhausted(
          fmt::format("local buffer {} would take {} bytes, over the limit of {} (storage_align padding or a large cache)",
                      a->name, bytes, limits.max_tensor_bytes));
    buffers.push_back({"allocated", a->name, bytes});
  };
  visit_allocates(s, check);
  TG_RETURN_IF_ERROR(status);
  // Each buffer counts once, whether its Allocate sits at the root or in a loop.
  int64_t total = 0;
  for (const Buffer& b : buffers) total += b.bytes;  // each is under 2^30, and there are few
  if (total <= limits.max_total_bytes) return Status();
  std::sort(buffers.begin(), buffers.end(), [](const Buffer& a, const Buffer& b) { return a.bytes > b.bytes; });
  std::string biggest;
  for (size_t i = 0; i < buffers.size() && i < 4; ++i)
    fmt::format_to(std::back_inserter(biggest), "{}{} ({}, {} bytes)", i ? ", " : "", buffers[i].name, buffers[i].kind,
                   buffers[i].bytes);
  return resource_exhausted(fmt::format(
      "the lowered program's {} buffers take {} bytes together, over the limit of {} bytes (max_total_bytes); the biggest: {}",
      buffers.size(), total, limits.max_total_bytes, biggest));
}

}  // namespace tensorgym
