#include "codegen/interp/evaluator.h"

#include <cmath>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "codegen/interp/interpreter.h"
#include "codegen/ir/ir_printer.h"

namespace tensorgym {

using scalar_semantics::Value;

namespace {

// A stage body with names resolved: variables to slots (spatial axes first, then
// reduce axes), tensor reads to tensor ids (inputs first, then stages).
struct Node {
  NodeKind kind = NodeKind::kIntImm;
  DataType type;
  DataType operand_type;  // binary / cast source / call argument type
  int a = -1, b = -1, c = -1;
  Value imm{0};
  int slot = -1;    // Variable
  int tensor = -1;  // Load
  std::vector<int> indices;
  CallOp op = CallOp::kAbs;
  const BaseExprNode* origin = nullptr;
};

struct Memo {
  bool dense = false;
  std::vector<Value> values;
  std::vector<uint8_t> known;
  std::unordered_map<int64_t, Value> sparse;

  const Value* find(int64_t flat) const {
    if (dense) return !known.empty() && known[size_t(flat)] ? &values[size_t(flat)] : nullptr;
    auto it = sparse.find(flat);
    return it == sparse.end() ? nullptr : &it->second;
  }
  void insert(int64_t flat, Value v, int64_t n) {
    if (dense) {
      if (known.empty()) {
        values.resize(size_t(n));
        known.assign(size_t(n), 0);
      }
      values[size_t(flat)] = v;
      known[size_t(flat)] = 1;
    } else {
      sparse.emplace(flat, v);
    }
  }
};

struct Tensor {
  std::string name;
  DataType dtype;
  std::vector<int64_t> shape;
  int64_t elements = 0;
  const HostBuffer* input = nullptr;  // inputs
  const StageDef* stage = nullptr;    // stages
  std::vector<Node> nodes;
  int root = -1;
  Value identity{0};
  Memo memo;
};

}  // namespace

struct ProgramEvaluator::Impl {
  Program program;
  EvaluatorOptions options;
  std::vector<Tensor> tensors;
  Status status;
  int64_t steps = 0;

  int find_tensor(std::string_view name) const {
    for (size_t i = 0; i < tensors.size(); ++i)
      if (tensors[i].name == name) return int(i);
    return -1;
  }

  Status build(std::vector<const HostBuffer*> inputs);
  Status compile_stage(Tensor& t, size_t limit);
  Status compile_expr(Tensor& t, size_t limit, const Expr& e, int* out);

  Status element(int tensor, int64_t flat, const int64_t* index, Value* out);
  // With `magnitude`, Σ|term| of a sum (+=), else |value|.
  Status compute(int tensor, const int64_t* index, Value* out, double* magnitude = nullptr);
  Status eval(const Tensor& t, int node, const int64_t* vars, Value* out);
};

namespace {

std::string index_text(const int64_t* index, size_t rank) {
  return fmt::format("[{}]", fmt::join(index, index + rank, ", "));
}

std::string shape_text(const std::vector<int64_t>& shape) { return index_text(shape.data(), shape.size()); }

bool is_vector_node(const Expr& e) {
  return e.type().is_vector() || e.kind() == NodeKind::kRamp || e.kind() == NodeKind::kBroadcast;
}

}  // namespace

Status ProgramEvaluator::Impl::build(std::vector<const HostBuffer*> inputs) {
  if (inputs.size() != program.inputs.size())
    return invalid_argument(fmt::format("expected {} inputs, got {}", program.inputs.size(), inputs.size()));
  tensors.reserve(program.inputs.size() + program.stages.size());
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const TensorInput& in = program.inputs[i];
    const HostBuffer* buf = inputs[i];
    if (!buf) return invalid_argument("input " + in.name + " is null");
    if (buf->dtype() != in.dtype || buf->shape() != in.shape)
      return invalid_argument("input " + in.name + ": expected " + in.dtype.str() + shape_text(in.shape) + ", got " +
                              buf->describe());
    Tensor t;
    t.name = in.name;
    t.dtype = in.dtype;
    t.shape = in.shape;
    t.elements = num_elements(in.shape);
    t.input = buf;
    tensors.push_back(std::move(t));
  }
  for (const StageDef& s : program.stages) {
    if (!is_supported_element_type(s.dtype))
      return unimplemented("stage " + s.name + " has type " + s.dtype.str() + ", which the evaluator does not support");
    Tensor t;
    t.name = s.name;
    t.dtype = s.dtype;
    t.shape = s.shape();
    t.elements = num_elements(t.shape);
    t.stage = &s;
    t.memo.dense = t.elements <= options.dense_memo_max_elements;
    switch (s.reduce) {
      case ReduceKind::kNone: break;
      case ReduceKind::kSum: t.identity = scalar_semantics::cast(Value{0}, DataType::i64(), s.dtype); break;
      case ReduceKind::kMax:
      case ReduceKind::kMin: {
        Expr id = s.reduce == ReduceKind::kMax ? make_lowest(s.dtype) : make_highest(s.dtype);
        if (const FloatImm* f = id.as<FloatImm>()) {
          Value v;
          v.f64 = f->value;
          t.identity = scalar_semantics::cast(v, DataType::f64(), s.dtype);
        } else {
          t.identity.i = id.as<IntImm>()->value;
        }
        break;
      }
    }
    const size_t limit = tensors.size();  // a stage reads inputs and earlier stages
    tensors.push_back(std::move(t));
    TG_RETURN_IF_ERROR(compile_stage(tensors.back(), limit));
  }
  return Status();
}

Status ProgramEvaluator::Impl::compile_stage(Tensor& t, size_t limit) {
  const StageDef& s = *t.stage;
  if (!s.body.defined()) return invalid_argument("stage " + s.name + " has no body");
  if (s.body.type() != s.dtype)
    return invalid_argument("stage " + s.name + " is " + s.dtype.str() + " but its body is " + s.body.type().str());
  TG_RETURN_IF_ERROR(compile_expr(t, limit, s.body, &t.root).with_context("stage " + s.name));
  return Status();
}

Status ProgramEvaluator::Impl::compile_expr(Tensor& t, size_t limit, const Expr& e, int* out) {
  if (is_vector_node(e)) return unimplemented("vector expression " + to_string(e));
  if (!is_supported_element_type(e.type())) return unimplemented("type " + e.type().str() + " of " + to_string(e));
  Node n;
  n.kind = e.kind();
  n.type = e.type();
  n.origin = e.get();
  auto child = [&](const Expr& c, int* slot) { return compile_expr(t, limit, c, slot); };
  auto binary = [&](const Expr& a, const Expr& b) -> Status {
    if (a.type() != b.type()) return invalid_argument("type mismatch in " + to_string(e));
    n.operand_type = a.type();
    TG_RETURN_IF_ERROR(child(a, &n.a));
    return child(b, &n.b);
  };
  const StageDef& s = *t.stage;
  switch (e.kind()) {
    case NodeKind::kIntImm: n.imm.i = scalar_semantics::wrap_int(e.as<IntImm>()->value, e.type()); break;
    case NodeKind::kFloatImm: {
      Value v;
      v.f64 = e.as<FloatImm>()->value;
      n.imm = scalar_semantics::cast(v, DataType::f64(), e.type());
      break;
    }
    case NodeKind::kVariable: {
      const std::string& name = e.as<Variable>()->name;
      for (size_t i = 0; i < s.axes.size() && n.slot < 0; ++i)
        if (s.axes[i].name == name) n.slot = int(i);
      for (size_t i = 0; i < s.reduce_axes.size() && n.slot < 0; ++i)
        if (s.reduce_axes[i].name == name) n.slot = int(s.axes.size() + i);
      if (n.slot < 0) return invalid_argument("unknown variable " + name);
      if (!e.type().is_int()) return invalid_argument("variable " + name + " must be an integer");
      break;
    }
    case NodeKind::kCast:
      n.operand_type = e.as<Cast>()->value.type();
      TG_RETURN_IF_ERROR(child(e.as<Cast>()->value, &n.a));
      break;
#define TG_EVAL_BINARY(Node_)                                           \
  case NodeKind::k##Node_:                                              \
    TG_RETURN_IF_ERROR(binary(e.as<Node_>()->a, e.as<Node_>()->b));     \
    break;
      TG_EVAL_BINARY(Add)
      TG_EVAL_BINARY(Sub)
      TG_EVAL_BINARY(Mul)
      TG_EVAL_BINARY(Div)
      TG_EVAL_BINARY(Mod)
      TG_EVAL_BINARY(Min)
      TG_EVAL_BINARY(Max)
      TG_EVAL_BINARY(EQ)
      TG_EVAL_BINARY(NE)
      TG_EVAL_BINARY(LT)
      TG_EVAL_BINARY(LE)
      TG_EVAL_BINARY(GT)
      TG_EVAL_BINARY(GE)
      TG_EVAL_BINARY(And)
      TG_EVAL_BINARY(Or)
#undef TG_EVAL_BINARY
    case NodeKind::kNot: TG_RETURN_IF_ERROR(child(e.as<Not>()->a, &n.a)); break;
    case NodeKind::kSelect: {
      const Select* sel = e.as<Select>();
      if (sel->true_value.type() != e.type() || sel->false_value.type() != e.type())
        return invalid_argument("type mismatch in " + to_string(e));
      TG_RETURN_IF_ERROR(child(sel->condition, &n.c));
      TG_RETURN_IF_ERROR(child(sel->true_value, &n.a));
      TG_RETURN_IF_ERROR(child(sel->false_value, &n.b));
      break;
    }
    case NodeKind::kLoad: {
      const Load* l = e.as<Load>();
      const int id = find_tensor(l->name);
      if (id < 0 || size_t(id) >= limit)
        return invalid_argument("reads " + l->name + ", which is not an input or an earlier stage");
      const Tensor& src = tensors[size_t(id)];
      if (src.dtype != l->type)
        return invalid_argument("reads " + l->name + " as " + l->type.str() + ", but it is " + src.dtype.str());
      if (l->indices.size() != src.shape.size())
        return invalid_argument(fmt::format("reads {} with {} indices, but it has rank {}", l->name,
                                            l->indices.size(), src.shape.size()));
      n.tensor = id;
      for (const Expr& idx : l->indices) {
        if (!idx.type().is_int()) return invalid_argument("non-integer index " + to_string(idx));
        int c;
        TG_RETURN_IF_ERROR(child(idx, &c));
        n.indices.push_back(c);
      }
      break;
    }
    case NodeKind::kCall: {
      const Call* c = e.as<Call>();
      if (c->args.size() != 1 || c->args[0].type() != e.type())
        return invalid_argument("malformed call " + to_string(e));
      if (!e.type().is_float() && c->op != CallOp::kAbs)
        return invalid_argument(std::string(call_op_name(c->op)) + " of integer type in " + to_string(e));
      n.op = c->op;
      n.operand_type = e.type();
      TG_RETURN_IF_ERROR(child(c->args[0], &n.a));
      break;
    }
    default: return unimplemented("node " + to_string(e) + " in a stage body");
  }
  t.nodes.push_back(std::move(n));
  *out = int(t.nodes.size()) - 1;
  return Status();
}

Status ProgramEvaluator::Impl::eval(const Tensor& t, int id, const int64_t* vars, Value* out) {
  const Node& n = t.nodes[size_t(id)];
  switch (n.kind) {
    case NodeKind::kIntImm:
    case NodeKind::kFloatImm: *out = n.imm; return Status();
    case NodeKind::kVariable:
      out->i = scalar_semantics::wrap_int(vars[n.slot], n.type);
      return Status();
    case NodeKind::kCast: {
      Value a;
      TG_RETURN_IF_ERROR(eval(t, n.a, vars, &a));
      *out = scalar_semantics::cast(a, n.operand_type, n.type);
      return Status();
    }
    case NodeKind::kNot: {
      Value a;
      TG_RETURN_IF_ERROR(eval(t, n.a, vars, &a));
      out->i = a.i == 0;
      return Status();
    }
    case NodeKind::kSelect: {
      Value c;
      TG_RETURN_IF_ERROR(eval(t, n.c, vars, &c));
      return eval(t, c.i != 0 ? n.a : n.b, vars, out);
    }
    case NodeKind::kCall: {
      Value a;
      TG_RETURN_IF_ERROR(eval(t, n.a, vars, &a));
      *out = scalar_semantics::call(n.op, n.type, a);
      return Status();
    }
    case NodeKind::kLoad: {
      const Tensor& src = tensors[size_t(n.tensor)];
      const size_t rank = n.indices.size();
      int64_t index[16];
      std::vector<int64_t> big;
      int64_t* idx = index;
      if (rank > 16) {
        big.resize(rank);
        idx = big.data();
      }
      int64_t flat = 0;
      bool in_bounds = true;
      for (size_t d = 0; d < rank; ++d) {
        Value v;
        TG_RETURN_IF_ERROR(eval(t, n.indices[d], vars, &v));
        idx[d] = v.i;
        if (v.i < 0 || v.i >= src.shape[d]) in_bounds = false;
        flat = flat * src.shape[d] + v.i;
      }
      if (!in_bounds)
        return invalid_argument("out of bounds read of " + src.name + " at " + index_text(idx, rank) + " (shape " +
                                shape_text(src.shape) + ") in stage " + t.name);
      return element(n.tensor, flat, idx, out);
    }
    default: {  // binary nodes
      Value a, b;
      TG_RETURN_IF_ERROR(eval(t, n.a, vars, &a));
      TG_RETURN_IF_ERROR(eval(t, n.b, vars, &b));
      if (!scalar_semantics::binary(n.kind, n.operand_type, a, b, out))
        return invalid_argument("integer division by zero in " + to_string(Expr(n.origin)) + " in stage " + t.name);
      return Status();
    }
  }
}

Status ProgramEvaluator::Impl::element(int id, int64_t flat, const int64_t* index, Value* out) {
  Tensor& t = tensors[size_t(id)];
  if (t.input) {
    const HostBuffer& b = *t.input;
    if (t.dtype.is_float()) {
      if (t.dtype.bits == 32) {
        out->f32 = b.typed<float>()[flat];
      } else {
        out->f64 = b.typed<double>()[flat];
      }
    } else {
      out->i = b.get_int(flat);
    }
    return Status();
  }
  if (const Value* v = t.memo.find(flat)) {
    *out = *v;
    return Status();
  }
  TG_RETURN_IF_ERROR(compute(id, index, out));
  t.memo.insert(flat, *out, t.elements);
  return Status();
}

Status ProgramEvaluator::Impl::compute(int id, const int64_t* index, Value* out, double* magnitude) {
  const Tensor& t = tensors[size_t(id)];
  const StageDef& s = *t.stage;
  const size_t rank = s.axes.size(), nred = s.reduce_axes.size();
  std::vector<int64_t> vars(rank + nred);
  for (size_t d = 0; d < rank; ++d) vars[d] = index[d] + s.axes[d].min;
  auto step = [&]() -> Status {
    if (++steps > options.max_steps)
      return resource_exhausted(fmt::format("evaluator step limit of {} exceeded", options.max_steps));
    return Status();
  };
  const bool sums = s.reduce == ReduceKind::kSum;
  if (magnitude) *magnitude = 0;
  if (!s.is_reduction()) {
    TG_RETURN_IF_ERROR(step());
    TG_RETURN_IF_ERROR(eval(t, t.root, vars.data(), out));
    if (magnitude) *magnitude = std::fabs(scalar_semantics::to_double(*out, s.dtype));
    return Status();
  }
  Value acc = t.identity;
  for (size_t r = 0; r < nred; ++r) {
    if (s.reduce_axes[r].extent <= 0) {
      *out = acc;
      return Status();
    }
    vars[rank + r] = s.reduce_axes[r].min;
  }
  const NodeKind combine = s.reduce == ReduceKind::kSum ? NodeKind::kAdd
                           : s.reduce == ReduceKind::kMax ? NodeKind::kMax
                                                          : NodeKind::kMin;
  for (;;) {
    TG_RETURN_IF_ERROR(step());
    Value v;
    TG_RETURN_IF_ERROR(eval(t, t.root, vars.data(), &v));
    scalar_semantics::binary(combine, s.dtype, acc, v, &acc);
    if (magnitude && sums) *magnitude += std::fabs(scalar_semantics::to_double(v, s.dtype));
    // Odometer over the reduce axes, the last one fastest.
    size_t r = nred;
    while (r > 0) {
      --r;
      const IterVar& rv = s.reduce_axes[r];
      if (++vars[rank + r] < rv.min + rv.extent) break;
      vars[rank + r] = rv.min;
      if (r == 0) {
        *out = acc;
        if (magnitude && !sums) *magnitude = std::fabs(scalar_semantics::to_double(acc, s.dtype));
        return Status();
      }
    }
  }
}

ProgramEvaluator::ProgramEvaluator(const Program& program, std::vector<const HostBuffer*> inputs,
                                   const EvaluatorOptions& options)
    : impl_(std::make_unique<Impl>()) {
  impl_->program = program;
  impl_->options = options;
  impl_->status = impl_->build(std::move(inputs));
}

ProgramEvaluator::~ProgramEvaluator() = default;

const Status& ProgramEvaluator::status() const { return impl_->status; }
const Program& ProgramEvaluator::program() const { return impl_->program; }
int64_t ProgramEvaluator::steps() const { return impl_->steps; }

Expected<double> ProgramEvaluator::value_at(std::string_view tensor, const std::vector<int64_t>& index,
                                            double* magnitude) {
  Impl& m = *impl_;
  if (!m.status.ok()) return m.status;
  const int id = m.find_tensor(tensor);
  if (id < 0) return not_found("no tensor named " + std::string(tensor));
  const Tensor& t = m.tensors[size_t(id)];
  if (index.size() != t.shape.size())
    return invalid_argument(
        fmt::format("index {} of {} needs {} entries", index_text(index.data(), index.size()), t.name, t.shape.size()));
  int64_t flat = 0;
  for (size_t d = 0; d < index.size(); ++d) {
    if (index[d] < 0 || index[d] >= t.shape[d])
      return out_of_range("index " + index_text(index.data(), index.size()) + " is outside " + t.name + " (shape " +
                          shape_text(t.shape) + ")");
    flat = flat * t.shape[d] + index[d];
  }
  Value v;
  if (magnitude && !t.input) {
    TG_RETURN_IF_ERROR(m.compute(id, index.data(), &v, magnitude));
    if (!m.tensors[size_t(id)].memo.find(flat)) m.tensors[size_t(id)].memo.insert(flat, v, t.elements);
  } else {
    TG_RETURN_IF_ERROR(m.element(id, flat, index.data(), &v));
    if (magnitude) *magnitude = std::fabs(scalar_semantics::to_double(v, t.dtype));
  }
  return scalar_semantics::to_double(v, t.dtype);
}

Expected<HostBuffer> ProgramEvaluator::evaluate(std::string_view tensor) {
  Impl& m = *impl_;
  if (!m.status.ok()) return m.status;
  const int id = m.find_tensor(tensor);
  if (id < 0) return not_found("no tensor named " + std::string(tensor));
  const Tensor& t = m.tensors[size_t(id)];
  if (t.input) return HostBuffer(*t.input);
  HostBuffer out(t.dtype, t.shape);
  std::vector<int64_t> index(t.shape.size(), 0);
  for (int64_t flat = 0; flat < t.elements; ++flat) {
    Value v;
    if (const Value* known = t.memo.find(flat)) {
      v = *known;
    } else {
      // The whole tensor is computed once here; memoizing it too would only double
      // the memory.
      TG_RETURN_IF_ERROR(m.compute(id, index.data(), &v));
    }
    if (t.dtype.is_float()) {
      if (t.dtype.bits == 32) {
        out.typed<float>()[flat] = v.f32;
      } else {
        out.typed<double>()[flat] = v.f64;
      }
    } else {
      out.set_int(flat, v.i);
    }
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < t.shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

}  // namespace tensorgym
