#pragma once
// Small ONNX models written with the ONNX protobuf API, and the helpers that write
// them: the models of tests/onnx_import_test.cc, which fuzz/seed_writer.cc also writes
// as seeds of the ONNX import fuzzer. Only with ONNX in the build.
#ifdef TENSORGYM_HAVE_ONNX

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tensorgym::onnx_models {

inline void set_shape(onnx::ValueInfoProto* v, const std::string& name, std::vector<int64_t> dims) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}

inline onnx::TensorProto* add_init(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims) {
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims) {
    t->add_dims(d);
    n *= d;
  }
  for (int64_t i = 0; i < n; ++i) t->add_float_data(0.01f);
  return t;
}

inline onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in,
                          std::vector<std::string> out) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(out[0] + "_node");
  for (const std::string& s : in) n->add_input(s);
  for (const std::string& s : out) n->add_output(s);
  return n;
}

inline void add_ints(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

// A small residual CNN: conv(bias) -> relu -> conv -> add(skip) -> relu -> global
// pool -> flatten -> gemm.
inline onnx::ModelProto small_cnn() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("small_cnn");
  set_shape(g->add_input(), "x", {1, 8, 16, 16});
  add_init(g, "w1", {8, 8, 3, 3});
  add_init(g, "b1", {8});
  add_init(g, "w2", {8, 8, 3, 3});
  add_init(g, "fc_w", {10, 8});
  add_init(g, "fc_b", {10});
  onnx::NodeProto* c1 = add_node(g, "Conv", {"x", "w1", "b1"}, {"c1"});
  add_ints(c1, "pads", {1, 1, 1, 1});
  add_node(g, "Relu", {"c1"}, {"r1"});
  onnx::NodeProto* c2 = add_node(g, "Conv", {"r1", "w2"}, {"c2"});
  add_ints(c2, "pads", {1, 1, 1, 1});
  add_node(g, "Add", {"c2", "x"}, {"s"});
  add_node(g, "Relu", {"s"}, {"r2"});
  add_node(g, "GlobalAveragePool", {"r2"}, {"p"});
  add_node(g, "Flatten", {"p"}, {"f"});
  onnx::NodeProto* fc = add_node(g, "Gemm", {"f", "fc_w", "fc_b"}, {"y"});
  onnx::AttributeProto* tb = fc->add_attribute();
  tb->set_name("transB");
  tb->set_type(onnx::AttributeProto::INT);
  tb->set_i(1);
  set_shape(g->add_value_info(), "r1", {1, 8, 16, 16});
  set_shape(g->add_output(), "y", {1, 10});
  return m;
}

// A piece of a transformer block: projections, a reshape and transposes, attention
// scores, softmax, layer normalization.
inline onnx::ModelProto attention_block() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("attention");
  set_shape(g->add_input(), "h", {16, 32});
  add_init(g, "wq", {32, 32});
  add_init(g, "wk", {32, 32});
  add_init(g, "gamma", {32});
  add_init(g, "beta", {32});
  onnx::TensorProto* shape = g->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(3);
  for (int64_t d : {16, 4, 8}) shape->add_int64_data(d);
  add_node(g, "MatMul", {"h", "wq"}, {"q"});
  add_node(g, "MatMul", {"h", "wk"}, {"k"});
  add_node(g, "Reshape", {"q", "shape"}, {"q3"});
  onnx::NodeProto* t = add_node(g, "Transpose", {"q3"}, {"qt"});
  add_ints(t, "perm", {1, 0, 2});
  onnx::NodeProto* kt = add_node(g, "Transpose", {"k"}, {"kT"});
  add_ints(kt, "perm", {1, 0});
  add_node(g, "MatMul", {"q", "kT"}, {"scores"});
  add_node(g, "Softmax", {"scores"}, {"probs"});
  add_node(g, "MatMul", {"probs", "h"}, {"ctx"});
  add_node(g, "LayerNormalization", {"ctx", "gamma", "beta"}, {"out"});
  set_shape(g->add_output(), "out", {16, 32});
  set_shape(g->add_output(), "qt", {4, 16, 8});
  return m;
}

}  // namespace tensorgym::onnx_models

#endif  // TENSORGYM_HAVE_ONNX
