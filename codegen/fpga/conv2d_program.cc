#include "codegen/fpga/conv2d_program.h"

#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/ir/ir_printer.h"
#include "codegen/ir/linear_form.h"

namespace tensorgym::fpga {
namespace {

Status cannot(const StageDef& stage, std::string_view why) {
  return failed_precondition(fmt::format("conv2d on the accelerator: stage {} (line {}): {}", stage.name,
                                         stage.loc.line, why));
}

const Variable* as_var(const Expr& e) { return e.as<Variable>(); }

bool is_var(const Expr& e, std::string_view name) {
  const Variable* v = as_var(e);
  return v && v->name == name;
}

// A read of `tensor` at exactly the stage's axes, in order: C[n, k, y, x, b, o].
bool reads_at_axes(const Expr& e, const StageDef& stage, std::string_view tensor) {
  const Load* load = e.as<Load>();
  if (!load || load->name != tensor || load->indices.size() != stage.axes.size()) return false;
  for (size_t d = 0; d < stage.axes.size(); ++d)
    if (!is_var(load->indices[d], stage.axes[d].name)) return false;
  return true;
}

// `index` as coeff * var + other (+ constant): the variable `var`'s coefficient, the
// one other variable with coefficient 1 (empty when none) and the constant; nothing
// when it is not of that form.
struct AffineIndex {
  int64_t coeff = 0;
  std::string other;
  int64_t constant = 0;
};
std::optional<AffineIndex> affine_in(const Expr& index, std::string_view var) {
  LinearForm f = linearize(index);
  AffineIndex a;
  a.constant = f.constant;
  for (const LinearTerm& t : f.terms) {
    const Variable* v = as_var(t.atom);
    if (!v) return std::nullopt;
    if (v->name == var) {
      a.coeff = t.coeff;
    } else if (t.coeff == 1 && a.other.empty()) {
      a.other = v->name;
    } else {
      return std::nullopt;
    }
  }
  return a;
}

bool is_reduce_var(const StageDef& stage, const std::string& name) {
  for (const IterVar& v : stage.reduce_axes)
    if (v.name == name) return v.min == 0;
  return false;
}

// The int8 tensor an operand `i32(T[...])` reads.
Expected<const Load*> int8_operand(const StageDef& stage, const Expr& operand) {
  const Cast* cast = operand.as<Cast>();
  const Load* load = (cast ? cast->value : operand).as<Load>();
  if (!load)
    return cannot(stage, fmt::format("the product's operand {} is not a tensor read", to_string(operand)));
  if (load->type != DataType::i8())
    return cannot(stage, fmt::format("{} is {}; the GEMM core multiplies int8", load->name, load->type.str()));
  return load;
}

struct ConvRead {
  std::string input, weights;  // the tensors the product reads
  int64_t stride = 1;
};

// C[n, k, y, x, b, o] += i32(A[n, c, y * stride + r, x * stride + s, b, i]) * i32(W[k, c, r, s, o, i]).
Expected<ConvRead> read_conv(const StageDef& conv) {
  const char* form =
      "a sum of i32(A[n, c, y * stride + r, x * stride + s, b, i]) * i32(W[k, c, r, s, o, i]) over "
      "[n, k, y, x, b, o]";
  if (conv.reduce != ReduceKind::kSum || conv.dtype != DataType::i32() || conv.axes.size() != 6 ||
      conv.reduce_axes.size() != 4)
    return cannot(conv, fmt::format("not an i32 sum of six axes over four reduction variables: {}", form));
  const Mul* mul = conv.body.as<Mul>();
  if (!mul) return cannot(conv, fmt::format("the body is not a product: {}", form));
  TG_ASSIGN_OR_RETURN(const Load* a, int8_operand(conv, mul->a));
  TG_ASSIGN_OR_RETURN(const Load* w, int8_operand(conv, mul->b));
  if (a->indices.size() != 6 || w->indices.size() != 6)
    return cannot(conv, fmt::format("{} and {} are not both 6-D (blocked layouts): {}", a->name, w->name, form));
  auto axis = [&](int d) { return conv.axes[size_t(d)].name; };
  const Variable* c = as_var(a->indices[1]);
  const Variable* i = as_var(a->indices[5]);
  const Variable* r = as_var(w->indices[2]);
  const Variable* s = as_var(w->indices[3]);
  bool ok = c && i && r && s && is_reduce_var(conv, c->name) && is_reduce_var(conv, i->name) &&
            is_reduce_var(conv, r->name) && is_reduce_var(conv, s->name);
  ok = ok && is_var(a->indices[0], axis(0)) && is_var(a->indices[4], axis(4));
  ok = ok && is_var(w->indices[0], axis(1)) && is_var(w->indices[1], c->name) && is_var(w->indices[4], axis(5)) &&
       is_var(w->indices[5], i->name);
  std::optional<AffineIndex> row = ok ? affine_in(a->indices[2], axis(2)) : std::nullopt;
  std::optional<AffineIndex> col = ok ? affine_in(a->indices[3], axis(3)) : std::nullopt;
  if (!row || !col || row->other != r->name || col->other != s->name || row->constant != 0 || col->constant != 0 ||
      row->coeff < 1 || col->coeff < 1)
    return cannot(conv, fmt::format("reads {} and {}; the accelerator's conv is {}", to_string(mul->a),
                                    to_string(mul->b), form));
  if (row->coeff != col->coeff)
    return cannot(conv, fmt::format("strides {} (rows) and {} (columns) differ; the accelerator has one", row->coeff,
                                    col->coeff));
  return ConvRead{a->name, w->name, row->coeff};
}

// The range [lo, hi] a conjunction of `var OP constant` bounds keeps each of two variables in.
struct Bounds {
  int64_t lo = INT64_MIN, hi = INT64_MAX;
};
bool collect_bounds(const Expr& cond, std::string_view v0, std::string_view v1, Bounds* b0, Bounds* b1) {
  if (const And* a = cond.as<And>())
    return collect_bounds(a->a, v0, v1, b0, b1) && collect_bounds(a->b, v0, v1, b0, b1);
  const Expr *lhs = nullptr, *rhs = nullptr;
  NodeKind kind = cond.kind();
  switch (kind) {
    case NodeKind::kGE: lhs = &cond.as<GE>()->a, rhs = &cond.as<GE>()->b; break;
    case NodeKind::kGT: lhs = &cond.as<GT>()->a, rhs = &cond.as<GT>()->b; break;
    case NodeKind::kLE: lhs = &cond.as<LE>()->a, rhs = &cond.as<LE>()->b; break;
    case NodeKind::kLT: lhs = &cond.as<LT>()->a, rhs = &cond.as<LT>()->b; break;
    default: return false;
  }
  const Variable* v = as_var(*lhs);
  const int64_t* k = as_const_int(*rhs);
  if (!v || !k) return false;
  Bounds* b = v->name == v0 ? b0 : v->name == v1 ? b1 : nullptr;
  if (!b) return false;
  if (kind == NodeKind::kGE) b->lo = std::max(b->lo, *k);
  if (kind == NodeKind::kGT) b->lo = std::max(b->lo, *k + 1);
  if (kind == NodeKind::kLE) b->hi = std::min(b->hi, *k);
  if (kind == NodeKind::kLT) b->hi = std::min(b->hi, *k - 1);
  return true;
}

// P[n, c, h, w, b, i] = select(h, w inside the image, X[n, c, h - pad, w - pad, b, i], 0):
// the input it pads and the padding.
struct Padding {
  std::string input;
  int64_t pad = 0;
};
Expected<Padding> read_padding(const Program& program, const StageDef& p) {
  const char* form = "P[n, c, h, w, b, i] = select(h >= pad && h <= H + pad - 1 && w >= pad && w <= W + pad - 1, "
                     "X[n, c, h - pad, w - pad, b, i], 0)";
  const Select* sel = p.body.as<Select>();
  const Load* x = sel ? sel->true_value.as<Load>() : nullptr;
  if (p.is_reduction() || p.axes.size() != 6 || !x || x->indices.size() != 6 || !program.find_input(x->name) ||
      !is_const(sel->false_value, 0))
    return cannot(p, fmt::format("the stage the conv reads is not a zero padding of an input: {}", form));
  auto axis = [&](int d) { return p.axes[size_t(d)].name; };
  std::optional<AffineIndex> row = affine_in(x->indices[2], axis(2));
  std::optional<AffineIndex> col = affine_in(x->indices[3], axis(3));
  bool ok = row && col && row->coeff == 1 && col->coeff == 1 && row->other.empty() && col->other.empty();
  for (int d : {0, 1, 4, 5}) ok = ok && is_var(x->indices[size_t(d)], axis(d));
  if (!ok) return cannot(p, fmt::format("reads {}; a padding stage is {}", to_string(sel->true_value), form));
  const int64_t top = -row->constant, left = -col->constant;
  const std::vector<int64_t> in = program.shape_of(x->name), out = p.shape();
  const int64_t bottom = out[2] - in[2] - top, right = out[3] - in[3] - left;
  if (top != left || top != bottom || left != right)
    return cannot(p, fmt::format("pads {} rows above, {} below, {} columns left, {} right; the accelerator pads "
                                 "all four sides alike",
                                 top, bottom, left, right));
  Bounds rows, cols;
  if (!collect_bounds(sel->condition, axis(2), axis(3), &rows, &cols) || rows.lo != top ||
      rows.hi != top + in[2] - 1 || cols.lo != left || cols.hi != left + in[3] - 1)
    return cannot(p, fmt::format("the condition {} is not {} in {}..{} and {} in {}..{} (the image)",
                                 to_string(sel->condition), axis(2), top, top + in[2] - 1, axis(3), left,
                                 left + in[3] - 1));
  return Padding{x->name, top};
}

// Y[...] = i8(max(min(C[...] / 2^shift, 127), lo)), lo 0 or -128: shift, ReLU, and the stage read.
struct Epilogue {
  std::string conv;
  int shift = 0;
  bool relu = false;
};
Expected<Epilogue> read_epilogue(const StageDef& y) {
  const char* form = "i8(max(min(C[n, k, y, x, b, o] / 2^shift, 127), lo)) with lo 0 (ReLU) or -128";
  const Cast* cast = y.body.as<Cast>();
  if (y.is_reduction() || y.dtype != DataType::i8() || !cast)
    return cannot(y, fmt::format("the output is not an int8 cast: {}", form));
  // max(min(q, hi), lo) or min(max(q, lo), hi).
  Expr q;
  const int64_t *lo = nullptr, *hi = nullptr;
  if (const Max* mx = cast->value.as<Max>()) {
    const Min* mn = mx->a.as<Min>();
    if (mn) q = mn->a, hi = as_const_int(mn->b), lo = as_const_int(mx->b);
  } else if (const Min* mn = cast->value.as<Min>()) {
    const Max* mx = mn->a.as<Max>();
    if (mx) q = mx->a, lo = as_const_int(mx->b), hi = as_const_int(mn->b);
  }
  if (!q.defined() || !lo || !hi)
    return cannot(y, fmt::format("{} is not a clamp by constants: {}", to_string(cast->value), form));
  if (*hi != 127 || (*lo != 0 && *lo != -128))
    return cannot(y, fmt::format("clamps to {}..{}; the accelerator clamps to 0..127 (ReLU) or -128..127", *lo, *hi));
  int64_t divisor = 1;
  Expr c = q;
  if (const Div* div = q.as<Div>()) {
    const int64_t* d = as_const_int(div->b);
    if (!d) return cannot(y, fmt::format("{} is not a division by a constant: {}", to_string(q), form));
    divisor = *d;
    c = div->a;
  }
  if (divisor < 1 || (divisor & (divisor - 1)) != 0)
    return cannot(y, fmt::format("divides by {}, not a power of two; the accelerator shifts right", divisor));
  const Load* load = c.as<Load>();
  if (!load || !reads_at_axes(c, y, load->name))
    return cannot(y, fmt::format("{} is not the conv read at the output's axes: {}", to_string(c), form));
  int shift = 0;
  while ((int64_t(1) << shift) < divisor) ++shift;
  return Epilogue{load->name, shift, *lo == 0};
}

}  // namespace

Expected<Conv2dLayer> recognize_conv2d(const Program& program, const AccelConfig& config, Conv2dOperands* operands) {
  if (program.inputs.size() != 2 || program.outputs.size() != 1 || program.stages.size() < 2 ||
      program.stages.size() > 3)
    return failed_precondition(fmt::format(
        "conv2d on the accelerator: the program has {} inputs, {} stages and {} outputs; a conv is inputs X and W, "
        "an optional padding stage, the i32 conv and its int8 output",
        program.inputs.size(), program.stages.size(), program.outputs.size()));
  const StageDef& out = program.stages.back();
  TG_ASSIGN_OR_RETURN(Epilogue epilogue, read_epilogue(out));
  const StageDef* conv = program.find_stage(epilogue.conv);
  if (!conv) return cannot(out, fmt::format("reads {}, an input; it must read the conv stage", epilogue.conv));
  TG_ASSIGN_OR_RETURN(ConvRead read, read_conv(*conv));
  Padding padding{read.input, 0};
  if (const StageDef* pad = program.find_stage(read.input)) {
    TG_ASSIGN_OR_RETURN(padding, read_padding(program, *pad));
  }
  if (program.stages.size() != (padding.input == read.input ? 2u : 3u))
    return cannot(out, "the program has stages besides the padding, the conv and the output");
  const TensorInput* x = program.find_input(padding.input);
  const TensorInput* w = program.find_input(read.weights);
  if (!x || !w || x == w) return cannot(*conv, "the conv does not read two different inputs as input and weights");

  const std::vector<int64_t>& xs = x->shape;
  const std::vector<int64_t>& ws = w->shape;
  if (xs[4] != config.batch || xs[5] != config.block_in || ws[4] != config.block_out || ws[5] != config.block_in)
    return cannot(*conv, fmt::format("{} is blocked {}x{} and {} {}x{}; the design {} computes BATCH x BLOCK_IN = "
                                     "{}x{} inputs with BLOCK_OUT x BLOCK_IN = {}x{} weights",
                                     x->name, xs[4], xs[5], w->name, ws[4], ws[5], config.name, config.batch,
                                     config.block_in, config.block_out, config.block_in));
  Conv2dLayer l;
  l.name.clear();
  l.n = xs[0] * config.batch, l.c = xs[1] * config.block_in, l.h = xs[2], l.w = xs[3];
  l.k = ws[0] * config.block_out, l.r = ws[2], l.s = ws[3];
  l.stride = read.stride, l.pad = padding.pad;
  l.shift = epilogue.shift, l.relu = epilogue.relu;
  const std::vector<int64_t> ys = conv->shape();
  if (ys[2] != l.oh() || ys[3] != l.ow())
    return cannot(*conv, fmt::format("computes {}x{} outputs; a {}x{} stride-{} conv of the {}x{} image padded by {} "
                                     "gives {}x{}",
                                     ys[2], ys[3], l.r, l.s, l.stride, l.h, l.w, l.pad, l.oh(), l.ow()));
  if (operands) *operands = {x->name, w->name};
  return l;
}

std::string conv2d_program_text(const Conv2dLayer& l, const AccelConfig& config) {
  std::string text = fmt::format("input X: i8[{}, {}, {}, {}, {}, {}]\n", l.n / config.batch, l.c / config.block_in,
                                 l.h, l.w, config.batch, config.block_in);
  text += fmt::format("input W: i8[{}, {}, {}, {}, {}, {}]\n", l.k / config.block_out, l.c / config.block_in, l.r, l.s,
                      config.block_out, config.block_in);
  std::string input = "X";
  if (l.pad > 0) {
    text += fmt::format(
        "P[n, c, h, w, b, i] = select(h >= {0} && h <= {1} && w >= {0} && w <= {2}, X[n, c, h - {0}, w - {0}, b, i], "
        "0) where h in 0..{3}, w in 0..{4}\n",
        l.pad, l.h + l.pad - 1, l.w + l.pad - 1, l.h + 2 * l.pad, l.w + 2 * l.pad);
    input = "P";
  }
  const std::string by = l.stride == 1 ? "" : fmt::format(" * {}", l.stride);
  text += fmt::format("C[n, k, y, x, b, o] += i32({0}[n, c, y{1} + r, x{1} + s, b, i]) * i32(W[k, c, r, s, o, i]) "
                      "where y in 0..{2}, x in 0..{3}\n",
                      input, by, l.oh(), l.ow());
  text += fmt::format("Y[n, k, y, x, b, o] = i8(max(min(C[n, k, y, x, b, o] / {}, 127), {}))\n", int64_t(1) << l.shift,
                      l.relu ? 0 : -128);
  return text;
}

}  // namespace tensorgym::fpga
