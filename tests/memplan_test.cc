// Memory planning: the verifier on hand-made plans, lower bounds, every planner on
// every graphs-v0 graph and on random instances (verified, deterministic), the
// legality checks of orders and in-place choices, memory limits, CSV formats, and
// whole-graph execution in one arena against a buffer per tensor (a deliberately
// overlapping plan must corrupt the outputs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "datasets/graphs.h"
#include "datasets/lifetimes_csv.h"
#include "datasets/registry.h"
#include "memplan/exec/arena_exec.h"
#include "memplan/graph_builder.h"
#include "memplan/offset_search.h"
#include "memplan/order.h"
#include "memplan/planner.h"
#include "memplan/verify.h"
#include "plot/plan_svg.h"
#include "support/random.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

Instance make_instance(std::vector<Buffer> buffers, int64_t alignment = 1) {
  Instance inst;
  inst.buffers = std::move(buffers);
  inst.alignment = alignment;
  return inst;
}

// Graph-like random instances: short lifetimes, a few long ones, mixed sizes.
Instance random_instance(uint64_t seed, int n) {
  Rng rng(seed);
  Instance inst;
  for (int i = 0; i < n; ++i) {
    Buffer b;
    b.id = "b" + std::to_string(i);
    b.lower = rng.range(0, n);
    b.upper = b.lower + (rng.chance(0.1) ? rng.range(1, n) : rng.range(1, 6));
    b.size = rng.range(1, 64) * (rng.chance(0.2) ? 64 : 1);
    inst.buffers.push_back(b);
  }
  return inst;
}

const Graph& graph(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const Graph>>* cache =
      new std::map<std::string, std::shared_ptr<const Graph>>();
  auto it = cache->find(name);
  if (it == cache->end()) {
    Expected<GraphBenchmark> b = resolve_graph("benchmark://graphs-v0/" + name);
    EXPECT_TRUE(b.ok()) << b.status().to_string();
    it = cache->emplace(name, b->graph).first;
  }
  return *it->second;
}

// ---- the verifier --------------------------------------------------------------------

TEST(Verifier, AcceptsValidPlansAndReportsTheArena) {
  Instance inst = make_instance({{"a", 0, 3, 4}, {"b", 3, 9, 4}, {"c", 0, 9, 4}, {"d", 9, 21, 4}, {"e", 0, 21, 4}});
  // MiniMalloc's example: capacity 12.
  Expected<int64_t> arena = verify_offsets(inst, {8, 8, 4, 4, 0});
  ASSERT_TRUE(arena.ok()) << arena.status().to_string();
  EXPECT_EQ(*arena, 12);
  EXPECT_EQ(peak_live_bytes(inst), 12);
  // Half-open lifetimes: a and b touch at 3 and may share bytes.
  EXPECT_TRUE(verify_offsets(make_instance({{"a", 0, 3, 8}, {"b", 3, 5, 8}}), {0, 0}).ok());
  // Zero-size buffers never conflict.
  EXPECT_TRUE(verify_offsets(make_instance({{"a", 0, 3, 8}, {"z", 0, 3, 0}}), {0, 0}).ok());
}

TEST(Verifier, ReportsTheFirstViolation) {
  Instance inst = make_instance({{"a", 0, 4, 8}, {"b", 2, 6, 8}, {"c", 5, 9, 8}});
  Expected<int64_t> bad = verify_offsets(inst, {0, 4, 16});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_CONTAINS(bad.status().message(), "'a'");
  EXPECT_CONTAINS(bad.status().message(), "'b'");
  EXPECT_CONTAINS(bad.status().message(), "bytes [4, 12)");
  // A buffer inside another, and one covering another entirely.
  EXPECT_FALSE(verify_offsets(make_instance({{"a", 0, 4, 16}, {"b", 1, 2, 4}}), {0, 8}).ok());
  EXPECT_FALSE(verify_offsets(make_instance({{"a", 0, 4, 4}, {"b", 1, 2, 16}}), {8, 0}).ok());
  // Plans that do not fit the instance.
  EXPECT_EQ(verify_offsets(inst, {0, 8}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(verify_offsets(inst, {0, -1, 8}).status().code(), StatusCode::kInvalidArgument);
  Instance aligned = make_instance({{"a", 0, 4, 64}, {"b", 0, 4, 64}}, 64);
  EXPECT_CONTAINS(verify_offsets(aligned, {0, 65}).status().message(), "not a multiple of the alignment 64");
  EXPECT_TRUE(verify_offsets(aligned, {0, 64}).ok());
}

TEST(Verifier, AgreesWithABruteForceCheckOnRandomPlans) {
  for (uint64_t seed = 0; seed < 200; ++seed) {
    Instance inst = random_instance(seed, 12);
    Rng rng(seed + 1000);
    Offsets offsets;
    for (size_t i = 0; i < inst.buffers.size(); ++i) offsets.push_back(rng.range(0, 300));
    bool clash = false;
    for (size_t i = 0; i < inst.buffers.size(); ++i)
      for (size_t j = i + 1; j < inst.buffers.size(); ++j) {
        const Buffer &a = inst.buffers[i], &b = inst.buffers[j];
        const bool time = a.lower < b.upper && b.lower < a.upper && a.size > 0 && b.size > 0;
        const bool space = offsets[i] < offsets[j] + b.size && offsets[j] < offsets[i] + a.size;
        clash |= time && space;
      }
    EXPECT_EQ(verify_offsets(inst, offsets).ok(), !clash) << "seed " << seed;
  }
}

TEST(Verifier, PlanCsvRoundTripsAndNamesBadLines) {
  Instance inst = make_instance({{"x", 0, 2, 4}, {"y", 1, 3, 4}});
  const std::string csv = offsets_to_csv(inst, {0, 4});
  EXPECT_EQ(csv, "id,offset\nx,0\ny,4\n");
  Expected<Offsets> back = offsets_from_csv(inst, csv, "plan.csv");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, (Offsets{0, 4}));
  EXPECT_CONTAINS(offsets_from_csv(inst, "id,offset\nx,0\n", "p").status().message(), "'y' has no offset");
  EXPECT_CONTAINS(offsets_from_csv(inst, "id,offset\nz,0\n", "p").status().message(), "p:2: no buffer 'z'");
  EXPECT_CONTAINS(offsets_from_csv(inst, "id,off\n", "p").status().message(), "header");
}

TEST(Lifetimes, CsvParsesAndRejectsBadInput) {
  Expected<Instance> inst = parse_lifetimes_csv("id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\n", "t.csv");
  ASSERT_TRUE(inst.ok());
  ASSERT_EQ(inst->buffers.size(), 2u);
  EXPECT_EQ(inst->buffers[1].id, "b2");
  EXPECT_EQ(lifetimes_to_csv(*inst), "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\n");
  EXPECT_CONTAINS(parse_lifetimes_csv("id,lower,upper,size\nb,3,3,4\n", "t.csv").status().message(), "t.csv:2:");
  EXPECT_CONTAINS(parse_lifetimes_csv("id,lower,upper,size\nb,0,3,x\n", "t.csv").status().message(), "integers");
  EXPECT_CONTAINS(parse_lifetimes_csv("id,lower,upper,size\nb,0,3,1\nb,0,3,1\n", "t.csv").status().message(), "twice");
  EXPECT_CONTAINS(parse_lifetimes_csv("a,b\n", "t.csv").status().message(), "header");
  EXPECT_EQ(load_lifetimes_csv("/nonexistent/x.csv").status().code(), StatusCode::kNotFound);
}

// ---- offset planners ------------------------------------------------------------------

TEST(OffsetPlanners, EveryPlannerGivesVerifiedDeterministicPlansOnRandomInstances) {
  OffsetPlannerOptions options;
  options.time_limit_s = 0.5;
  for (uint64_t seed = 0; seed < 12; ++seed) {
    Instance inst = random_instance(seed, 40 + int(seed) * 10);
    const int64_t lb = peak_live_bytes(inst);
    for (const std::string& p : offset_planner_names()) {
      SCOPED_TRACE(p + " seed " + std::to_string(seed));
      Expected<OffsetPlan> a = plan_offsets(p, inst, options);
      ASSERT_TRUE(a.ok()) << a.status().to_string();
      Expected<int64_t> arena = verify_offsets(inst, a->offsets);
      ASSERT_TRUE(arena.ok()) << arena.status().to_string();
      EXPECT_EQ(*arena, a->arena);
      EXPECT_GE(a->arena, lb);
      if (p == "search" || p == "exact") continue;  // the time limit may cut them short
      Expected<OffsetPlan> b = plan_offsets(p, inst, options);
      EXPECT_EQ(a->offsets, b->offsets) << "not deterministic";
    }
  }
}

TEST(OffsetPlanners, SearchReachesTheLowerBoundOnSmallInstancesAndNeverLosesToBestFit) {
  OffsetPlannerOptions options;
  options.time_limit_s = 1;
  int at_bound = 0;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    Instance inst = random_instance(100 + seed, 30);
    Expected<OffsetPlan> greedy = plan_offsets("best_fit_best", inst, options);
    Expected<OffsetPlan> search = plan_offsets("search", inst, options);
    ASSERT_TRUE(search.ok());
    EXPECT_TRUE(verify_offsets(inst, search->offsets).ok());
    EXPECT_LE(search->arena, greedy->arena);
    at_bound += search->arena == peak_live_bytes(inst);
  }
  EXPECT_GE(at_bound, 7);
}

TEST(OffsetPlanners, FitOffsetsProvesInfeasibilityBelowTheBound) {
  Instance inst = make_instance({{"a", 0, 3, 4}, {"b", 3, 9, 4}, {"c", 0, 9, 4}, {"d", 9, 21, 4}, {"e", 0, 21, 4}});
  Offsets offsets;
  EXPECT_EQ(fit_offsets(inst, 12, 100000, 10, &offsets), FitResult::kFound);
  EXPECT_EQ(*verify_offsets(inst, offsets), 12);
  EXPECT_EQ(fit_offsets(inst, 11, 100000, 10, &offsets), FitResult::kInfeasible);
  // A case where the live bound is not reachable: the optimum is 3 for peak 2.
  Instance gap = make_instance({{"a", 0, 2, 1}, {"b", 1, 3, 1}, {"c", 2, 4, 1}, {"d", 0, 4, 1}});
  EXPECT_EQ(peak_live_bytes(gap), 3);
  EXPECT_EQ(fit_offsets(gap, 3, 100000, 10, &offsets), FitResult::kFound);
}

TEST(OffsetPlanners, UnknownPlannerAndBadInstances) {
  Instance inst = make_instance({{"a", 0, 1, 4}});
  EXPECT_CONTAINS(plan_offsets("nope", inst).status().message(), "unknown offset planner 'nope'");
  EXPECT_EQ(plan_offsets("naive", make_instance({{"a", 2, 1, 4}})).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(plan_offsets("naive", make_instance({{"a", 0, 1, 4}}, 3)).status().code(), StatusCode::kInvalidArgument);
}

TEST(OffsetPlanners, GreedyPlannersSitAboveTheBoundOnAMiniMallocInstance) {
  const std::string path = std::string(TENSORGYM_SOURCE_DIR) + "/../shared/data/minimalloc-challenging/A.1048576.csv";
  Expected<Instance> inst = load_lifetimes_csv(path);
  if (!inst.ok()) GTEST_SKIP() << "no MiniMalloc instances here: " << inst.status().message();
  const int64_t lb = peak_live_bytes(*inst);
  Expected<OffsetPlan> greedy = plan_offsets("greedy_by_size", *inst);
  ASSERT_TRUE(greedy.ok());
  EXPECT_GT(double(greedy->arena) / double(lb), 1.2);
  EXPECT_TRUE(verify_offsets(*inst, greedy->offsets).ok());
}

// ---- graphs ---------------------------------------------------------------------------

TEST(Graphs, GraphsV0ResolveWithTheirShapes) {
  for (const std::string& name : graphs_v0_names()) {
    SCOPED_TRACE(name);
    const Graph& g = graph(name);
    EXPECT_GT(g.ops.size(), 50u);
    EXPECT_TRUE(g.validate().ok());
    EXPECT_GT(g.total_bytes(TensorKind::kOutput), 0);
    for (const GraphOp& op : g.ops) EXPECT_GE(op.scratch_bytes, 0);
  }
  EXPECT_EQ(graph("resnet50").tensors[0].shape, (std::vector<int64_t>{1, 3, 224, 224}));
  EXPECT_EQ(graph("bert_base_384").tensors[0].shape, (std::vector<int64_t>{384, 768}));
  EXPECT_EQ(graph("inception_v3").tensors[0].shape, (std::vector<int64_t>{1, 3, 299, 299}));
  Expected<GraphBenchmark> small = resolve_graph("benchmark://graphs-v0/resnet50@64");
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->graph->tensors[0].shape, (std::vector<int64_t>{1, 3, 64, 64}));
  // Randomly wired networks differ by seed and repeat for a seed.
  Expected<Graph> r1 = randwire_ws_graph(1), r1b = randwire_ws_graph(1), r2 = randwire_ws_graph(2);
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_EQ(r1->ops.size(), r1b->ops.size());
  EXPECT_NE(r1->ops.size() * 1000 + r1->tensors.size(), r2->ops.size() * 1000 + r2->tensors.size());
}

TEST(Graphs, MixedGraphsRepeatBySeedAndDrawEveryKindOfBlock) {
  std::map<std::string, int> kinds;
  int attention = 0, branchy = 0, residual = 0;
  for (uint64_t seed = 0; seed < 24; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Expected<GraphBenchmark> g = resolve_graph("benchmark://graphs-v0/mixed_" + std::to_string(seed));
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    EXPECT_TRUE(g->graph->validate().ok());
    EXPECT_EQ(g->graph->tensors[0].shape, (std::vector<int64_t>{1, 3, 128, 128}));
    std::map<std::string, int> count;
    for (const GraphOp& op : g->graph->ops) ++count[op.type];
    attention += count["softmax"] > 0;
    branchy += count["concat"] > 0;
    residual += count["add"] > 0;
    Expected<Graph> again = mixed_graph(seed);
    ASSERT_TRUE(again.ok());
    ASSERT_EQ(again->ops.size(), g->graph->ops.size());
    for (size_t i = 0; i < again->ops.size(); ++i) EXPECT_EQ(again->ops[i].type, g->graph->ops[i].type);
  }
  EXPECT_GT(attention, 0);
  EXPECT_GT(branchy, 0);
  EXPECT_GT(residual, 0);
  EXPECT_NE(mixed_graph(1)->ops.size() * 1000 + mixed_graph(1)->tensors.size(),
            mixed_graph(2)->ops.size() * 1000 + mixed_graph(2)->tensors.size());
  EXPECT_EQ(resolve_graph("benchmark://graphs-v0/mixed_x").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(resolve_graph("benchmark://graphs-v0/mixed_1@16").status().code(), StatusCode::kInvalidArgument);
  // Listed after the fixed graphs, interleaved with the randomly wired ones.
  std::unique_ptr<Dataset> d = make_graphs_dataset();
  const std::vector<BenchmarkInfo> listed = d->list(5, 4);
  ASSERT_EQ(listed.size(), 4u);
  EXPECT_EQ(listed[0].uri, "benchmark://graphs-v0/randwire_ws_0");
  EXPECT_EQ(listed[1].uri, "benchmark://graphs-v0/mixed_0");
  EXPECT_EQ(listed[3].uri, "benchmark://graphs-v0/mixed_1");
}

TEST(Graphs, UriErrorsAndTheRegistryRejectsGraphs) {
  EXPECT_EQ(resolve_graph("benchmark://graphs-v0/vgg").status().code(), StatusCode::kNotFound);
  EXPECT_CONTAINS(resolve_graph("benchmark://graphs-v0/vgg").status().message(), "mobilenet_v2");
  EXPECT_EQ(resolve_graph("benchmark://graphs-v0/resnet50@x").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(resolve_graph("benchmark://graphs-v0/resnet50@5000").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(resolve_graph("benchmark://ops-v0/gmm-1").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(resolve_graph("file:///nonexistent/model.onnx").status().code(), StatusCode::kNotFound);
  DatasetRegistry registry;
  Expected<Benchmark> b = registry.resolve("benchmark://graphs-v0/resnet50");
  ASSERT_FALSE(b.ok());
  EXPECT_CONTAINS(b.status().message(), "not a tensor program");
  EXPECT_CONTAINS(registry.resolve("file:///tmp/x.onnx").status().message(), "memory-v0");
  EXPECT_TRUE(registry.find_dataset("graphs-v0").ok());
}

TEST(Graphs, BuilderRejectsShapeErrors) {
  GraphBuilder b("bad");
  const int x = b.input("x", {1, 3, 8, 8});
  const int y = b.input("y", {1, 4, 8, 8});
  b.binary("add", x, y);
  EXPECT_FALSE(b.finish().ok());
  GraphBuilder c("bad2");
  c.conv2d(c.input("x", {1, 3, 8, 8}), 8, 3, 0, 1);
  EXPECT_CONTAINS(c.finish().status().message(), "stride");
}

// ---- decisions: orders and in-place ---------------------------------------------------------------

TEST(Decisions, OrdersAreTopologicalAndSearchBeatsProgramOrder) {
  for (const std::string& name : graphs_v0_names()) {
    SCOPED_TRACE(name);
    const Graph& g = graph(name);
    OrderOptions opt;
    opt.inplace = true;
    opt.time_limit_s = 5;
    const int64_t program = order_peak(g, *plan_order("program_order", g, opt), true);
    for (const std::string& o : order_names()) {
      Expected<std::vector<int>> order = plan_order(o, g, opt);
      ASSERT_TRUE(order.ok());
      GraphDecisions d{*order, all_inplace(g, *order)};
      EXPECT_TRUE(layout_graph(g, d).ok()) << o;
    }
    EXPECT_LE(order_peak(g, *plan_order("search", g, opt), true), program);
  }
  EXPECT_FALSE(plan_order("random", graph("resnet50")).ok());
}

TEST(Decisions, IllegalOrdersAndInplaceChoicesAreRejected) {
  GraphBuilder b("diamond");
  const int x = b.input("x", {1, 4, 8, 8});
  const int a = b.unary("relu", x);     // op 0
  const int c = b.unary("relu", a);     // op 1: reads a
  const int d = b.unary("relu", a);     // op 2: reads a too
  const int e = b.binary("add", c, d);  // op 3
  b.mark_output(e);
  Expected<Graph> g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_TRUE(layout_graph(*g, {{0, 1, 2, 3}, {}}).ok());
  EXPECT_CONTAINS(layout_graph(*g, {{1, 0, 2, 3}, {}}).status().message(), "before");
  EXPECT_CONTAINS(layout_graph(*g, {{0, 1, 2}, {}}).status().message(), "3 operators");
  // Op 1 may not overwrite a: op 2 still reads it. Op 2 may (it is the last reader).
  EXPECT_CONTAINS(layout_graph(*g, {{0, 1, 2, 3}, {{1, a, c, false}}}).status().message(), "not legal");
  EXPECT_TRUE(layout_graph(*g, {{0, 1, 2, 3}, {{2, a, d, false}}}).ok());
  // The graph input may not be overwritten.
  EXPECT_FALSE(layout_graph(*g, {{0, 1, 2, 3}, {{0, x, a, false}}}).ok());
  // Fusion needs a single consumer right after its producer.
  EXPECT_FALSE(layout_graph(*g, {{0, 1, 2, 3}, {{2, a, d, true}}}).ok());
  EXPECT_TRUE(layout_graph(*g, {{0, 1, 2, 3}, {{3, c, e, false}}}).ok());
  GraphDecisions all{{0, 1, 2, 3}, all_inplace(*g, {0, 1, 2, 3})};
  Expected<GraphLayout> l = layout_graph(*g, all);
  ASSERT_TRUE(l.ok());
  // 1 KiB tensors; a shared with d, c with e: x+a at op 0, x gone after; a+c at 1..3.
  EXPECT_EQ(l->lb_live, 2 * 1024);
  EXPECT_EQ(order_independent_bound(*g, false), 3 * 1024);
}

// ---- whole plans -------------------------------------------------------------------------

TEST(GraphPlans, EveryPlannerGivesVerifiedPlansOnEveryGraph) {
  for (const std::string& name : graphs_v0_names()) {
    const Graph& g = graph(name);
    for (const std::string& p : memplan_planner_names()) {
      for (bool inplace : {false, true}) {
        SCOPED_TRACE(name + " " + p + (inplace ? " in-place" : ""));
        GraphPlanOptions opt;
        opt.planner = p;
        opt.inplace = inplace;
        opt.best_chooses = false;
        opt.time_limit_s = 1;
        Expected<GraphPlan> plan = plan_graph(g, opt);
        ASSERT_TRUE(plan.ok()) << plan.status().to_string();
        Expected<int64_t> arena = verify_graph_plan(g, plan->decisions, plan->offsets);
        ASSERT_TRUE(arena.ok()) << arena.status().to_string();
        EXPECT_EQ(*arena, plan->arena);
        EXPECT_GE(plan->arena, plan->layout.lb_live);
        EXPECT_GE(plan->layout.lb_live, plan->layout.lb_op);
        if (p == "best") continue;  // bounded by nodes, but a slow machine may hit the time limit
        Expected<GraphPlan> again = plan_graph(g, opt);
        EXPECT_EQ(plan->offsets, again->offsets) << "not deterministic";
      }
    }
  }
}

TEST(GraphPlans, BestReachesTheLiveBoundAndBeatsBestFitWithoutInplace) {
  double reduction = 0;
  for (const std::string& name : graphs_v0_names()) {
    SCOPED_TRACE(name);
    const Graph& g = graph(name);
    GraphPlanOptions best;
    best.planner = "best";
    best.time_limit_s = 5;
    Expected<GraphPlan> b = plan_graph(g, best);
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    EXPECT_LE(double(b->arena), 1.01 * double(b->layout.lb_live));
    EXPECT_TRUE(b->inplace);
    GraphPlanOptions base;
    base.planner = "best_fit_best";
    Expected<GraphPlan> f = plan_graph(g, base);
    ASSERT_TRUE(f.ok());
    EXPECT_LE(b->arena, f->arena);
    reduction += 1.0 - double(b->arena) / double(f->arena);
  }
  EXPECT_GE(reduction / double(graphs_v0_names().size()), 0.20);
}

TEST(GraphPlans, MemoryLimitIsAHardConstraint) {
  const Graph& g = graph("mobilenet_v2");
  GraphPlanOptions opt;
  opt.planner = "best";
  opt.time_limit_s = 1;
  Expected<GraphPlan> free_plan = plan_graph(g, opt);
  ASSERT_TRUE(free_plan.ok());
  opt.memory_limit = free_plan->arena;
  EXPECT_TRUE(plan_graph(g, opt).ok());
  opt.memory_limit = free_plan->layout.lb_op - 1;  // below what any order can do
  Expected<GraphPlan> tight = plan_graph(g, opt);
  ASSERT_FALSE(tight.ok());
  EXPECT_EQ(tight.status().code(), StatusCode::kResourceExhausted);
  EXPECT_CONTAINS(tight.status().message(), "infeasible");
  Instance inst = make_instance({{"a", 0, 3, 4}, {"b", 0, 3, 4}});
  opt.memory_limit = 7;
  EXPECT_EQ(plan_instance(inst, "greedy_by_size", opt).status().code(), StatusCode::kResourceExhausted);
}

TEST(GraphPlans, BreakdownAndPlot) {
  GraphPlanOptions opt;
  opt.planner = "greedy_by_size";
  Expected<GraphPlan> plan = plan_graph(graph("bert_base_128"), opt);
  ASSERT_TRUE(plan.ok());
  ArenaBreakdown b = arena_breakdown(plan->layout);
  EXPECT_EQ(b.count[int(BufferKind::kInput)], 1);
  EXPECT_EQ(b.count[int(BufferKind::kOutput)], 1);
  EXPECT_GT(b.count[int(BufferKind::kScratch)], 0);  // softmax and layer norm
  int64_t at_peak = 0;
  for (int k = 0; k < 4; ++k) at_peak += b.at_peak[k];
  EXPECT_EQ(at_peak, plan->layout.lb_live);
  const std::string svg = plan_svg(plan->layout.instance, plan->offsets, plan->layout.lb_live, "bert");
  EXPECT_CONTAINS(svg, "<svg");
  EXPECT_CONTAINS(svg, "lower bound");
  EXPECT_GE(size_t(std::count(svg.begin(), svg.end(), '\n')), plan->layout.instance.buffers.size());
}

// ---- execution in one arena ---------------------------------------------------------------------------

GraphKernelCache& kernels() {
  static GraphKernelCache* cache = new GraphKernelCache();
  return *cache;
}

void check_arena_execution(const Graph& g) {
  GraphPlanOptions opt;
  opt.planner = "best";
  opt.time_limit_s = 2;
  Expected<GraphPlan> plan = plan_graph(g, opt);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_FALSE(plan->decisions.aliases.empty());
  Expected<GraphRun> reference = run_graph(g, plan->decisions, nullptr, kDefaultAlignment, kernels());
  ASSERT_TRUE(reference.ok()) << reference.status().to_string();
  Expected<GraphRun> arena = run_graph(g, plan->decisions, &plan->offsets, kDefaultAlignment, kernels());
  ASSERT_TRUE(arena.ok()) << arena.status().to_string();
  EXPECT_EQ(max_output_difference(*reference, *arena), 0.0);
  for (const auto& out : reference->outputs)
    for (float v : out) ASSERT_TRUE(std::isfinite(v));
}

TEST(ArenaExecution, ResNet50AndMobileNetV2) {
  check_arena_execution(*resolve_graph("benchmark://graphs-v0/resnet50@32")->graph);
  check_arena_execution(*resolve_graph("benchmark://graphs-v0/mobilenet_v2@32")->graph);
}

TEST(ArenaExecution, BertInceptionAndRandWire) {
  check_arena_execution(*bert_base_graph(8, 2));
  check_arena_execution(*resolve_graph("benchmark://graphs-v0/inception_v3@75")->graph);
  check_arena_execution(*resolve_graph("benchmark://graphs-v0/randwire_ws_3@32")->graph);
}

TEST(ArenaExecution, MixedGraphs) {
  std::set<std::string> types;
  for (uint64_t seed : {1, 2, 5}) {
    Expected<Graph> g = mixed_graph(seed, 32);
    ASSERT_TRUE(g.ok());
    for (const GraphOp& op : g->ops) types.insert(op.type);
    check_arena_execution(*g);
  }
  // Between them: attention, branches and residual sums.
  for (const char* type : {"softmax", "concat", "add", "layernorm"}) EXPECT_TRUE(types.count(type)) << type;
}

TEST(ArenaExecution, AnOverlappingPlanCorruptsTheOutputs) {
  const std::shared_ptr<const Graph> keep = resolve_graph("benchmark://graphs-v0/resnet50@32")->graph;
  const Graph& g = *keep;
  GraphPlanOptions opt;
  opt.planner = "greedy_by_size";
  Expected<GraphPlan> plan = plan_graph(g, opt);
  ASSERT_TRUE(plan.ok());
  Expected<GraphRun> reference = run_graph(g, plan->decisions, nullptr, kDefaultAlignment, kernels());
  ASSERT_TRUE(reference.ok());
  // Put the skip connection of the first residual block on top of a tensor live at
  // the same time: the plan no longer verifies, and the run goes wrong.
  const GraphLayout& l = plan->layout;
  const Instance& inst = l.instance;
  int corrupted = 0;
  for (size_t i = 0; i < inst.buffers.size() && corrupted < 3; ++i) {
    for (size_t j = 0; j < inst.buffers.size(); ++j) {
      if (i == j || l.kind[i] != BufferKind::kIntermediate || l.kind[j] != BufferKind::kIntermediate) continue;
      const Buffer &a = inst.buffers[i], &b = inst.buffers[j];
      if (!(a.lower < b.lower && b.lower < a.upper - 1)) continue;  // a is read after b is written
      Offsets bad = plan->offsets;
      bad[j] = bad[i];
      EXPECT_FALSE(verify_offsets(inst, bad).ok());
      Expected<GraphRun> run = run_graph(g, plan->decisions, &bad, kDefaultAlignment, kernels());
      ASSERT_TRUE(run.ok());
      EXPECT_GT(max_output_difference(*reference, *run), 0.0) << inst.buffers[i].id << " / " << inst.buffers[j].id;
      ++corrupted;
      break;
    }
  }
  EXPECT_EQ(corrupted, 3);
}

}  // namespace
}  // namespace tensorgym
