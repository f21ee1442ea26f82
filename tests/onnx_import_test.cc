// ONNX import: small models written here with the ONNX protobuf API, imported,
// planned and checked; unsupported operators are named.
#include "datasets/onnx_import.h"

#include <gtest/gtest.h>

#include <fstream>

#include "datasets/graphs.h"
#include "memplan/planner.h"
#include "tests/test_support.h"

#ifdef TENSORGYM_HAVE_ONNX
#include <onnx/onnx_pb.h>
#endif

namespace tensorgym {
namespace {

#ifdef TENSORGYM_HAVE_ONNX

void set_shape(onnx::ValueInfoProto* v, const std::string& name, std::vector<int64_t> dims) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}

onnx::TensorProto* add_init(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims) {
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

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in,
                          std::vector<std::string> out) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(out[0] + "_node");
  for (const std::string& s : in) n->add_input(s);
  for (const std::string& s : out) n->add_output(s);
  return n;
}

void add_ints(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

// A small residual CNN: conv(bias) -> relu -> conv -> add(skip) -> relu -> global
// pool -> flatten -> gemm.
onnx::ModelProto small_cnn() {
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

std::string write_model(const onnx::ModelProto& m, const std::string& name) {
  const std::string path = testing::TempDir() + "/" + name;
  std::ofstream out(path, std::ios::binary);
  m.SerializeToOstream(&out);
  return path;
}

TEST(OnnxImport, ImportsASmallCnnWithItsShapes) {
  ASSERT_TRUE(onnx_import_available());
  const std::string path = write_model(small_cnn(), "small_cnn.onnx");
  Expected<Graph> g = import_onnx_file(path);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->name, "small_cnn");
  const int y = g->find_tensor("y");
  ASSERT_GE(y, 0);
  EXPECT_EQ(g->tensors[size_t(y)].kind, TensorKind::kOutput);
  EXPECT_EQ(g->tensors[size_t(y)].shape, (std::vector<int64_t>{1, 10}));
  EXPECT_EQ(g->tensors[size_t(g->find_tensor("r1"))].shape, (std::vector<int64_t>{1, 8, 16, 16}));
  EXPECT_EQ(g->tensors[size_t(g->find_tensor("w1"))].kind, TensorKind::kConstant);
  EXPECT_EQ(g->tensors[size_t(g->find_tensor("x"))].kind, TensorKind::kInput);
  // Conv with bias is a conv and a (fusible, in-place) add; the residual add may
  // reuse c2 but never the graph input x.
  const GraphOp& add = g->ops[size_t(g->tensors[size_t(g->find_tensor("s"))].producer)];
  EXPECT_EQ(add.type, "add");
  EXPECT_EQ(add.inplace_inputs, (std::vector<int>{0, 1}));
  // Plans verify; in-place is taken (the skip input x keeps the peak where it is).
  GraphPlanOptions off, on;
  off.planner = on.planner = "best_fit_best";
  on.inplace = true;
  Expected<GraphPlan> a = plan_graph(*g, off), b = plan_graph(*g, on);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_LE(b->arena, a->arena);
  // Bias add, relu, residual add (on c2), relu, the two reshapes, the gemm bias add.
  EXPECT_EQ(b->decisions.aliases.size(), 7u);
  // Through the graph URI too.
  Expected<GraphBenchmark> bench = resolve_graph("file://" + path);
  ASSERT_TRUE(bench.ok()) << bench.status().to_string();
  EXPECT_EQ(bench->graph->ops.size(), g->ops.size());
}

TEST(OnnxImport, ImportsATransformerBlockPiece) {
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
  Expected<Graph> graph = import_onnx_bytes(m.SerializeAsString(), "attention.onnx");
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  EXPECT_EQ(graph->tensors[size_t(graph->find_tensor("scores"))].shape, (std::vector<int64_t>{16, 16}));
  const GraphOp& softmax = graph->ops[size_t(graph->tensors[size_t(graph->find_tensor("probs"))].producer)];
  EXPECT_GT(softmax.scratch_bytes, 0);
  GraphPlanOptions best;
  best.planner = "best";
  best.time_limit_s = 1;
  Expected<GraphPlan> plan = plan_graph(*graph, best);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_TRUE(verify_graph_plan(*graph, plan->decisions, plan->offsets).ok());
}

TEST(OnnxImport, UnsupportedOperatorsAreNamed) {
  onnx::ModelProto m = small_cnn();
  add_node(m.mutable_graph(), "LSTM", {"y"}, {"z"});
  add_node(m.mutable_graph(), "NonMaxSuppression", {"z"}, {"w"});
  Expected<Graph> g = import_onnx_bytes(m.SerializeAsString(), "bad.onnx");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kUnimplemented);
  EXPECT_CONTAINS(g.status().message(), "LSTM");
  EXPECT_CONTAINS(g.status().message(), "NonMaxSuppression");
  EXPECT_CONTAINS(g.status().message(), "bad.onnx");
}

TEST(OnnxImport, ShapeMismatchesAndBadFilesAreErrors) {
  onnx::ModelProto m = small_cnn();
  set_shape(m.mutable_graph()->add_value_info(), "c2", {1, 8, 15, 15});
  EXPECT_CONTAINS(import_onnx_bytes(m.SerializeAsString(), "m.onnx").status().message(), "declared");
  EXPECT_EQ(import_onnx_bytes("not a model", "junk.onnx").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(import_onnx_file("/nonexistent/m.onnx").status().code(), StatusCode::kNotFound);
  onnx::ModelProto asym = small_cnn();
  onnx::NodeProto* c = asym.mutable_graph()->mutable_node(0);
  c->mutable_attribute(0)->set_ints(2, 0);
  EXPECT_CONTAINS(import_onnx_bytes(asym.SerializeAsString(), "a.onnx").status().message(), "asymmetric");
}

#else

TEST(OnnxImport, ReportsThatItIsNotBuilt) {
  EXPECT_FALSE(onnx_import_available());
  EXPECT_EQ(import_onnx_file("/tmp/x.onnx").status().code(), StatusCode::kUnimplemented);
}

#endif

}  // namespace
}  // namespace tensorgym
