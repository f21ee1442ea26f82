#include "codegen/lower/gpu_private_buffers.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "codegen/ir/ir_mutator.h"
#include "codegen/ir/ir_printer.h"
#include "codegen/ir/ir_visitor.h"
#include "codegen/ir/linear_form.h"
#include "codegen/ir/substitute.h"
#include "codegen/lower/gpu_launch.h"

namespace tensorgym {
namespace {

// One access's index as terms of the loops inside the allocation.
struct AccessTerms {
  int64_t thread_coeff[3] = {0, 0, 0};
  std::map<int64_t, int64_t> terms;  // coefficient -> extent of its loop (one loop each)
  std::vector<std::pair<int64_t, int64_t>> all;  // (|coefficient|, extent), threads included
  int64_t constant = 0;
};

class AccessCollector : public IRVisitor {
 public:
  explicit AccessCollector(const std::string& buffer) : buffer_(buffer) {}
  Status status;
  std::vector<AccessTerms> accesses;

  void visit(const For* op) override {
    const int64_t* extent = as_const_int(op->extent);
    loops_[op->name] = {parse_gpu_tag(op->thread_tag), extent ? *extent : -1};
    IRVisitor::visit(op);
    loops_.erase(op->name);
  }
  void visit(const LetStmt* op) override {
    lets_[op->name] = substitute(op->value, lets_);
    IRVisitor::visit(op);
    lets_.erase(op->name);
  }
  void visit(const Store* op) override {
    if (op->name == buffer_) add(op->indices);
    IRVisitor::visit(op);
  }
  void visit(const Load* op) override {
    if (op->name == buffer_) add(op->indices);
    IRVisitor::visit(op);
  }

 private:
  struct LoopInfo {
    GpuTag tag;
    int64_t extent;
  };
  const std::string& buffer_;
  std::unordered_map<std::string, LoopInfo> loops_;  // the loops inside the allocation
  VarMap lets_;

  void fail(const std::string& why) {
    if (status.ok()) status = failed_precondition(why);
  }

  void add(const std::vector<Expr>& indices) {
    if (!status.ok()) return;
    if (indices.size() != 1) return fail("its accesses are not flat");
    const LinearForm f = linearize(substitute(indices[0], lets_));
    AccessTerms a;
    a.constant = f.constant;
    for (const LinearTerm& t : f.terms) {
      const Variable* v = t.atom.as<Variable>();
      auto loop = v ? loops_.find(v->name) : loops_.end();
      if (loop == loops_.end() || loop->second.extent < 1)
        return fail(fmt::format("its index {} is not a sum of multiples of the loops inside its allocation",
                                to_string(indices[0])));
      const LoopInfo& info = loop->second;
      a.all.push_back({std::llabs(t.coeff), info.extent});
      if (info.tag.dim == GpuDim::kThread) {
        if (a.thread_coeff[info.tag.axis]) return fail("its index uses two loops bound to one threadIdx dimension");
        a.thread_coeff[info.tag.axis] = t.coeff;
      } else if (info.tag.dim == GpuDim::kBlock) {
        return fail(fmt::format("its index uses loop {}, bound to a blockIdx dimension", v->name));
      } else if (info.extent > 1) {
        if (t.coeff < 0 || a.terms.count(t.coeff)) return fail("its index is not a mixed-radix number of its loops");
        a.terms[t.coeff] = info.extent;
      }
    }
    // Every thread loop around it is in its index: otherwise the threads along it
    // would each write the same elements, maybe with different values.
    for (const auto& [name, info] : loops_)
      if (info.tag.dim == GpuDim::kThread && info.extent > 1 && !a.thread_coeff[info.tag.axis])
        return fail(fmt::format("its index does not use loop {}, bound to threadIdx.{}", name, char('x' + info.tag.axis)));
    // No two iterations meet on one element: each coefficient passes what the smaller
    // ones reach.
    std::sort(a.all.begin(), a.all.end());
    int64_t reach = 0;
    for (const auto& [coeff, extent] : a.all) {
      if (extent <= 1) continue;
      if (coeff <= reach) return fail("two iterations of its loops write one element");
      reach += coeff * (extent - 1);
    }
    accesses.push_back(std::move(a));
  }
};

class AccessRewriter : public IRMutator {
 public:
  AccessRewriter(const std::string& buffer, const PrivateLayout& layout) : buffer_(buffer), layout_(layout) {}

 protected:
  Stmt visit(const LetStmt* op) override {
    lets_[op->name] = substitute(op->value, lets_);
    Stmt s = IRMutator::visit(op);
    lets_.erase(op->name);
    return s;
  }
  Expr visit(const Load* op) override {
    if (op->name != buffer_) return IRMutator::visit(op);
    return Load::make(op->type, op->name, {index(op->indices[0])});
  }
  Stmt visit(const Store* op) override {
    if (op->name != buffer_) return IRMutator::visit(op);
    return Store::make(op->name, {index(op->indices[0])}, mutate(op->value));
  }

 private:
  const std::string& buffer_;
  const PrivateLayout& layout_;
  VarMap lets_;

  // The thread's own element: the loops' terms renumbered densely, the threads' gone.
  Expr index(const Expr& flat) {
    const LinearForm f = linearize(substitute(flat, lets_));
    Expr out = make_int(0);
    for (const LinearTerm& t : f.terms) {
      auto at = std::find(layout_.coeffs.begin(), layout_.coeffs.end(), t.coeff);
      if (at == layout_.coeffs.end()) continue;  // a thread's term (or a loop of extent 1)
      out = Add::make(out, Mul::make(t.atom, make_int(layout_.dense[size_t(at - layout_.coeffs.begin())])));
    }
    return out;
  }
};

}  // namespace

Expected<PrivateLayout> private_layout(const Allocate* alloc) {
  AccessCollector c(alloc->name);
  c.visit_stmt(alloc->body);
  TG_RETURN_IF_ERROR(c.status);
  PrivateLayout layout;
  std::map<int64_t, int64_t> extents;  // coefficient -> the largest extent over the accesses
  for (size_t i = 0; i < c.accesses.size(); ++i) {
    const AccessTerms& a = c.accesses[i];
    if (i == 0) {
      std::copy(std::begin(a.thread_coeff), std::end(a.thread_coeff), layout.thread_coeff);
      layout.constant = a.constant;
    }
    if (!std::equal(std::begin(a.thread_coeff), std::end(a.thread_coeff), layout.thread_coeff))
      return failed_precondition("its accesses index it by different threads");
    if (a.constant != layout.constant) return failed_precondition("its accesses are offset from each other");
    for (const auto& [coeff, extent] : a.terms) extents[coeff] = std::max(extents[coeff], extent);
  }
  if (c.accesses.size() > 1) {
    for (const AccessTerms& a : c.accesses)
      for (const auto& [coeff, extent] : extents)
        if (!a.terms.count(coeff)) return failed_precondition("its accesses index it by different loops");
  }
  for (const auto& [coeff, extent] : extents) {
    layout.coeffs.push_back(coeff);
    layout.dense.push_back(layout.elements_per_thread);
    layout.elements_per_thread *= extent;
  }
  return layout;
}

Stmt privatize_buffer(const Allocate* alloc, const PrivateLayout& layout) {
  Stmt body = AccessRewriter(alloc->name, layout).mutate(alloc->body);
  return Allocate::make(alloc->name, alloc->dtype, {layout.elements_per_thread}, body, alloc->scope);
}

}  // namespace tensorgym
