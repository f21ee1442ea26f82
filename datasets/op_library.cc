#include "datasets/op_library.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cassert>

namespace tensorgym {
namespace {

using Names = std::vector<std::string>;

std::string str(int64_t v) { return fmt::format("{}", v); }

std::string join(const Names& parts, const std::string& sep = ", ") { return fmt::format("{}", fmt::join(parts, sep)); }

std::string dims(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::string header(const std::string& comment) { return comment.empty() ? "" : "# " + comment + "\n"; }

std::string input_line(const std::string& name, const std::vector<int64_t>& shape, bool constant = false) {
  return "input " + name + ": f32" + dims(shape) + (constant ? " const" : "") + "\n";
}

// `v`, `v * 2`.
std::string scaled(const std::string& v, int64_t factor) { return factor == 1 ? v : v + " * " + str(factor); }

// `v - 1`, `v` for a shift of 0.
std::string shifted(const std::string& v, int64_t minus) { return minus == 0 ? v : v + " - " + str(minus); }

// The last `n` of three names: the spatial variables of an n-D operator.
Names last(const Names& three, size_t n) { return Names(three.end() - long(n), three.end()); }

const Names kInVars = {"d", "h", "w"};
const Names kOutVars = {"z", "y", "x"};
const Names kKernelVars = {"q", "r", "s"};

// `P[lhs] = select(h >= p && h <= H + p - 1 && ..., X[prefix, h - p, ...], 0.0) where
// h in 0..H + 2p, ...` for the spatial dimensions `size` (after `prefix` indices),
// with `suffix` indices after them.
std::string padding_stage(const Names& prefix, const std::vector<int64_t>& size, int64_t pad, const Names& suffix) {
  const Names vars = last(kInVars, size.size());
  Names lhs = prefix, read = prefix, conds, ranges;
  for (size_t i = 0; i < size.size(); ++i) {
    lhs.push_back(vars[i]);
    read.push_back(shifted(vars[i], pad));
    conds.push_back(vars[i] + " >= " + str(pad) + " && " + vars[i] + " <= " + str(size[i] + pad - 1));
    ranges.push_back(vars[i] + " in 0.." + str(size[i] + 2 * pad));
  }
  lhs.insert(lhs.end(), suffix.begin(), suffix.end());
  read.insert(read.end(), suffix.begin(), suffix.end());
  return "P[" + join(lhs) + "] = select(" + join(conds, " && ") + ", X[" + join(read) + "], 0.0) where " +
         join(ranges) + "\n";
}

// `where y in 0..O, x in 0..O`
std::string output_ranges(const std::vector<int64_t>& out) {
  const Names vars = last(kOutVars, out.size());
  Names ranges;
  for (size_t i = 0; i < out.size(); ++i) ranges.push_back(vars[i] + " in 0.." + str(out[i]));
  return " where " + join(ranges);
}

// The activation stage R over Y[index], or nothing.
std::string activation_stage(Activation act, const std::string& index) {
  switch (act) {
    case Activation::kNone: return "";
    case Activation::kRelu: return "R[" + index + "] = max(Y[" + index + "], 0.0)\n";
    case Activation::kRelu6: return "R[" + index + "] = min(max(Y[" + index + "], 0.0), 6.0)\n";
  }
  return "";
}

int64_t out_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
  return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

}  // namespace

std::vector<int64_t> conv_output_size(const ConvSpec& spec) {
  std::vector<int64_t> out;
  for (int64_t in : spec.input_size) out.push_back(out_size(in, spec.kernel, spec.stride, spec.pad, spec.dilation));
  return out;
}

std::string conv_program(const ConvSpec& spec) {
  const size_t rank = spec.input_size.size();
  assert(rank >= 1 && rank <= 3);
  assert(spec.groups >= 1 && spec.in_channels % spec.groups == 0 && spec.out_channels % spec.groups == 0);
  const std::vector<int64_t> out = conv_output_size(spec);
  for ([[maybe_unused]] int64_t o : out) assert(o >= 1);
  const int64_t in_per_group = spec.in_channels / spec.groups;
  const int64_t out_per_group = spec.out_channels / spec.groups;

  std::vector<int64_t> x_shape = {spec.batch, spec.in_channels};
  x_shape.insert(x_shape.end(), spec.input_size.begin(), spec.input_size.end());
  std::vector<int64_t> w_shape = {spec.out_channels, in_per_group};
  w_shape.insert(w_shape.end(), rank, spec.kernel);

  std::string text = header(spec.comment) + input_line("X", x_shape) + input_line("W", w_shape, spec.constant_weights);
  std::string source = "X";
  if (spec.pad > 0) {
    text += padding_stage({"n", "c"}, spec.input_size, spec.pad, {});
    source = "P";
  }
  const Names ovars = last(kOutVars, rank);
  const Names kvars = last(kKernelVars, rank);
  const std::string channel =
      spec.groups == 1 ? "c" : "f / " + str(out_per_group) + " * " + str(in_per_group) + " + c";
  Names lhs = {"n", "f"}, read = {"n", channel}, weight = {"f", "c"};
  for (size_t i = 0; i < rank; ++i) {
    lhs.push_back(ovars[i]);
    read.push_back(scaled(ovars[i], spec.stride) + " + " + scaled(kvars[i], spec.dilation));
    weight.push_back(kvars[i]);
  }
  text += "Y[" + join(lhs) + "] += " + source + "[" + join(read) + "] * W[" + join(weight) + "]" +
          output_ranges(out) + "\n";
  text += activation_stage(spec.activation, join(lhs));
  return text;
}

std::string depthwise_conv2d_program(const DepthwiseSpec& spec) {
  const std::vector<int64_t> size = {spec.height, spec.width};
  const std::vector<int64_t> out = {out_size(spec.height, spec.kernel, spec.stride, spec.pad, 1),
                                    out_size(spec.width, spec.kernel, spec.stride, spec.pad, 1)};
  std::string text = header(spec.comment) + input_line("X", {spec.batch, spec.channels, spec.height, spec.width}) +
                     input_line("W", {spec.channels, spec.kernel, spec.kernel}, spec.constant_weights);
  std::string source = "X";
  if (spec.pad > 0) {
    text += padding_stage({"n", "c"}, size, spec.pad, {});
    source = "P";
  }
  const std::string lhs = "n, c, y, x";
  text += "Y[" + lhs + "] += " + source + "[n, c, " + scaled("y", spec.stride) + " + r, " + scaled("x", spec.stride) +
          " + s] * W[c, r, s]" + output_ranges(out) + "\n";
  text += activation_stage(spec.activation, lhs);
  return text;
}

int64_t transposed_conv_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad) {
  return (in - 1) * stride - 2 * pad + kernel;
}

std::string transposed_conv2d_program(const TransposedConvSpec& spec) {
  assert(spec.pad >= 0 && spec.pad < spec.kernel && spec.stride >= 1);
  const int64_t border = spec.kernel - 1 - spec.pad;  // zeros around the dilated input
  const std::vector<int64_t> size = {spec.height, spec.width};
  const Names vars = {"h", "w"};
  Names conds, read = {"n", "c"}, ranges;
  for (size_t i = 0; i < 2; ++i) {
    const std::string& v = vars[i];
    const int64_t last_pixel = border + (size[i] - 1) * spec.stride;
    conds.push_back(v + " >= " + str(border) + " && " + v + " <= " + str(last_pixel));
    const std::string offset = border == 0 ? v : "(" + v + " - " + str(border) + ")";
    if (spec.stride > 1) {
      conds.push_back(offset + " % " + str(spec.stride) + " == 0");
      read.push_back(offset + " / " + str(spec.stride));
    } else {
      read.push_back(shifted(v, border));
    }
    ranges.push_back(v + " in 0.." + str(last_pixel + border + 1));
  }
  const int64_t out_h = transposed_conv_output_size(spec.height, spec.kernel, spec.stride, spec.pad);
  const int64_t out_w = transposed_conv_output_size(spec.width, spec.kernel, spec.stride, spec.pad);
  const std::string flip = str(spec.kernel - 1);
  return header(spec.comment) + input_line("X", {spec.batch, spec.in_channels, spec.height, spec.width}) +
         input_line("W", {spec.in_channels, spec.out_channels, spec.kernel, spec.kernel}, spec.constant_weights) +
         "D[n, c, h, w] = select(" + join(conds, " && ") + ", X[" + join(read) + "], 0.0) where " + join(ranges) +
         "\n" + "Y[n, f, y, x] += D[n, c, y + r, x + s] * W[c, f, " + flip + " - r, " + flip + " - s] where y in 0.." +
         str(out_h) + ", x in 0.." + str(out_w) + ", r in 0.." + str(spec.kernel) + ", s in 0.." + str(spec.kernel) +
         "\n";
}

std::string capsule_conv2d_program(const CapsuleConvSpec& spec) {
  const int64_t cap = spec.capsule;
  const std::vector<int64_t> out = {out_size(spec.height, spec.kernel, spec.stride, spec.pad, 1),
                                    out_size(spec.width, spec.kernel, spec.stride, spec.pad, 1)};
  std::string text =
      header(spec.comment) + input_line("X", {spec.batch, spec.in_channels, spec.height, spec.width, cap, cap}) +
      input_line("W", {spec.out_channels, spec.in_channels, spec.kernel, spec.kernel, cap, cap}, spec.constant_weights);
  std::string source = "X";
  if (spec.pad > 0) {
    text += padding_stage({"n", "c"}, {spec.height, spec.width}, spec.pad, {"i", "k"});
    source = "P";
  }
  text += "Y[n, f, y, x, i, j] += " + source + "[n, c, " + scaled("y", spec.stride) + " + r, " +
          scaled("x", spec.stride) + " + s, i, k] * W[f, c, r, s, k, j]" + output_ranges(out) + "\n";
  return text;
}

std::string matmul_program(int64_t batch, int64_t n, int64_t m, int64_t k, const std::string& comment) {
  if (batch <= 0) {
    return header(comment) + input_line("A", {n, k}) + input_line("B", {k, m}) + "C[i, j] += A[i, k] * B[k, j]\n";
  }
  return header(comment) + input_line("A", {batch, n, k}) + input_line("B", {batch, k, m}) +
         "C[b, i, j] += A[b, i, k] * B[b, k, j]\n";
}

std::string norm_program(int64_t batch, int64_t m, int64_t n, const std::string& comment) {
  return header(comment) + input_line("A", {batch, m, n}) + "S[b] += A[b, i, j] * A[b, i, j]\n" +
         "Y[b] = sqrt(S[b])\n";
}

std::string dense_program(int64_t batch, int64_t in_features, int64_t out_features, bool bias,
                          const std::string& comment) {
  std::string text = header(comment) + input_line("X", {batch, in_features}) +
                     input_line("W", {out_features, in_features});
  if (bias) text += input_line("B", {out_features});
  text += "Y[n, j] += X[n, k] * W[j, k]\n";
  if (bias) text += "Z[n, j] = Y[n, j] + B[j]\n";
  return text;
}

}  // namespace tensorgym
