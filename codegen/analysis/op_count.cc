#include "codegen/analysis/op_count.h"

namespace tensorgym {
namespace {

class OpCounter {
 public:
  OpCounts counts;

  void count(const Expr& e) {
    if (!e.defined()) return;
    const double lanes = e.type().lanes;
    switch (e.kind()) {
#define TG_ARITH(Node)                   \
  case NodeKind::k##Node: {              \
    const Node* op = e.as<Node>();       \
    arith(op->a.type(), lanes);          \
    count(op->a);                        \
    count(op->b);                        \
    return;                              \
  }
      TG_ARITH(Add)
      TG_ARITH(Sub)
      TG_ARITH(Mul)
      TG_ARITH(Div)
      TG_ARITH(Mod)
      TG_ARITH(Min)
      TG_ARITH(Max)
      TG_ARITH(EQ)
      TG_ARITH(NE)
      TG_ARITH(LT)
      TG_ARITH(LE)
      TG_ARITH(GT)
      TG_ARITH(GE)
#undef TG_ARITH
      case NodeKind::kAnd:
        counts.int_ops += lanes;
        count(e.as<And>()->a);
        count(e.as<And>()->b);
        return;
      case NodeKind::kOr:
        counts.int_ops += lanes;
        count(e.as<Or>()->a);
        count(e.as<Or>()->b);
        return;
      case NodeKind::kNot:
        counts.int_ops += lanes;
        count(e.as<Not>()->a);
        return;
      case NodeKind::kCast: count(e.as<Cast>()->value); return;
      case NodeKind::kSelect: {
        const Select* s = e.as<Select>();
        count(s->condition);
        count(s->true_value);
        count(s->false_value);
        return;
      }
      case NodeKind::kCall: {
        const Call* c = e.as<Call>();
        if (c->op == CallOp::kAbs) {
          arith(e.type(), lanes);
        } else {
          counts.math_calls += lanes;
          counts.flops += lanes;
        }
        for (const Expr& a : c->args) count(a);
        return;
      }
      case NodeKind::kBroadcast: count(e.as<Broadcast>()->value); return;
      case NodeKind::kRamp:  // address arithmetic, like a load index
      case NodeKind::kLoad:  // indices are addressing, not computation
      default: return;
    }
  }

 private:
  void arith(DataType operand, double lanes) {
    if (operand.is_float()) {
      counts.flops += lanes;
    } else {
      counts.int_ops += lanes;
    }
  }
};

}  // namespace

OpCounts count_expr_ops(const Expr& e) {
  OpCounter c;
  c.count(e);
  return c.counts;
}

double stage_iterations(const StageDef& stage) {
  double n = 1;
  for (const IterVar& v : stage.axes) n *= double(v.extent);
  for (const IterVar& v : stage.reduce_axes) n *= double(v.extent);
  return n;
}

OpCounts count_stage_ops(const StageDef& stage) {
  OpCounts per_point = count_expr_ops(stage.body);
  if (stage.is_reduction()) {
    if (stage.dtype.is_float()) {
      per_point.flops += 1;
    } else {
      per_point.int_ops += 1;
    }
  }
  return per_point.scaled(stage_iterations(stage));
}

OpCounts count_ops(const Program& program) {
  OpCounts total;
  for (const StageDef& s : program.stages) total += count_stage_ops(s);
  return total;
}

int64_t tensor_bytes(const Program& program, std::string_view name) {
  if (!program.find_input(name) && !program.find_stage(name)) return 0;
  return num_elements(program.shape_of(name)) * program.dtype_of(name).bytes();
}

}  // namespace tensorgym
