// Operations of a stored value as the machine executes them: FP pipe operations,
// divides, library calls and integer work, with a * b + c contracted into one FMA.
#include "codegen/analysis/cost_model_internal.h"

namespace tensorgym {
namespace cost_model_internal {

void count_value(const Expr& e, ValueOps* o, const IsInvariant* invariant) {
  if (!e.defined()) return;
  if (invariant && !e.type().is_float() && (*invariant)(e)) return;
  switch (e.kind()) {
    case NodeKind::kAdd:
    case NodeKind::kSub: {
      const Expr& a = e.kind() == NodeKind::kAdd ? e.as<Add>()->a : e.as<Sub>()->a;
      const Expr& b = e.kind() == NodeKind::kAdd ? e.as<Add>()->b : e.as<Sub>()->b;
      if (!e.type().is_float()) {
        o->alu += 1;
        count_value(a, o, invariant);
        count_value(b, o, invariant);
        return;
      }
      // a * b + c contracts into one FMA.
      const Mul* m = a.as<Mul>() ? a.as<Mul>() : b.as<Mul>();
      o->fp += 1;
      if (m) {
        o->fma += 1;
        count_value(m->a, o, invariant);
        count_value(m->b, o, invariant);
        count_value(a.as<Mul>() ? b : a, o, invariant);
      } else {
        count_value(a, o, invariant);
        count_value(b, o, invariant);
      }
      return;
    }
// clang-format off
#define TG_ARITH(Node, float_field, int_cost)              \
  case NodeKind::k##Node: {                                \
    const Node* op = e.as<Node>();                         \
    if (op->a.type().is_float()) {                         \
      o->float_field += 1;                                 \
    } else {                                               \
      o->alu += int_cost;                                  \
    }                                                      \
    count_value(op->a, o, invariant);                      \
    count_value(op->b, o, invariant);                      \
    return;                                                \
  }
      TG_ARITH(Mul, fp, 1)
      TG_ARITH(Div, div, 4)
      TG_ARITH(Mod, div, 5)
      TG_ARITH(Min, fp, 1)
      TG_ARITH(Max, fp, 1)
      TG_ARITH(EQ, fp, 1)
      TG_ARITH(NE, fp, 1)
      TG_ARITH(LT, fp, 1)
      TG_ARITH(LE, fp, 1)
      TG_ARITH(GT, fp, 1)
      TG_ARITH(GE, fp, 1)
#undef TG_ARITH
    // clang-format on
    case NodeKind::kAnd:
      o->alu += 1;
      count_value(e.as<And>()->a, o, invariant);
      count_value(e.as<And>()->b, o, invariant);
      return;
    case NodeKind::kOr:
      o->alu += 1;
      count_value(e.as<Or>()->a, o, invariant);
      count_value(e.as<Or>()->b, o, invariant);
      return;
    case NodeKind::kNot:
      o->alu += 1;
      count_value(e.as<Not>()->a, o, invariant);
      return;
    case NodeKind::kSelect: {
      const Select* s = e.as<Select>();
      if (e.type().is_float()) {
        o->fp += 1;
      } else {
        o->alu += 1;
      }
      count_value(s->condition, o, invariant);
      count_value(s->true_value, o, invariant);
      count_value(s->false_value, o, invariant);
      return;
    }
    case NodeKind::kCast: {
      const Cast* c = e.as<Cast>();
      if (c->type.is_float() != c->value.type().is_float()) o->fp += 1;
      count_value(c->value, o, invariant);
      return;
    }
    case NodeKind::kCall: {
      const Call* c = e.as<Call>();
      switch (c->op) {
        case CallOp::kAbs: o->fp += 1; break;
        case CallOp::kSqrt: o->div += 1; break;
        default: o->calls += 1; break;
      }
      for (const Expr& a : c->args) count_value(a, o, invariant);
      return;
    }
    case NodeKind::kBroadcast: count_value(e.as<Broadcast>()->value, o, invariant); return;
    default: return;  // loads (their indices are addressing), constants, variables
  }
}

}  // namespace cost_model_internal
}  // namespace tensorgym
