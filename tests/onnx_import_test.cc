// ONNX import: small models written with the ONNX protobuf API (tests/onnx_models.h),
// imported, planned and checked; unsupported operators are named.
#include "datasets/onnx_import.h"

#include <gtest/gtest.h>

#include <fstream>

#include "datasets/graphs.h"
#include "memplan/planner.h"
#include "tests/onnx_models.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

#ifdef TENSORGYM_HAVE_ONNX

using onnx_models::add_node;
using onnx_models::set_shape;
using onnx_models::small_cnn;

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
  onnx::ModelProto m = onnx_models::attention_block();
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
