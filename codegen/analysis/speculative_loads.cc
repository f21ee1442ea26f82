#include "codegen/analysis/speculative_loads.h"

#include <algorithm>

#include "codegen/ir/ir_visitor.h"
#include "support/read_slack.h"

namespace tensorgym {
namespace {

// Whether the load reads an input within its slack.
bool load_within_slack(const Load& load, const std::vector<BufferArg>& inputs, const RangeScope& ranges) {
  if (load.type.is_vector() || load.indices.size() != 1) return false;
  for (const BufferArg& in : inputs) {
    if (in.name != load.name) continue;
    int64_t elements = 1;
    for (int64_t d : in.shape) elements *= d;
    const int64_t slack = kInputReadSlackBytes / std::max<int64_t>(1, in.dtype.bytes());
    const IntRange r = constant_bounds(load.indices[0], ranges);
    return r.bounded() && r.min >= -slack && r.max <= elements - 1 + slack;
  }
  return false;  // an allocation or an output: no slack promised
}

// An integer division or modulo that may trap: by anything but a nonzero constant.
template <class Node>
bool may_trap(const Node& op) {
  if (op.type.is_float()) return false;
  const IntImm* d = op.b.template as<IntImm>();
  return !d || d->value == 0;
}

}  // namespace

bool arms_evaluable_unconditionally(const Select& sel, const std::vector<BufferArg>& inputs,
                                    const RangeScope& ranges) {
  if (sel.condition.type().is_vector()) return false;
  bool ok = true;
  auto check = [&](const Expr& e) {
    if (!ok) return;
    switch (e.kind()) {
      case NodeKind::kLoad: ok = load_within_slack(*e.as<Load>(), inputs, ranges); break;
      case NodeKind::kDiv: ok = !may_trap(*e.as<Div>()); break;
      case NodeKind::kMod: ok = !may_trap(*e.as<Mod>()); break;
      default: break;
    }
  };
  visit_exprs(sel.true_value, check);
  visit_exprs(sel.false_value, check);
  return ok;
}

bool select_evaluates_both_arms(const Select& sel, bool whole_store_value, const std::vector<BufferArg>& inputs,
                                const RangeScope& ranges) {
  return !whole_store_value && arms_evaluable_unconditionally(sel, inputs, ranges);
}

}  // namespace tensorgym
