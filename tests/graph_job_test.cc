// A whole model graph measured in a sandboxed worker (memplan/exec/graph_job.h): the
// graph and its plan cross to the worker as a GraphExecution (graph_wire.h) and back
// unchanged; the worker runs the plan in its arena, checks the outputs against a run
// with every tensor apart, and times whole runs; a plan that lets live tensors share
// bytes is WRONG_ANSWER, a malformed one INSTANTIATION. Real `tensorgym worker`
// processes; every wait bounded by the runner's deadlines.
#include <gtest/gtest.h>
#include <unistd.h>

#include "codegen/measure/measure_error.h"
#include "codegen/measure/runner.h"
#include "datasets/graphs.h"
#include "memplan/exec/graph_job.h"
#include "memplan/exec/graph_wire.h"
#include "memplan/planner.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

GraphExecution planned(const char* uri) {
  Expected<GraphBenchmark> bench = resolve_graph(uri);
  EXPECT_TRUE(bench.ok()) << bench.status().to_string();
  GraphPlanOptions o;
  o.planner = "best_fit_best";
  o.inplace = true;
  o.best_chooses = false;
  Expected<GraphPlan> plan = plan_graph(*bench->graph, o);
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  GraphExecution e;
  e.graph = *bench->graph;
  e.decisions = plan->decisions;
  e.offsets = plan->offsets;
  e.alignment = o.alignment;
  e.seed = 7;
  return e;
}

MeasureRequest graph_request(const GraphExecution& e) {
  MeasureRequest r;
  r.graph = serialize_graph_execution(e);
  r.settings.repeat = 2;
  r.settings.min_repeat_ms = 1;
  r.settings.threads = 1;
  r.settings.compile_timeout_s = 120;
  r.settings.run_timeout_s = 60;
  return r;
}

Runner& runner() {
  static Runner* r = [] {
    RunnerOptions o;
    o.worker_binary = TENSORGYM_BINARY_DIR "/bin/tensorgym";
    return new Runner(o);
  }();
  return *r;
}

TEST(GraphWire, AnExecutionRoundTripsExactly) {
  const GraphExecution e = planned("benchmark://graphs-v0/mixed_3");
  const std::string bytes = serialize_graph_execution(e);
  EXPECT_EQ(serialize_graph_execution(e), bytes);  // deterministic
  Expected<GraphExecution> back = parse_graph_execution(bytes);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(serialize_graph_execution(*back), bytes);
  ASSERT_EQ(back->graph.tensors.size(), e.graph.tensors.size());
  ASSERT_EQ(back->graph.ops.size(), e.graph.ops.size());
  for (size_t t = 0; t < e.graph.tensors.size(); ++t) {
    EXPECT_EQ(back->graph.tensors[t].name, e.graph.tensors[t].name);
    EXPECT_EQ(back->graph.tensors[t].shape, e.graph.tensors[t].shape);
    EXPECT_EQ(back->graph.tensors[t].kind, e.graph.tensors[t].kind);
    EXPECT_EQ(back->graph.tensors[t].consumers, e.graph.tensors[t].consumers);
  }
  for (size_t o = 0; o < e.graph.ops.size(); ++o) {
    EXPECT_EQ(back->graph.ops[o].type, e.graph.ops[o].type);
    EXPECT_EQ(back->graph.ops[o].attrs, e.graph.ops[o].attrs);
    EXPECT_EQ(back->graph.ops[o].fattrs, e.graph.ops[o].fattrs);
    EXPECT_EQ(back->graph.ops[o].inplace_inputs, e.graph.ops[o].inplace_inputs);
    EXPECT_EQ(back->graph.ops[o].scratch_bytes, e.graph.ops[o].scratch_bytes);
  }
  EXPECT_EQ(back->decisions.order, e.decisions.order);
  EXPECT_EQ(back->decisions.aliases, e.decisions.aliases);
  EXPECT_EQ(back->offsets, e.offsets);
  EXPECT_EQ(back->seed, 7u);
}

TEST(GraphWire, MalformedExecutionsAreNamed) {
  EXPECT_EQ(parse_graph_execution("\xff\xff\xff").status().code(), StatusCode::kInvalidArgument);
  GraphExecution e = planned("benchmark://graphs-v0/mixed_3");
  GraphExecution bad = e;
  bad.graph.tensors[0].bytes += 4;
  EXPECT_CONTAINS(parse_graph_execution(serialize_graph_execution(bad)).status().message(), "shape and dtype make");
  bad = e;
  bad.graph.tensors[1].shape[0] = -3;
  EXPECT_CONTAINS(parse_graph_execution(serialize_graph_execution(bad)).status().message(), "dimension -3");
  bad = e;
  bad.decisions.order.push_back(int(e.graph.ops.size()) + 5);
  EXPECT_CONTAINS(parse_graph_execution(serialize_graph_execution(bad)).status().message(), "out of range");
  bad = e;
  bad.graph.ops[0].outputs[0] = 1 << 20;
  EXPECT_CONTAINS(parse_graph_execution(serialize_graph_execution(bad)).status().message(), "does not exist");
  bad = e;
  bad.alignment = 0;
  EXPECT_CONTAINS(parse_graph_execution(serialize_graph_execution(bad)).status().message(), "alignment");
}

TEST(GraphJob, AWorkerRunsTheWholeGraphInItsArenaAndTimesIt) {
  const GraphExecution e = planned("benchmark://graphs-v0/mobilenet_v2@32");
  MeasureResult r = runner().measure(graph_request(e));
  ASSERT_TRUE(r.ok()) << measure_error_name(r.error) << ": " << r.error_message;
  EXPECT_TRUE(r.correct);
  EXPECT_GT(r.checked_points, 0);
  EXPECT_EQ(r.max_abs_error, 0.0);  // the same kernels in the same order: bit for bit
  EXPECT_GT(r.runtime.median_s, 0.0);
  EXPECT_EQ(r.runtime.repeat, 2);
  EXPECT_GT(r.compile_ms, 0.0);
  EXPECT_EQ(r.target, "cpu");
  EXPECT_NE(r.provenance.worker_pid, int64_t(getpid()));
  // Compile only: nothing runs.
  MeasureRequest only = graph_request(e);
  only.compile_only = true;
  MeasureResult c = runner().measure(only);
  ASSERT_TRUE(c.ok()) << c.error_message;
  EXPECT_EQ(c.runtime.repeat, 0);
}

TEST(GraphJob, APlanThatOverlapsLiveTensorsIsAWrongAnswer) {
  GraphExecution e = planned("benchmark://graphs-v0/mobilenet_v2@32");
  for (int64_t& offset : e.offsets) offset = 0;  // everything in the same bytes
  MeasureResult r = runner().measure(graph_request(e));
  EXPECT_EQ(r.error, MeasureError::kWrongAnswer) << r.error_message;
  EXPECT_CONTAINS(r.error_message, "share bytes");
  EXPECT_FALSE(r.correct);
}

TEST(GraphJob, MalformedRequestsAreInstantiationErrors) {
  GraphExecution e = planned("benchmark://graphs-v0/mixed_3");
  MeasureRequest garbage = graph_request(e);
  garbage.graph = "not a graph";
  EXPECT_EQ(runner().measure(garbage).error, MeasureError::kInstantiation);
  GraphExecution negative = e;
  negative.offsets[0] = -64;
  MeasureResult r = runner().measure(graph_request(negative));
  EXPECT_EQ(r.error, MeasureError::kInstantiation);
  EXPECT_CONTAINS(r.error_message, "offset -64");
  GraphExecution few = e;
  few.offsets.pop_back();
  EXPECT_CONTAINS(runner().measure(graph_request(few)).error_message, "offsets for");
  GraphExecution unordered = e;
  std::reverse(unordered.decisions.order.begin(), unordered.decisions.order.end());
  EXPECT_EQ(runner().measure(graph_request(unordered)).error, MeasureError::kInstantiation);
  MeasureRequest gpu = graph_request(e);
  gpu.target = "cuda";
  EXPECT_CONTAINS(runner().measure(gpu).error_message, "graphs run on the cpu target only");
  MeasureRequest both = graph_request(e);
  both.program = "input A: f32[4]\nB[i] = A[i]\n";
  EXPECT_CONTAINS(runner().measure(both).error_message, "no program or schedule");
  // In this process, without a worker: the same pipeline.
  GraphKernelCache cache;
  EXPECT_EQ(run_graph_job(garbage, {}, cache).error, MeasureError::kInstantiation);
}

}  // namespace
}  // namespace tensorgym
