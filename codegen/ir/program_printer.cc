// The text form of a Program (the program language) and structural equality of
// programs. The text parses back to an equal program.
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "codegen/ir/ir_equality.h"
#include "codegen/ir/ir_printer.h"
#include "codegen/ir/ir_visitor.h"
#include "codegen/ir/program.h"

namespace tensorgym {
namespace {

bool equal_iter_vars(const std::vector<IterVar>& a, const std::vector<IterVar>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    // `declared` only says how the range was written; it is not part of the meaning.
    if (a[i].name != b[i].name || a[i].min != b[i].min || a[i].extent != b[i].extent) return false;
  }
  return true;
}

// Shape of an input or stage of `p`, or null when there is none.
const std::vector<int64_t>* find_shape(const Program& p, const std::string& name, std::vector<int64_t>* stage_shape) {
  if (const TensorInput* in = p.find_input(name)) return &in->shape;
  if (const StageDef* s = p.find_stage(name)) {
    *stage_shape = s->shape();
    return stage_shape;
  }
  return nullptr;
}

// Whether the parser infers exactly v's range from the body: v is used alone as an
// index and every such use is a dimension of extent v.extent (and v starts at 0).
bool range_is_inferred(const Program& p, const Expr& body, const IterVar& v) {
  if (v.min != 0) return false;
  bool used_alone = false, agrees = true;
  visit_exprs(body, [&](const Expr& e) {
    const Load* l = e.as<Load>();
    if (!l) return;
    for (size_t d = 0; d < l->indices.size(); ++d) {
      const Variable* var = l->indices[d].as<Variable>();
      if (!var || var->name != v.name) continue;
      used_alone = true;
      std::vector<int64_t> stage_shape;
      const std::vector<int64_t>* shape = find_shape(p, l->name, &stage_shape);
      if (!shape || d >= shape->size() || (*shape)[d] != v.extent) agrees = false;
    }
  });
  return used_alone && agrees;
}

// ` where v in lo..hi, ...` for the ranges written with `where`, and for any range
// the parser could not infer (stages built in code rather than parsed).
void append_where(const Program& p, const StageDef& s, const std::vector<IterVar>& vars, bool* first,
                  std::string* out) {
  for (const IterVar& v : vars) {
    if (!v.declared && range_is_inferred(p, s.body, v)) continue;
    *out += *first ? " where " : ", ";
    *first = false;
    fmt::format_to(std::back_inserter(*out), "{} in {}..{}", v.name, v.min, v.min + v.extent);
  }
}

}  // namespace

std::string Program::to_text() const {
  std::string out;
  for (const TensorInput& in : inputs) {
    fmt::format_to(std::back_inserter(out), "input {}: {}[{}]{}\n", in.name, in.dtype.str(), fmt::join(in.shape, ", "),
                   in.constant ? " const" : "");
  }
  for (const StageDef& s : stages) {
    out += s.name + "[";
    for (size_t i = 0; i < s.axes.size(); ++i) out += (i ? ", " : "") + s.axes[i].name;
    out += "] ";
    out += reduce_kind_op(s.reduce);
    out += " ";
    out += to_string(s.body);
    // Ranges that came from `where`: spatial ones first, then reduction ones (the
    // Program does not keep the order they were written in).
    bool first = true;
    append_where(*this, s, s.axes, &first, &out);
    append_where(*this, s, s.reduce_axes, &first, &out);
    out += "\n";
  }
  return out;
}

bool structural_equal(const Program& a, const Program& b) {
  if (a.inputs.size() != b.inputs.size() || a.stages.size() != b.stages.size() || a.outputs != b.outputs) return false;
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    const TensorInput& x = a.inputs[i];
    const TensorInput& y = b.inputs[i];
    if (x.name != y.name || x.dtype != y.dtype || x.shape != y.shape || x.constant != y.constant) return false;
  }
  for (size_t i = 0; i < a.stages.size(); ++i) {
    const StageDef& x = a.stages[i];
    const StageDef& y = b.stages[i];
    if (x.name != y.name || x.dtype != y.dtype || x.reduce != y.reduce) return false;
    if (!equal_iter_vars(x.axes, y.axes) || !equal_iter_vars(x.reduce_axes, y.reduce_axes)) return false;
    if (x.body.defined() != y.body.defined()) return false;
    if (x.body.defined() && !structural_equal(x.body, y.body)) return false;
  }
  return true;
}

}  // namespace tensorgym
