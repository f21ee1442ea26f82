#include "memplan/graph_builder.h"

#include <fmt/format.h>

#include <algorithm>

#include "memplan/op_stages.h"

namespace tensorgym {

bool broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>* out) {
  const size_t r = std::max(a.size(), b.size());
  out->assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    const int64_t x = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t y = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (x != y && x != 1 && y != 1) return false;
    (*out)[i] = std::max(x, y);
  }
  return true;
}

GraphBuilder::GraphBuilder(std::string name) { graph_.name = std::move(name); }

void GraphBuilder::fail(const std::string& message) {
  if (error_.ok()) error_ = invalid_argument("graph '" + graph_.name + "': " + message);
}

int GraphBuilder::input(const std::string& name, std::vector<int64_t> shape, const std::string& dtype) {
  return graph_.add_tensor(name, std::move(shape), TensorKind::kInput, dtype);
}

int GraphBuilder::constant(const std::string& name, std::vector<int64_t> shape) {
  return graph_.add_tensor(name, std::move(shape), TensorKind::kConstant);
}

int GraphBuilder::add_op(const std::string& type, std::vector<int> inputs, std::vector<int64_t> out_shape) {
  GraphOp op;
  op.name = fmt::format("{}_{}", type, counter_++);
  op.type = type;
  op.inputs = std::move(inputs);
  for (int64_t d : out_shape)
    if (d <= 0) fail("operator " + op.name + " would have the empty output shape " + shape_text(out_shape));
  const int out = graph_.add_tensor(op.name, std::move(out_shape), TensorKind::kIntermediate);
  op.outputs = {out};
  graph_.ops.push_back(std::move(op));
  return out;
}

int GraphBuilder::conv2d(int x, int64_t out_channels, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                         int64_t pw, int64_t groups) {
  const std::vector<int64_t>& xs = shape(x);
  if (xs.size() != 4 || groups < 1 || xs[1] % groups != 0) {
    fail("conv2d needs an NCHW input whose channels the groups divide, got " + shape_text(xs));
    return x;
  }
  const int w = constant(fmt::format("conv_{}_w", counter_), {out_channels, xs[1] / groups, kh, kw});
  return conv2d_with(x, w, sh, sw, ph, pw, groups);
}

int GraphBuilder::conv2d_with(int x, int w, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t groups) {
  const std::vector<int64_t> xs = shape(x), ws = shape(w);
  if (sh < 1 || sw < 1 || ph < 0 || pw < 0) {
    fail("conv2d: strides must be >= 1 and pads >= 0");
    return x;
  }
  if (xs.size() != 4 || ws.size() != 4 || groups < 1 || ws[0] % groups != 0 || xs[1] != ws[1] * groups) {
    fail(fmt::format("conv2d: input {} and weights {} do not match with {} groups", shape_text(xs), shape_text(ws),
                     groups));
    return x;
  }
  const int64_t oh = (xs[2] + 2 * ph - ws[2]) / sh + 1, ow = (xs[3] + 2 * pw - ws[3]) / sw + 1;
  const int out = add_op("conv2d", {x, w}, {xs[0], ws[0], oh, ow});
  GraphOp& op = graph_.ops.back();
  op.attrs["stride"] = {sh, sw};
  op.attrs["pad"] = {ph, pw};
  op.attrs["groups"] = {groups};
  return out;
}

int GraphBuilder::unary(const std::string& type, int x) {
  const int out = add_op(type, {x}, shape(x));
  graph_.ops.back().inplace_inputs = {0};
  graph_.ops.back().fusible = true;
  return out;
}

int GraphBuilder::binary(const std::string& type, int a, int b) {
  std::vector<int64_t> out_shape;
  if (!broadcast_shapes(shape(a), shape(b), &out_shape)) {
    fail(type + ": shapes " + shape_text(shape(a)) + " and " + shape_text(shape(b)) + " do not broadcast");
    return a;
  }
  const int out = add_op(type, {a, b}, out_shape);
  GraphOp& op = graph_.ops.back();
  for (int k = 0; k < 2; ++k)
    if (graph_.tensors[size_t(op.inputs[size_t(k)])].shape == out_shape) op.inplace_inputs.push_back(k);
  op.fusible = graph_.tensors[size_t(a)].shape == out_shape;
  return out;
}

int GraphBuilder::scale(int x, double factor) {
  const int out = add_op("scale", {x}, shape(x));
  graph_.ops.back().fattrs["scale"] = factor;
  graph_.ops.back().inplace_inputs = {0};
  graph_.ops.back().fusible = true;
  return out;
}

int GraphBuilder::matmul(int a, int b, bool transpose_b) {
  const std::vector<int64_t> as = shape(a), bs = shape(b);
  if (as.size() < 2 || bs.size() < 2 || (bs.size() > 2 && bs.size() != as.size())) {
    fail("matmul: shapes " + shape_text(as) + " and " + shape_text(bs) + " are not [.., n, k] x [.., k, m]");
    return a;
  }
  const int64_t k = transpose_b ? bs[bs.size() - 1] : bs[bs.size() - 2];
  const int64_t m = transpose_b ? bs[bs.size() - 2] : bs[bs.size() - 1];
  if (k != as.back() || (bs.size() > 2 && !std::equal(as.begin(), as.end() - 2, bs.begin()))) {
    fail("matmul: shapes " + shape_text(as) + " and " + shape_text(bs) + " do not match");
    return a;
  }
  std::vector<int64_t> out_shape(as.begin(), as.end() - 1);
  out_shape.push_back(m);
  const int out = add_op("matmul", {a, b}, out_shape);
  if (transpose_b) graph_.ops.back().attrs["transpose_b"] = {1};
  return out;
}

int GraphBuilder::dense(int x, int64_t out_features) {
  const int w = constant(fmt::format("dense_{}_w", counter_), {shape(x).back(), out_features});
  const int bias = constant(fmt::format("dense_{}_b", counter_), {out_features});
  return binary("add", matmul(x, w), bias);
}

int GraphBuilder::softmax(int x) {
  if (shape(x).size() < 2) fail("softmax needs rank 2 or more, got " + shape_text(shape(x)));
  return add_op("softmax", {x}, shape(x));
}

int GraphBuilder::layernorm(int x) {
  const int64_t h = shape(x).back();
  const int g = constant(fmt::format("ln_{}_gamma", counter_), {h});
  const int b = constant(fmt::format("ln_{}_beta", counter_), {h});
  return layernorm_with(x, g, b);
}

int GraphBuilder::layernorm_with(int x, int gamma, int beta) {
  if (shape(x).size() < 2) fail("layernorm needs rank 2 or more, got " + shape_text(shape(x)));
  const int out = add_op("layernorm", {x, gamma, beta}, shape(x));
  graph_.ops.back().fattrs["epsilon"] = 1e-5;
  return out;
}

int GraphBuilder::pool(const std::string& type, int x, int64_t k, int64_t stride, int64_t pad) {
  const std::vector<int64_t> xs = shape(x);
  if (xs.size() != 4 || k < 1 || stride < 1 || pad < 0) {
    fail(type + " needs an NCHW input, a kernel and stride >= 1 and a pad >= 0, got " + shape_text(xs));
    return x;
  }
  const int out =
      add_op(type, {x}, {xs[0], xs[1], (xs[2] + 2 * pad - k) / stride + 1, (xs[3] + 2 * pad - k) / stride + 1});
  GraphOp& op = graph_.ops.back();
  op.attrs["kernel"] = {k};
  op.attrs["stride"] = {stride};
  op.attrs["pad"] = {pad};
  return out;
}

int GraphBuilder::global_avgpool(int x) {
  const std::vector<int64_t> xs = shape(x);
  if (xs.size() != 4) {
    fail("global_avgpool needs an NCHW input, got " + shape_text(xs));
    return x;
  }
  return add_op("global_avgpool", {x}, {xs[0], xs[1]});
}

int GraphBuilder::concat(const std::vector<int>& xs, int64_t axis) {
  std::vector<int64_t> out_shape = shape(xs.at(0));
  if (axis < 0 || size_t(axis) >= out_shape.size()) {
    fail(fmt::format("concat: axis {} out of range for {}", axis, shape_text(out_shape)));
    return xs[0];
  }
  for (size_t i = 1; i < xs.size(); ++i) {
    std::vector<int64_t> s = shape(xs[i]);
    if (s.size() != out_shape.size()) fail("concat: ranks differ");
    out_shape[size_t(axis)] += s[size_t(axis)];
  }
  const int out = add_op("concat", xs, out_shape);
  graph_.ops.back().attrs["axis"] = {axis};
  return out;
}

int GraphBuilder::reshape(int x, std::vector<int64_t> new_shape) {
  if (shape_elements(new_shape) != shape_elements(shape(x))) {
    fail("reshape of " + shape_text(shape(x)) + " to " + shape_text(new_shape) + " changes the element count");
    return x;
  }
  const int out = add_op("reshape", {x}, std::move(new_shape));
  graph_.ops.back().inplace_inputs = {0};
  return out;
}

int GraphBuilder::transpose(int x, std::vector<int64_t> perm) {
  const std::vector<int64_t> xs = shape(x);
  std::vector<int64_t> out_shape;
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != int64_t(i) || perm.size() != xs.size()) {
      fail("transpose: " + shape_text(perm) + " is not a permutation of the axes of " + shape_text(xs));
      return x;
    }
  for (int64_t p : perm) out_shape.push_back(xs[size_t(p)]);
  const int out = add_op("transpose", {x}, out_shape);
  graph_.ops.back().attrs["perm"] = perm;
  return out;
}

void GraphBuilder::rename(int tensor, const std::string& name) {
  graph_.tensors[size_t(tensor)].name = name;
  for (GraphOp& op : graph_.ops)
    if (!op.outputs.empty() && op.outputs[0] == tensor) op.name = name;
}

void GraphBuilder::mark_output(int tensor) { graph_.tensors[size_t(tensor)].kind = TensorKind::kOutput; }

Expected<Graph> GraphBuilder::finish() {
  if (!error_.ok()) return error_;
  TG_RETURN_IF_ERROR(graph_.finalize());
  TG_RETURN_IF_ERROR(fill_scratch(graph_));
  return graph_;
}

}  // namespace tensorgym
