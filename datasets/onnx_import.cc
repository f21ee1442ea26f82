#include "datasets/onnx_import.h"

#include "datasets/lifetimes_csv.h"

#ifdef TENSORGYM_HAVE_ONNX

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <map>
#include <set>

#include "memplan/graph_builder.h"
#include "memplan/instance.h"
#include "support/quote.h"

namespace tensorgym {
namespace {

using ShapeVec = std::vector<int64_t>;

std::string dtype_of(int32_t elem_type) {
  switch (elem_type) {
    case onnx::TensorProto::FLOAT: return "f32";
    case onnx::TensorProto::FLOAT16: return "f16";
    case onnx::TensorProto::BFLOAT16: return "bf16";
    case onnx::TensorProto::DOUBLE: return "f64";
    case onnx::TensorProto::INT8: return "i8";
    case onnx::TensorProto::UINT8: return "u8";
    case onnx::TensorProto::INT16: return "i16";
    case onnx::TensorProto::INT32: return "i32";
    case onnx::TensorProto::INT64: return "i64";
    case onnx::TensorProto::BOOL: return "bool";
    default: return "f32";
  }
}

// The values of an int64 or float initializer (raw or typed storage).
std::vector<int64_t> int_values(const onnx::TensorProto& t) {
  std::vector<int64_t> v(t.int64_data().begin(), t.int64_data().end());
  if (v.empty() && t.has_raw_data() && t.data_type() == onnx::TensorProto::INT64) {
    const std::string& raw = t.raw_data();
    v.resize(raw.size() / 8);
    std::memcpy(v.data(), raw.data(), v.size() * 8);
  }
  return v;
}

std::vector<float> float_values(const onnx::TensorProto& t) {
  std::vector<float> v(t.float_data().begin(), t.float_data().end());
  if (v.empty() && t.has_raw_data() && t.data_type() == onnx::TensorProto::FLOAT) {
    const std::string& raw = t.raw_data();
    v.resize(raw.size() / 4);
    std::memcpy(v.data(), raw.data(), v.size() * 4);
  }
  return v;
}

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const onnx::AttributeProto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}
int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t fallback) {
  const onnx::AttributeProto* a = find_attr(n, name);
  return a ? a->i() : fallback;
}
float attr_float(const onnx::NodeProto& n, const std::string& name, float fallback) {
  const onnx::AttributeProto* a = find_attr(n, name);
  return a ? a->f() : fallback;
}
std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const std::string& name) {
  const onnx::AttributeProto* a = find_attr(n, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>();
}

// A shape the model gives (an initializer's, an input's, a Reshape target), checked
// before any size is computed from it: no negative dimension, and at most
// kMaxBufferBytes elements (beyond that the byte counts would overflow).
Status check_shape(const ShapeVec& shape, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return invalid_argument(fmt::format("{} has the negative dimension {}", what, d));
    if (d > 0 && n > kMaxBufferBytes / d)
      return invalid_argument(what + " " + shape_text(shape) + " has more than 2^50 elements");
    n *= d;
  }
  return Status();
}

ShapeVec shape_of(const onnx::ValueInfoProto& v) {
  ShapeVec s;
  if (!v.type().has_tensor_type()) return s;
  for (const auto& d : v.type().tensor_type().shape().dim()) s.push_back(d.has_dim_value() ? d.dim_value() : 1);
  return s;
}

const std::set<std::string>& supported_ops() {
  static const std::set<std::string> ops = {"Conv",
                                            "Relu",
                                            "Clip",
                                            "Sigmoid",
                                            "Tanh",
                                            "Add",
                                            "Sub",
                                            "Mul",
                                            "Div",
                                            "MatMul",
                                            "Gemm",
                                            "Softmax",
                                            "MaxPool",
                                            "AveragePool",
                                            "GlobalAveragePool",
                                            "Concat",
                                            "Reshape",
                                            "Flatten",
                                            "Transpose",
                                            "BatchNormalization",
                                            "LayerNormalization",
                                            "Identity",
                                            "Dropout"};
  return ops;
}

class Importer {
 public:
  Importer(const onnx::ModelProto& model, std::string source)
      : model_(model), source_(std::move(source)), b_(model.graph().name().empty() ? source_ : model.graph().name()) {}

  Expected<Graph> run() {
    const onnx::GraphProto& g = model_.graph();
    std::set<std::string> unsupported;
    for (const onnx::NodeProto& n : g.node())
      if (!supported_ops().count(n.op_type())) unsupported.insert(n.op_type());
    if (!unsupported.empty()) {
      std::string list;
      for (const std::string& u : unsupported) list += (list.empty() ? "" : ", ") + u;
      return unimplemented(source_ + ": unsupported ONNX operator" + (unsupported.size() > 1 ? "s " : " ") + list +
                           " (supported: Conv, Relu, Clip, Sigmoid, Tanh, Add, Sub, Mul, Div, MatMul, Gemm, Softmax, "
                           "MaxPool, AveragePool, GlobalAveragePool, Concat, Reshape, Flatten, Transpose, "
                           "BatchNormalization, LayerNormalization, Identity, Dropout)");
    }
    for (const onnx::TensorProto& t : g.initializer()) {
      init_[t.name()] = &t;
      ShapeVec s(t.dims().begin(), t.dims().end());
      TG_RETURN_IF_ERROR(check_shape(s, source_ + ": initializer " + quote_text(t.name())));
      value_[t.name()] = b_.constant(t.name(), s);
    }
    for (const onnx::ValueInfoProto& v : g.input()) {
      if (value_.count(v.name())) continue;  // an initializer listed as an input
      if (!v.type().has_tensor_type())
        return invalid_argument(source_ + ": input " + quote_text(v.name()) + " is not a tensor");
      const ShapeVec s = shape_of(v);
      TG_RETURN_IF_ERROR(check_shape(s, source_ + ": input " + quote_text(v.name())));
      value_[v.name()] = b_.input(v.name(), s, dtype_of(v.type().tensor_type().elem_type()));
    }
    for (const onnx::ValueInfoProto& v : g.value_info()) declared_[v.name()] = shape_of(v);
    for (const onnx::ValueInfoProto& v : g.output()) declared_[v.name()] = shape_of(v);
    for (int i = 0; i < g.node_size(); ++i) TG_RETURN_IF_ERROR(node(g.node(i), i));
    for (const onnx::ValueInfoProto& v : g.output()) {
      auto it = value_.find(v.name());
      if (it == value_.end())
        return invalid_argument(source_ + ": output " + quote_text(v.name()) + " is never produced");
      b_.mark_output(it->second);
    }
    Expected<Graph> graph = b_.finish();
    if (!graph.ok()) return Status(graph.status().code(), source_ + ": " + graph.status().message());
    return graph;
  }

 private:
  Expected<int> in(const onnx::NodeProto& n, int k) {
    if (k >= n.input_size() || n.input(k).empty())
      return invalid_argument(fmt::format("{}input {} is missing", where(n), k));
    auto it = value_.find(n.input(k));
    if (it == value_.end())
      return invalid_argument(where(n) + "reads " + quote_text(n.input(k)) + " before it is defined");
    return it->second;
  }
  std::string where(const onnx::NodeProto& n) const {
    return source_ + ": node '" + (n.name().empty() ? n.op_type() : n.name()) + "' (" + n.op_type() + "): ";
  }
  const onnx::TensorProto* init(const onnx::NodeProto& n, int k) const {
    if (k >= n.input_size()) return nullptr;
    auto it = init_.find(n.input(k));
    return it == init_.end() ? nullptr : it->second;
  }
  // A per-channel constant [C] seen as [C, 1, 1] against NCHW.
  int channel_constant(const std::string& name, int64_t channels) {
    return b_.constant(name + ":c11", {channels, 1, 1});
  }

  // An intermediate result of a node that becomes two operators (conv + bias, ...).
  Status define_part(const onnx::NodeProto& n, int tensor, const std::string& suffix) {
    if (!b_.error().ok()) return Status(b_.error().code(), where(n) + b_.error().message());
    if (tensor >= first_new_) b_.rename(tensor, n.output(0) + suffix);
    return Status();
  }

  Status define(const onnx::NodeProto& n, int tensor) {
    if (!b_.error().ok()) return Status(b_.error().code(), where(n) + b_.error().message());
    const std::string& name = n.output(0);
    if (tensor >= first_new_) b_.rename(tensor, name);
    value_[name] = tensor;
    auto it = declared_.find(name);
    if (it != declared_.end() && !it->second.empty() && it->second != b_.shape(tensor))
      return invalid_argument(where(n) + quote_text(name) + " is declared " + shape_text(it->second) +
                              " but computes to " + shape_text(b_.shape(tensor)));
    return Status();
  }

  Status node(const onnx::NodeProto& n, int index) {
    first_new_ = b_.tensor_count();
    const std::string& op = n.op_type();
    // Every supported operator names its output (read as n.output(0) below).
    if (n.output_size() < 1 || n.output(0).empty()) return invalid_argument(where(n) + "has no output");
    if (op == "Identity" || op == "Dropout") {
      TG_ASSIGN_OR_RETURN(int x, in(n, 0));
      value_[n.output(0)] = x;
      return Status();
    }
    TG_ASSIGN_OR_RETURN(int x, in(n, 0));
    int y = -1;
    if (op == "Conv") {
      TG_ASSIGN_OR_RETURN(int w, in(n, 1));
      const ShapeVec ws = b_.shape(w);
      if (ws.size() != 4) return unimplemented(where(n) + "only 2-D convolutions are supported");
      std::vector<int64_t> strides = attr_ints(n, "strides"), pads = attr_ints(n, "pads"),
                           dil = attr_ints(n, "dilations");
      if (strides.empty()) strides = {1, 1};
      if (strides.size() != 2) return invalid_argument(where(n) + "a 2-D convolution needs 2 strides");
      for (int64_t d : dil)
        if (d != 1) return unimplemented(where(n) + "dilated convolutions are not supported");
      const onnx::AttributeProto* ap = find_attr(n, "auto_pad");
      const std::string auto_pad = ap ? ap->s() : "NOTSET";
      int64_t ph = 0, pw = 0;
      if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        ph = (ws[2] - 1) / 2;
        pw = (ws[3] - 1) / 2;
      } else if (!pads.empty()) {
        if (pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3])
          return unimplemented(where(n) + "asymmetric padding is not supported");
        ph = pads[0];
        pw = pads[1];
      }
      y = b_.conv2d_with(x, w, strides[0], strides[1], ph, pw, attr_int(n, "group", 1));
      if (n.input_size() > 2 && !n.input(2).empty()) {
        TG_RETURN_IF_ERROR(define_part(n, y, ":conv"));
        y = b_.binary("add", y, channel_constant(n.input(2), ws[0]));
      }
    } else if (op == "Relu" || op == "Sigmoid" || op == "Tanh") {
      y = b_.unary(op == "Relu" ? "relu" : op == "Sigmoid" ? "sigmoid" : "tanh", x);
    } else if (op == "Clip") {
      float lo = attr_float(n, "min", -3.4e38f), hi = attr_float(n, "max", 3.4e38f);
      if (const onnx::TensorProto* t = init(n, 1); t && !float_values(*t).empty()) lo = float_values(*t)[0];
      if (const onnx::TensorProto* t = init(n, 2); t && !float_values(*t).empty()) hi = float_values(*t)[0];
      if (lo == 0 && hi == 6) {
        y = b_.unary("relu6", x);
      } else if (lo == 0 && hi > 3e38f) {
        y = b_.unary("relu", x);
      } else {
        return unimplemented(where(n) + "only Clip to [0, 6] (ReLU6) or [0, inf) is supported");
      }
    } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
      TG_ASSIGN_OR_RETURN(int x2, in(n, 1));
      std::string t = op == "Add" ? "add" : op == "Sub" ? "sub" : op == "Mul" ? "mul" : "div";
      y = b_.binary(t, x, x2);
    } else if (op == "MatMul") {
      TG_ASSIGN_OR_RETURN(int w, in(n, 1));
      y = b_.matmul(x, w);
    } else if (op == "Gemm") {
      TG_ASSIGN_OR_RETURN(int w, in(n, 1));
      if (attr_int(n, "transA", 0) != 0 || attr_float(n, "alpha", 1) != 1 || attr_float(n, "beta", 1) != 1)
        return unimplemented(where(n) + "only Gemm with transA = 0, alpha = beta = 1 is supported");
      y = b_.matmul(x, w, attr_int(n, "transB", 0) != 0);
      if (n.input_size() > 2 && !n.input(2).empty()) {
        TG_ASSIGN_OR_RETURN(int c, in(n, 2));
        TG_RETURN_IF_ERROR(define_part(n, y, ":matmul"));
        y = b_.binary("add", y, c);
      }
    } else if (op == "Softmax" || op == "LayerNormalization") {
      const int64_t rank = int64_t(b_.shape(x).size());
      int64_t axis = attr_int(n, "axis", -1);
      if (axis < 0) axis += rank;
      if (rank == 0) return invalid_argument(where(n) + "needs an input of rank 1 or more");
      if (axis != rank - 1) return unimplemented(where(n) + "only the last axis is supported");
      if (op == "Softmax") {
        y = b_.softmax(x);
      } else {
        TG_ASSIGN_OR_RETURN(int gamma, in(n, 1));
        int beta = -1;
        if (n.input_size() > 2 && !n.input(2).empty()) {
          TG_ASSIGN_OR_RETURN(beta, in(n, 2));
        } else {
          beta = b_.constant(n.output(0) + ":beta", {b_.shape(x).back()});
        }
        y = b_.layernorm_with(x, gamma, beta);
      }
    } else if (op == "MaxPool" || op == "AveragePool") {
      const std::vector<int64_t> k = attr_ints(n, "kernel_shape"), pads = attr_ints(n, "pads");
      std::vector<int64_t> s = attr_ints(n, "strides");
      if (s.empty()) s = {1, 1};
      if (k.size() != 2 || k[0] != k[1] || s.size() != 2 || s[0] != s[1] ||
          (!pads.empty() && (pads.size() != 4 || pads[0] != pads[1] || pads[0] != pads[2] || pads[0] != pads[3])))
        return unimplemented(where(n) + "only square kernels, equal strides and equal pads are supported");
      y = b_.pool(op == "MaxPool" ? "maxpool" : "avgpool", x, k[0], s[0], pads.empty() ? 0 : pads[0]);
    } else if (op == "GlobalAveragePool") {
      const ShapeVec xs = b_.shape(x);
      const int pooled = b_.global_avgpool(x);
      TG_RETURN_IF_ERROR(define_part(n, pooled, ":pool"));
      y = b_.reshape(pooled, {xs[0], xs[1], 1, 1});
    } else if (op == "Concat") {
      std::vector<int> xs;
      for (int k = 0; k < n.input_size(); ++k) {
        TG_ASSIGN_OR_RETURN(int t, in(n, k));
        xs.push_back(t);
      }
      int64_t axis = attr_int(n, "axis", 0);
      if (axis < 0) axis += int64_t(b_.shape(x).size());
      y = b_.concat(xs, axis);
    } else if (op == "Reshape" || op == "Flatten") {
      const ShapeVec xs = b_.shape(x);
      ShapeVec target;
      if (op == "Flatten") {
        int64_t axis = attr_int(n, "axis", 1);
        if (axis < 0) axis += int64_t(xs.size());
        int64_t a = 1, c = 1;
        for (size_t i = 0; i < xs.size(); ++i) (int64_t(i) < axis ? a : c) *= xs[i];
        target = {a, c};
      } else {
        const onnx::TensorProto* t = init(n, 1);
        if (!t) return unimplemented(where(n) + "the target shape must be an initializer");
        target = int_values(*t);
        int64_t infer = -1;
        for (size_t i = 0; i < target.size(); ++i) {
          if (target[i] == 0 && i < xs.size()) target[i] = xs[i];
          if (target[i] == -1 && infer < 0) infer = int64_t(i);
        }
        ShapeVec known_dims = target;
        if (infer >= 0) known_dims.erase(known_dims.begin() + infer);
        TG_RETURN_IF_ERROR(check_shape(known_dims, where(n) + "the target shape"));
        const int64_t known = shape_elements(known_dims);
        if (infer >= 0 && known > 0) target[size_t(infer)] = shape_elements(xs) / known;
      }
      y = b_.reshape(x, target);
    } else if (op == "Transpose") {
      std::vector<int64_t> perm = attr_ints(n, "perm");
      if (perm.empty())
        for (int64_t i = int64_t(b_.shape(x).size()); i-- > 0;) perm.push_back(i);
      y = b_.transpose(x, perm);
    } else if (op == "BatchNormalization") {
      const int64_t c = b_.shape(x).size() > 1 ? b_.shape(x)[1] : 1;
      const int scaled = b_.binary("mul", x, channel_constant(n.output(0) + ":scale", c));
      TG_RETURN_IF_ERROR(define_part(n, scaled, ":scale"));
      y = b_.binary("add", scaled, channel_constant(n.output(0) + ":shift", c));
    }
    (void)index;
    return define(n, y);
  }

  const onnx::ModelProto& model_;
  std::string source_;
  GraphBuilder b_;
  std::map<std::string, int> value_;
  std::map<std::string, const onnx::TensorProto*> init_;
  std::map<std::string, ShapeVec> declared_;
  int first_new_ = 0;
};

}  // namespace

bool onnx_import_available() { return true; }

Expected<Graph> import_onnx_bytes(const std::string& bytes, const std::string& source) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes))
    return invalid_argument(source + ": not an ONNX model (the protobuf does not parse)");
  if (!model.has_graph()) return invalid_argument(source + ": the ONNX model has no graph");
  return Importer(model, source).run();
}

Expected<Graph> import_onnx_file(const std::string& path, const FileAccess& files) {
  TG_ASSIGN_OR_RETURN(std::string bytes, files.read(path, kMaxOnnxFileBytes));
  return import_onnx_bytes(bytes, path);
}

}  // namespace tensorgym

#else  // !TENSORGYM_HAVE_ONNX

namespace tensorgym {

bool onnx_import_available() { return false; }

Expected<Graph> import_onnx_bytes(const std::string&, const std::string& source) {
  return unimplemented(source + ": this build has no ONNX import (install libonnx-dev and reconfigure)");
}

Expected<Graph> import_onnx_file(const std::string& path, const FileAccess&) { return import_onnx_bytes("", path); }

}  // namespace tensorgym

#endif
