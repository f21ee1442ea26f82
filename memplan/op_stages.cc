#include "memplan/op_stages.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "memplan/instance.h"

namespace tensorgym {
namespace {

using Names = std::vector<std::string>;

std::string str(int64_t v) { return fmt::format("{}", v); }

std::string lit(double v) {
  std::string s = fmt::format("{:.9g}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string join(const Names& parts, const std::string& sep = ", ") { return fmt::format("{}", fmt::join(parts, sep)); }

Names vars(size_t rank, const std::string& prefix = "i") {
  Names v;
  for (size_t i = 0; i < rank; ++i) v.push_back(prefix + str(int64_t(i)));
  return v;
}

std::string ranges(const Names& v, const std::vector<int64_t>& extents) {
  Names r;
  for (size_t i = 0; i < v.size(); ++i) r.push_back(v[i] + " in 0.." + str(extents[i]));
  return " where " + join(r);
}

// `a * s + r - p` with the trivial parts left out.
std::string affine(const std::string& a, int64_t s, const std::string& r, int64_t p) {
  std::string e = s == 1 ? a : a + " * " + str(s);
  if (!r.empty()) e += " + " + r;
  if (p > 0) e += " - " + str(p);
  return e;
}

// Indices of an operand of shape `in` broadcast to the output variables `v`.
Names broadcast_index(const std::vector<int64_t>& in, const std::vector<int64_t>& out, const Names& v) {
  Names idx;
  const size_t shift = out.size() - in.size();
  for (size_t j = 0; j < in.size(); ++j) idx.push_back(in[j] == 1 && out[j + shift] != 1 ? "0" : v[j + shift]);
  if (idx.empty()) idx.push_back("0");
  return idx;
}

std::string elementwise(const std::string& type, const std::string& x) {
  if (type == "relu") return "max(" + x + ", 0.0)";
  if (type == "relu6") return "min(max(" + x + ", 0.0), 6.0)";
  if (type == "gelu")
    return "0.5 * " + x + " * (1.0 + tanh(0.7978845608028654 * (" + x + " + 0.044715 * " + x + " * " + x + " * " + x +
           ")))";
  if (type == "sigmoid") return "1.0 / (1.0 + exp(0.0 - " + x + "))";
  if (type == "tanh") return "tanh(" + x + ")";
  return "";
}

// Reading a padded input in place: `inner` (which reads at out * stride + k - pad)
// guarded so that the bounds checker can prove every read in bounds: interior
// output rows read freely; each boundary row checks its kernel offsets on their
// own (one variable at a time, which is what the checker narrows).
struct PadDim {
  std::string out, k;  // the output and kernel variables
  int64_t stride, pad, extent, kernel, out_extent;
};
std::string guard_dim(const PadDim& d, const std::string& inner, const std::string& fill) {
  if (d.pad == 0 && (d.out_extent - 1) * d.stride + d.kernel <= d.extent) return inner;
  auto ceil_div = [](int64_t a, int64_t b) { return a <= 0 ? 0 : (a + b - 1) / b; };
  const int64_t lo = ceil_div(d.pad, d.stride);
  const int64_t hi_num = d.extent - d.kernel + d.pad;
  const int64_t hi = hi_num < 0 ? -1 : std::min(d.out_extent - 1, hi_num / d.stride);
  std::string tail = fill;
  for (int64_t v = d.out_extent - 1; v >= 0; --v) {
    if (v >= lo && v <= hi) continue;
    const int64_t kmin = std::max<int64_t>(0, d.pad - v * d.stride);
    const int64_t kmax = std::min<int64_t>(d.kernel - 1, d.extent - 1 + d.pad - v * d.stride);
    const std::string row = kmin > kmax ? fill
                                        : "select(" + d.k + " >= " + str(kmin) + " && " + d.k + " <= " + str(kmax) +
                                              ", " + inner + ", " + fill + ")";
    tail = "select(" + d.out + " == " + str(v) + ", " + row + ", " + tail + ")";
  }
  if (lo > hi) return tail;
  return "select(" + d.out + " >= " + str(lo) + " && " + d.out + " <= " + str(hi) + ", " + inner + ", " + tail + ")";
}

}  // namespace

std::string OpProgram::stage_text(const Graph& graph, const GraphOp& op, size_t k) const {
  std::string text;
  const OpStage& s = stages[k];
  for (const std::string& r : s.reads) {
    std::vector<int64_t> shape;
    for (size_t i = 0; i < input_names.size(); ++i)
      if (input_names[i] == r) shape = graph.tensors[size_t(op.inputs[i])].shape;
    for (size_t j = 0; j < k; ++j)
      if (stages[j].name == r) shape = stages[j].shape;
    text += "input " + r + ": f32" + shape_text(shape) + "\n";
  }
  return text + s.line + "\n";
}

int64_t op_scratch_bytes(const OpProgram& program, int64_t alignment) {
  int64_t bytes = 0;
  for (size_t k = 0; k + 1 < program.stages.size(); ++k)
    bytes += align_up(shape_elements(program.stages[k].shape) * 4, alignment);
  return bytes;
}

Status fill_scratch(Graph& graph) {
  for (GraphOp& op : graph.ops) {
    TG_ASSIGN_OR_RETURN(OpProgram p, op_program(graph, op));
    op.scratch_bytes = op_scratch_bytes(p);
  }
  return Status();
}

int64_t op_stage_offset(const OpProgram& program, size_t k, int64_t alignment) {
  int64_t off = 0;
  for (size_t j = 0; j < k; ++j) off += align_up(shape_elements(program.stages[j].shape) * 4, alignment);
  return off;
}

int64_t op_work(const OpProgram& program) {
  int64_t work = 0;
  for (const OpStage& stage : program.stages) {
    // Every stage line ends " where v in 0..N, w in 0..M".
    const size_t where = stage.line.rfind(" where ");
    int64_t space = 1;
    for (size_t at = where; at != std::string::npos && (at = stage.line.find("..", at)) != std::string::npos;) {
      at += 2;
      space *= std::stoll(stage.line.substr(at));
    }
    work += space;
  }
  return work;
}

Expected<std::vector<InputWindow>> op_input_windows(const Graph& graph, const GraphOp& op) {
  std::vector<InputWindow> windows(op.inputs.size());
  auto it = op.attrs.find("window");
  if (it == op.attrs.end()) return windows;
  const std::vector<int64_t>& w = it->second;
  if (w.size() % 4 != 0)
    return invalid_argument(
        fmt::format("operator '{}': its window attribute holds {} values, not quadruples of "
                    "input, axis, start, size",
                    op.name, w.size()));
  for (size_t q = 0; q < w.size(); q += 4) {
    const int64_t k = w[q], axis = w[q + 1], start = w[q + 2], size = w[q + 3];
    if (k < 0 || size_t(k) >= op.inputs.size())
      return invalid_argument(
          fmt::format("operator '{}' has {} inputs: no input {} to window", op.name, op.inputs.size(), k));
    const std::vector<int64_t>& shape = graph.tensors[size_t(op.inputs[size_t(k)])].shape;
    if (axis < 0 || size_t(axis) >= shape.size() || start < 0 || size < 1 || start + size > shape[size_t(axis)] ||
        windows[size_t(k)].axis >= 0)
      return invalid_argument(
          fmt::format("operator '{}': window [{}, {}) on axis {} of input {} {} is not inside it "
                      "(or the input has another window)",
                      op.name, start, start + size, axis, k, shape_text(shape)));
    windows[size_t(k)] = {axis, start, size};
  }
  return windows;
}

Expected<OpProgram> op_program(const Graph& graph, const GraphOp& op) {
  OpProgram p;
  for (size_t i = 0; i < op.inputs.size(); ++i) p.input_names.push_back("X" + str(int64_t(i)));
  const std::vector<int64_t>& out = graph.tensors[size_t(op.outputs[0])].shape;
  const Names v = vars(out.size());
  const std::string lhs = "Y[" + join(v) + "]";
  const std::string& t = op.type;
  TG_ASSIGN_OR_RETURN(const std::vector<InputWindow> windows, op_input_windows(graph, op));
  std::vector<std::vector<int64_t>> shapes;
  for (size_t k = 0; k < op.inputs.size(); ++k) {
    shapes.push_back(graph.tensors[size_t(op.inputs[k])].shape);
    if (windows[k].axis >= 0) shapes.back()[size_t(windows[k].axis)] = windows[k].size;
  }
  auto shape_of = [&](size_t k) -> const std::vector<int64_t>& { return shapes[k]; };  // as the operator sees it
  auto x_at = [&](size_t k, Names idx) {
    const InputWindow& w = windows[k];
    // Even "+ 0": a lone variable's range must be the whole axis.
    if (w.axis >= 0) idx[size_t(w.axis)] += " + " + str(w.start);
    return p.input_names[k] + "[" + join(idx) + "]";
  };

  if (t == "conv2d") {
    const std::vector<int64_t>& xs = shape_of(0);
    const std::vector<int64_t>& ws = shape_of(1);
    const int64_t sh = op.attr("stride", 1, 0), sw = op.attr("stride", 1, 1);
    const int64_t ph = op.attr("pad", 0, 0), pw = op.attr("pad", 0, 1);
    const int64_t groups = op.attr("groups", 1);
    // Padding is read in place (a select), so a convolution needs no scratch.
    const int64_t out_per_group = ws[0] / groups, in_per_group = ws[1];
    const std::string ch = groups == 1 ? "c" : "f / " + str(out_per_group) + " * " + str(in_per_group) + " + c";
    const std::string load = x_at(0, {"n", ch, affine("y", sh, "r", ph), affine("x", sw, "s", pw)});
    const std::string val = guard_dim({"y", "r", sh, ph, xs[2], ws[2], out[2]},
                                      guard_dim({"x", "s", sw, pw, xs[3], ws[3], out[3]}, load, "0.0"), "0.0");
    p.stages.push_back({"Y",
                        out,
                        "Y[n, f, y, x] += " + val + " * " + x_at(1, {"f", "c", "r", "s"}) + " where n in 0.." +
                            str(out[0]) + ", f in 0.." + str(out[1]) + ", y in 0.." + str(out[2]) + ", x in 0.." +
                            str(out[3]) + ", c in 0.." + str(ws[1]) + ", r in 0.." + str(ws[2]) + ", s in 0.." +
                            str(ws[3]),
                        {"X0", "X1"}});
  } else if (!elementwise(t, "x").empty()) {
    p.stages.push_back({"Y", out, lhs + " = " + elementwise(t, x_at(0, v)) + ranges(v, out), {"X0"}});
  } else if (t == "add" || t == "sub" || t == "mul" || t == "div") {
    const char* sym = t == "add" ? " + " : t == "sub" ? " - " : t == "mul" ? " * " : " / ";
    p.stages.push_back({"Y",
                        out,
                        lhs + " = " + x_at(0, broadcast_index(shape_of(0), out, v)) + sym +
                            x_at(1, broadcast_index(shape_of(1), out, v)) + ranges(v, out),
                        {"X0", "X1"}});
  } else if (t == "scale") {
    auto it = op.fattrs.find("scale");
    const double s = it == op.fattrs.end() ? 1.0 : it->second;
    p.stages.push_back({"Y", out, lhs + " = " + x_at(0, v) + " * " + lit(s) + ranges(v, out), {"X0"}});
  } else if (t == "matmul") {
    const std::vector<int64_t>& as = shape_of(0);
    const std::vector<int64_t>& bs = shape_of(1);
    const bool tb = op.attr("transpose_b", 0) != 0;
    const size_t r = out.size();
    Names a_idx(v.begin(), v.end() - 1), b_idx;
    a_idx.push_back("k");
    if (bs.size() > 2) b_idx.assign(v.end() - long(bs.size()), v.end() - 2);
    if (tb) {
      b_idx.push_back(v[r - 1]);
      b_idx.push_back("k");
    } else {
      b_idx.push_back("k");
      b_idx.push_back(v[r - 1]);
    }
    p.stages.push_back(
        {"Y",
         out,
         lhs + " += " + x_at(0, a_idx) + " * " + x_at(1, b_idx) + ranges(v, out) + ", k in 0.." + str(as.back()),
         {"X0", "X1"}});
  } else if (t == "softmax" || t == "layernorm") {
    const Names pv(v.begin(), v.end() - 1);
    const std::string j = v.back();
    const std::vector<int64_t> ps(out.begin(), out.end() - 1);
    const std::string pre = join(pv) + (pv.empty() ? "" : ", ");
    const std::string row = "[" + join(pv) + "]", elem = "[" + pre + j + "]";
    const std::string pr = ranges(pv, ps), er = ranges(v, out), red = ", " + j + " in 0.." + str(out.back());
    if (t == "softmax") {
      p.stages.push_back({"T0", ps, "T0" + row + " max= " + x_at(0, v) + pr + red, {"X0"}});
      p.stages.push_back({"T1", out, "T1" + elem + " = exp(" + x_at(0, v) + " - T0" + row + ")" + er, {"X0", "T0"}});
      p.stages.push_back({"T2", ps, "T2" + row + " += T1" + elem + pr + red, {"T1"}});
      p.stages.push_back({"Y", out, "Y" + elem + " = T1" + elem + " / T2" + row + er, {"T1", "T2"}});
    } else {
      auto it = op.fattrs.find("epsilon");
      const std::string eps = lit(it == op.fattrs.end() ? 1e-5 : it->second);
      const std::string h = lit(double(out.back()));
      p.stages.push_back({"T0", ps, "T0" + row + " += " + x_at(0, v) + " / " + h + pr + red, {"X0"}});
      p.stages.push_back({"T1", out, "T1" + elem + " = " + x_at(0, v) + " - T0" + row + er, {"X0", "T0"}});
      p.stages.push_back({"T2", ps, "T2" + row + " += T1" + elem + " * T1" + elem + " / " + h + pr + red, {"T1"}});
      p.stages.push_back({"Y",
                          out,
                          "Y" + elem + " = T1" + elem + " / sqrt(T2" + row + " + " + eps + ") * " + x_at(1, {j}) +
                              " + " + x_at(2, {j}) + er,
                          {"T1", "T2", "X1", "X2"}});
    }
  } else if (t == "maxpool" || t == "avgpool") {
    const std::vector<int64_t>& xs = shape_of(0);
    // `pad` is one value for both axes, or [top, left] (a split operator's tiles pad
    // only where they meet the image's edge; the bottom and right follow from the
    // output's extent).
    const int64_t k = op.attr("kernel", 1), s = op.attr("stride", 1), ph = op.attr("pad", 0);
    const int64_t pw = op.attr("pad", ph, 1);
    const std::string fill = t == "maxpool" ? "-3.0e38" : "0.0";
    const std::string load = x_at(0, {"n", "c", affine("y", s, "r", ph), affine("x", s, "q", pw)});
    const std::string val = guard_dim({"y", "r", s, ph, xs[2], k, out[2]},
                                      guard_dim({"x", "q", s, pw, xs[3], k, out[3]}, load, fill), fill);
    const std::string body = t == "maxpool" ? " max= " + val : " += " + val + " / " + lit(double(k * k));
    p.stages.push_back({"Y",
                        out,
                        "Y[n, c, y, x]" + body + " where n in 0.." + str(out[0]) + ", c in 0.." + str(out[1]) +
                            ", y in 0.." + str(out[2]) + ", x in 0.." + str(out[3]) + ", r in 0.." + str(k) +
                            ", q in 0.." + str(k),
                        {"X0"}});
  } else if (t == "global_avgpool") {
    const std::vector<int64_t>& xs = shape_of(0);
    p.stages.push_back({"Y",
                        out,
                        "Y[n, c] += " + x_at(0, {"n", "c", "h", "w"}) + " / " + lit(double(xs[2] * xs[3])) +
                            " where n in 0.." + str(out[0]) + ", c in 0.." + str(out[1]) + ", h in 0.." + str(xs[2]) +
                            ", w in 0.." + str(xs[3]),
                        {"X0"}});
  } else if (t == "concat") {
    const size_t axis = size_t(op.attr("axis", 1));
    std::string body;
    int64_t start = 0;
    Names reads;
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      Names idx = v;
      // Never a lone variable: its range is the output's, wider than this input's.
      idx[axis] = v[axis] + " - " + str(start);
      const std::string load = x_at(k, idx);
      start += shape_of(k)[axis];
      reads.push_back(p.input_names[k]);
      if (k + 1 == op.inputs.size()) {
        body += load;
      } else {
        body += "select(" + v[axis] + " < " + str(start) + ", " + load + ", ";
      }
    }
    body += std::string(op.inputs.size() - 1, ')');
    p.stages.push_back({"Y", out, lhs + " = " + body + ranges(v, out), reads});
  } else if (t == "slice" || t == "pad" || t == "update_slice") {
    // Along `axis`, from `start`: slice reads rows [start, start + out) of X0; pad
    // writes X0 at rows [start, start + in) and zeros elsewhere; update_slice is X0
    // with rows [start, start + in) replaced by X1 (in place on X0 when it dies).
    const size_t axis = size_t(op.attr("axis", 0));
    const int64_t start = op.attr("start", 0);
    const std::string& a = v[axis];
    Names idx = v;
    idx[axis] = a + " + " + str(start);
    if (t == "slice") {
      p.stages.push_back({"Y", out, lhs + " = " + x_at(0, idx) + ranges(v, out), {"X0"}});
    } else {
      const size_t part = t == "pad" ? 0 : 1;
      const int64_t rows = shape_of(part)[axis];
      // Never a lone variable: the range is the output's, wider than the part's.
      idx[axis] = a + " - " + str(start);
      const std::string outside = t == "pad" ? "0.0" : x_at(0, v);
      p.stages.push_back({"Y", out,
                          lhs + " = select(" + a + " >= " + str(start) + " && " + a + " < " + str(start + rows) + ", " +
                              x_at(part, idx) + ", " + outside + ")" + ranges(v, out),
                          t == "pad" ? Names{"X0"} : Names{"X0", "X1"}});
    }
  } else if (t == "reshape") {
    const std::vector<int64_t>& xs = shape_of(0);
    // The flat index of the output element, then the input's indices from it.
    std::string flat;
    int64_t stride = 1;
    Names terms;
    for (size_t k = out.size(); k-- > 0;) {
      terms.insert(terms.begin(), stride == 1 ? v[k] : v[k] + " * " + str(stride));
      stride *= out[k];
    }
    flat = "(" + join(terms, " + ") + ")";
    Names idx(xs.size());
    int64_t xstride = 1;
    for (size_t k = xs.size(); k-- > 0;) {
      std::string e = xstride == 1 ? flat : flat + " / " + str(xstride);
      if (k > 0) e = "(" + e + ") % " + str(xs[k]);
      idx[k] = e;
      xstride *= xs[k];
    }
    p.stages.push_back({"Y", out, lhs + " = " + x_at(0, idx) + ranges(v, out), {"X0"}});
  } else if (t == "transpose") {
    const std::vector<int64_t>& xs = shape_of(0);
    Names idx(xs.size());
    for (size_t k = 0; k < out.size(); ++k) idx[size_t(op.attr("perm", int64_t(k), k))] = v[k];
    p.stages.push_back({"Y", out, lhs + " = " + x_at(0, idx) + ranges(v, out), {"X0"}});
  } else {
    return unimplemented("operator '" + op.name + "' of type '" + t + "' has no program");
  }
  return p;
}

}  // namespace tensorgym
