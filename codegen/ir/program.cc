#include "codegen/ir/program.h"

#include <cassert>

#include "codegen/ir/ir_visitor.h"

namespace tensorgym {

const char* reduce_kind_op(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kNone: return "=";
    case ReduceKind::kSum: return "+=";
    case ReduceKind::kMax: return "max=";
    case ReduceKind::kMin: return "min=";
  }
  return "=";
}

int64_t num_elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<int64_t> StageDef::shape() const {
  std::vector<int64_t> s;
  s.reserve(axes.size());
  for (const IterVar& v : axes) s.push_back(v.extent);
  return s;
}

const TensorInput* Program::find_input(std::string_view name) const {
  for (const TensorInput& t : inputs)
    if (t.name == name) return &t;
  return nullptr;
}

const StageDef* Program::find_stage(std::string_view name) const {
  for (const StageDef& s : stages)
    if (s.name == name) return &s;
  return nullptr;
}

bool Program::is_output(std::string_view name) const {
  for (const std::string& o : outputs)
    if (o == name) return true;
  return false;
}

std::vector<int64_t> Program::shape_of(std::string_view name) const {
  if (const TensorInput* t = find_input(name)) return t->shape;
  const StageDef* s = find_stage(name);
  assert(s && "shape_of: unknown tensor");
  return s->shape();
}

DataType Program::dtype_of(std::string_view name) const {
  if (const TensorInput* t = find_input(name)) return t->dtype;
  const StageDef* s = find_stage(name);
  assert(s && "dtype_of: unknown tensor");
  return s->dtype;
}

bool expr_reads(const Expr& e, std::string_view name) {
  bool found = false;
  visit_exprs(e, [&](const Expr& n) {
    if (const Load* l = n.as<Load>()) found |= l->name == name;
  });
  return found;
}

std::vector<std::string> Program::reads_of(const StageDef& stage) const {
  std::vector<std::string> names;
  visit_exprs(stage.body, [&](const Expr& e) {
    if (const Load* l = e.as<Load>()) {
      for (const std::string& n : names)
        if (n == l->name) return;
      names.push_back(l->name);
    }
  });
  return names;
}

}  // namespace tensorgym
