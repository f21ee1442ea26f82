// Inference under a memory limit: operator splitting into tiles of rows and
// rematerialization rewrite the graph; the rewritten graph, planned and executed in
// one arena, computes what the original computes with a buffer per tensor; the
// limit planner's plans are verified and fit; what cannot fit says so.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "datasets/graphs.h"
#include "memplan/exec/arena_exec.h"
#include "memplan/graph_builder.h"
#include "memplan/limit_planner.h"
#include "memplan/op_split.h"
#include "memplan/op_stages.h"
#include "memplan/order.h"
#include "memplan/rematerialize.h"
#include "memplan/rewrites.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

GraphKernelCache& kernels() {
  static GraphKernelCache* cache = new GraphKernelCache();
  return *cache;
}

// The original graph's outputs, every tensor in a buffer of its own.
GraphRun reference_run(const Graph& g) {
  Expected<std::vector<int>> order = plan_order("program_order", g);
  EXPECT_TRUE(order.ok());
  Expected<GraphRun> run = run_graph(g, GraphDecisions{*order, {}}, nullptr, kDefaultAlignment, kernels());
  EXPECT_TRUE(run.ok()) << run.status().to_string();
  return run.ok() ? *run : GraphRun{};
}

Expected<GraphPlan> best_plan(const Graph& g) {
  GraphPlanOptions opt;
  opt.planner = "best";
  opt.time_limit_s = 1;
  return plan_graph(g, opt);
}

// `rewritten` planned by `best` (in place where legal) and run in its arena.
GraphRun arena_run(const Graph& rewritten, int64_t* arena = nullptr) {
  Expected<GraphPlan> plan = best_plan(rewritten);
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  if (!plan.ok()) return {};
  if (arena) *arena = plan->arena;
  Expected<GraphRun> run = run_graph(rewritten, plan->decisions, &plan->offsets, kDefaultAlignment, kernels());
  EXPECT_TRUE(run.ok()) << run.status().to_string();
  return run.ok() ? *run : GraphRun{};
}

double tolerance(const GraphRun& run) {
  double scale = 1;
  for (const auto& out : run.outputs)
    for (float v : out) scale = std::max(scale, double(std::fabs(v)));
  return 1e-5 * scale;
}

// A strided stem, a residual block (its input read by the skip), a pool, two
// branches joined by a concat: the shapes that make halos uneven at both edges.
Graph conv_net() {
  GraphBuilder b("conv_net");
  int x = b.input("image", {1, 3, 23, 19});
  x = b.unary("relu", b.conv2d(x, 8, 3, 2, 1));
  int y = b.unary("relu", b.conv2d(x, 8, 3, 1, 1));
  y = b.conv2d(y, 8, 5, 1, 2);
  x = b.unary("relu", b.binary("add", y, x));
  x = b.pool("maxpool", x, 3, 2, 1);
  x = b.concat({b.conv2d(x, 4, 1, 1, 0), b.conv2d(x, 4, 3, 1, 1)}, 1);
  x = b.conv2d(x, 4, 1, 1, 0);
  b.mark_output(x);
  return *b.finish();
}

// Rows of tokens: dense, gelu, dense, layernorm, softmax over features.
Graph token_net() {
  GraphBuilder b("token_net");
  int x = b.input("tokens", {1, 13, 8});
  int h = b.unary("gelu", b.dense(x, 24));
  h = b.dense(h, 8);
  x = b.layernorm(b.binary("add", h, x));
  x = b.softmax(x);
  b.mark_output(x);
  return *b.finish();
}

TEST(OpSplit, EveryRegionInEveryTileCountComputesTheSameOutputs) {
  for (const Graph& g : {conv_net(), token_net()}) {
    const GraphRun want = reference_run(g);
    const std::vector<OpRegion> regions = regions_through(g, -1);
    ASSERT_GE(regions.size(), 4u) << g.name;
    bool multi_op = false;
    for (const OpRegion& region : regions) {
      multi_op |= region.last > region.first;
      for (int64_t tiles : {int64_t(2), int64_t(3), region.extent}) {
        if (tiles > region.extent) continue;
        Expected<Graph> split = split_region(g, region, tiles);
        ASSERT_TRUE(split.ok()) << region.describe(g) << ": " << split.status().to_string();
        const GraphRun got = arena_run(*split);
        EXPECT_LE(max_output_difference(want, got), tolerance(want))
            << g.name << ": " << region.describe(g) << " in " << tiles << " tiles";
      }
    }
    EXPECT_TRUE(multi_op) << g.name;
  }
}

TEST(OpSplit, SplittingTheStemLowersThePeak) {
  GraphBuilder b("stem");
  int x = b.input("image", {1, 3, 64, 64});
  x = b.unary("relu", b.conv2d(x, 32, 3, 1, 1));
  x = b.pool("maxpool", x, 2, 2, 0);
  b.mark_output(x);
  const Graph g = *b.finish();
  OpRegion region{0, 2, 2, 32};
  ASSERT_TRUE(check_region(g, region).ok()) << check_region(g, region).to_string();
  int64_t before = 0, after = 0;
  const GraphRun want = reference_run(g);
  arena_run(g, &before);
  Expected<Graph> split = split_region(g, region, 8);
  ASSERT_TRUE(split.ok()) << split.status().to_string();
  const GraphRun got = arena_run(*split, &after);
  EXPECT_LE(max_output_difference(want, got), tolerance(want));
  // Input and output whole, the 32x64x64 intermediate in eighths.
  EXPECT_LT(after * 2, before) << before << " -> " << after;
}

TEST(OpSplit, IllegalRegionsAndTileCountsAreNamed) {
  const Graph g = conv_net();
  // Ops 0..2: conv, relu, conv; the relu's output is also read by the skip add.
  Status s = check_region(g, OpRegion{0, 2, 2, g.tensors[size_t(g.ops[2].outputs[0])].shape[2]});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(s.message(), "outside the region");
  EXPECT_EQ(check_region(g, OpRegion{3, 1, 2, 4}).code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(check_region(g, OpRegion{0, 1, 2, 3}).message(), "extent");
  const OpRegion ok = regions_through(g, -1).front();
  Expected<Graph> too_many = split_region(g, ok, ok.extent + 1);
  EXPECT_EQ(too_many.status().code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(too_many.status().message(), "tiles");
  EXPECT_EQ(split_region(g, ok, 1).status().code(), StatusCode::kInvalidArgument);
}

// MobileNetV2's inverted residual block: a 1x1 expansion to six times the
// channels, a depthwise 3x3, a 1x1 projection summing over them, the skip.
Graph inverted_residual() {
  GraphBuilder b("inverted_residual");
  const int x = b.input("image", {1, 8, 12, 12});
  int y = b.unary("relu6", b.conv2d(x, 48, 1, 1, 0));
  y = b.unary("relu6", b.conv2d(y, 48, 3, 1, 1, 48));
  y = b.conv2d(y, 8, 1, 1, 0);
  b.mark_output(b.binary("add", y, x));
  return *b.finish();
}

TEST(ChannelSplit, AnInvertedResidualBlockNeverHoldsItsWideMiddleAndComputesNothingTwice) {
  const Graph g = inverted_residual();
  const std::vector<OpRegion> regions = regions_through(g, 2);
  const auto whole = std::find_if(regions.begin(), regions.end(),
                                  [](const OpRegion& r) { return r.channels && r.first == 0 && r.last == 4; });
  ASSERT_NE(whole, regions.end()) << "expand..project is a channel region";
  EXPECT_EQ(whole->extent, 48);
  EXPECT_CONTAINS(whole->describe(g), "by channels");
  // Nothing follows a reduction over the channels: the skip's add does not join.
  for (const OpRegion& r : regions) EXPECT_FALSE(r.channels && r.last == 5) << r.describe(g);

  const GraphRun want = reference_run(g);
  int64_t before = 0, after = 0;
  arena_run(g, &before);
  Expected<Graph> split = split_region(g, *whole, 6);
  ASSERT_TRUE(split.ok()) << split.status().to_string();
  const GraphRun got = arena_run(*split, &after);
  EXPECT_LE(max_output_difference(want, got), tolerance(want));
  // Before: two 48-channel images at once; after: two 8-channel tiles of them, the
  // input, and two partial sums of the output.
  EXPECT_LT(after * 2, before) << before << " -> " << after;
  // No halo, no recomputation: the same arithmetic, plus one add per later tile.
  auto work = [](const Graph& graph) {
    int64_t w = 0;
    for (const GraphOp& op : graph.ops) w += op_work(*op_program(graph, op));
    return w;
  };
  const int64_t adds = 5 * 8 * 12 * 12;
  EXPECT_EQ(work(*split), work(g) + adds);
}

TEST(ChannelSplit, AFeedForwardLayerRunsInColumnTilesReadingItsWeightsInPlace) {
  GraphBuilder b("ffn");
  const int x = b.input("tokens", {16, 12});
  b.mark_output(b.dense(b.unary("gelu", b.dense(x, 40)), 12));
  const Graph g = *b.finish();
  // matmul, add (bias), gelu, matmul (sums over the 40 columns), add (bias).
  OpRegion region{0, 3, 1, 40, true};
  ASSERT_TRUE(check_region(g, region).ok()) << check_region(g, region).to_string();
  Expected<Graph> split = split_region(g, region, 3);
  ASSERT_TRUE(split.ok()) << split.status().to_string();
  // No copies of weights: every tile reads them through windows, and the arena holds
  // no more bytes of constants than before.
  EXPECT_EQ(split->total_bytes(TensorKind::kConstant), g.total_bytes(TensorKind::kConstant));
  int windowed = 0;
  for (const GraphOp& op : split->ops) windowed += op.attrs.count("window") ? 1 : 0;
  EXPECT_EQ(windowed, 3 * 3) << "each tile's matmuls and bias add read windows";
  EXPECT_LE(max_output_difference(reference_run(g), arena_run(*split)), tolerance(reference_run(g)));
}

// BERT's self-attention, small: Q, K and V projections split into heads through a
// reshape and a transpose, per-head scores, softmax, context, the output projection.
Graph attention(int64_t seq, int64_t heads, int64_t dim) {
  GraphBuilder b("attention");
  const int64_t hidden = heads * dim;
  const int x = b.input("tokens", {seq, hidden});
  auto split_heads = [&](int t) { return b.transpose(b.reshape(t, {seq, heads, dim}), {1, 0, 2}); };
  const int q = split_heads(b.dense(x, hidden));
  const int k = split_heads(b.dense(x, hidden));
  const int v = split_heads(b.dense(x, hidden));
  const int probs = b.softmax(b.scale(b.matmul(q, k, /*transpose_b=*/true), 0.5));
  const int ctx = b.reshape(b.transpose(b.matmul(probs, v), {1, 0, 2}), {seq, hidden});
  b.mark_output(b.layernorm(b.binary("add", b.dense(ctx, hidden), x)));
  return *b.finish();
}

TEST(ChannelSplit, AttentionRunsHeadByHeadThroughItsReshapesAndTransposes) {
  const Graph g = attention(24, 4, 8);
  // Through the scores: the region from the Q projection to the output projection.
  int scores = -1;
  for (size_t o = 0; o < g.ops.size(); ++o)
    if (g.ops[o].type == "softmax") scores = int(o);
  const std::vector<OpRegion> regions = regions_through(g, scores);
  const auto heads = std::find_if(regions.begin(), regions.end(), [&](const OpRegion& r) {
    return r.channels && r.first == 0 && g.ops[size_t(r.last)].type == "matmul" && r.last > scores;
  });
  ASSERT_NE(heads, regions.end()) << "the attention block is a channel region";
  EXPECT_EQ(heads->extent, 4) << "tiles are ranges of whole heads";
  const GraphRun want = reference_run(g);
  int64_t before = 0;
  arena_run(g, &before);
  for (int64_t tiles : {2, 4}) {
    Expected<Graph> split = split_region(g, *heads, tiles);
    ASSERT_TRUE(split.ok()) << split.status().to_string();
    int64_t after = 0;
    EXPECT_LE(max_output_difference(want, arena_run(*split, &after)), tolerance(want)) << tiles << " tiles";
    EXPECT_LT(after, before) << tiles << " tiles";
  }
}

TEST(ChannelSplit, RegionsThatMixChannelsOrLeakAreNamed) {
  const Graph g = inverted_residual();
  // A reduction in the middle: project (4) then the skip's add (5).
  Status s = check_region(g, OpRegion{0, 5, 1, 48, true});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(s.message(), "only the region's last operator");
  s = check_region(g, OpRegion{0, 1, 1, 48, true});
  EXPECT_TRUE(s.ok()) << s.to_string();
  // conv_net's first relu is read by the skip add outside conv, relu, conv.
  s = check_region(conv_net(), OpRegion{0, 2, 1, 8, true});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(s.message(), "outside the region");
  s = check_region(g, OpRegion{0, 2, 1, 47, true});
  EXPECT_CONTAINS(s.message(), "extent");
  GraphBuilder b("grouped");
  int x = b.input("image", {1, 8, 6, 6});
  x = b.conv2d(b.conv2d(x, 8, 1, 1, 0), 8, 3, 1, 1, 2);
  b.mark_output(x);
  const Graph grouped = *b.finish();
  s = check_region(grouped, OpRegion{0, 1, 1, 8, true});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(s.message(), "groups mix channels");
  Expected<Graph> too_many = split_region(g, OpRegion{0, 4, 1, 48, true}, 49);
  EXPECT_CONTAINS(too_many.status().message(), "48 channels");
  // A window already in place is not split again.
  Graph windowed = g;
  windowed.ops[0].attrs["window"] = {1, 0, 0, 48};
  EXPECT_CONTAINS(check_region(windowed, OpRegion{0, 4, 1, 48, true}).message(), "window");
}

TEST(ChannelSplit, WindowsOutsideTheirInputAreInvalid) {
  Graph g = inverted_residual();
  g.ops[0].attrs["window"] = {1, 0, 40, 16};  // rows 40..56 of a 48-row weight
  Expected<OpProgram> p = op_program(g, g.ops[0]);
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(p.status().message(), "not inside");
  g.ops[0].attrs["window"] = {1, 0, 40};
  EXPECT_CONTAINS(op_program(g, g.ops[0]).status().message(), "quadruples");
  g.ops[0].attrs["window"] = {7, 0, 0, 1};
  EXPECT_CONTAINS(op_program(g, g.ops[0]).status().message(), "no input 7");
}

TEST(Rematerialize, TheCopyServesLaterReadersAndOutputsMatch) {
  // A cheap relu of a small tensor, read at the start and the end: recomputing it
  // for the end frees its bytes through the middle.
  GraphBuilder b("remat");
  int x = b.input("x", {1, 4, 16, 16});
  int r = b.unary("relu", x);
  int y = b.conv2d(r, 16, 3, 1, 1);
  y = b.unary("relu", b.conv2d(y, 4, 3, 1, 1));
  y = b.binary("add", y, r);
  b.mark_output(y);
  const Graph g = *b.finish();
  const GraphRun want = reference_run(g);
  const std::vector<Recompute> candidates = recompute_candidates(g);
  ASSERT_FALSE(candidates.empty());
  for (const Recompute& c : candidates) {
    Expected<Graph> again = rematerialize(g, c);
    ASSERT_TRUE(again.ok()) << again.status().to_string();
    EXPECT_EQ(again->ops.size(), g.ops.size() + 1);
    EXPECT_LE(max_output_difference(want, arena_run(*again)), tolerance(want)) << c.describe(g);
  }
  EXPECT_EQ(rematerialize(g, Recompute{r, 5}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(rematerialize(g, Recompute{x, 1}).status().code(), StatusCode::kInvalidArgument);
}

TEST(Rematerialize, AConeRecomputesTheInputsSoTheyDieEarlyToo) {
  // `node` is read by the wide middle and by the end. Recomputed alone for the end,
  // its copy keeps its wide input `a` alive through the middle; with its cone (depth
  // 2), `a` is recomputed too and dies at its first reader, and the narrow `x` lives
  // on instead.
  GraphBuilder b("cone");
  int x = b.input("x", {1, 4, 16, 16});
  const int a = b.conv2d(x, 16, 1, 1, 0);
  const int node = b.conv2d(a, 8, 3, 1, 1);
  int m = b.unary("relu", b.conv2d(node, 32, 3, 1, 1));
  m = b.conv2d(m, 8, 3, 1, 1);
  b.mark_output(b.binary("add", m, node));
  const Graph g = *b.finish();
  const GraphRun want = reference_run(g);

  Expected<Graph> alone = rematerialize(g, Recompute{node, 1, 1});
  Expected<Graph> cone = rematerialize(g, Recompute{node, 1, 2});
  ASSERT_TRUE(alone.ok() && cone.ok()) << alone.status().to_string() << cone.status().to_string();
  EXPECT_EQ(alone->ops.size(), g.ops.size() + 1);
  EXPECT_EQ(cone->ops.size(), g.ops.size() + 2);
  const int first_middle = g.tensors[size_t(node)].consumers[0];
  EXPECT_GT(alone->tensors[size_t(a)].consumers.back(), first_middle) << "alone, `a` waits for the copy";
  EXPECT_LT(cone->tensors[size_t(a)].consumers.back(), first_middle) << "in the cone, `a` dies at its first reader";
  EXPECT_LT(live_peak(*cone, kDefaultAlignment).bytes, live_peak(*alone, kDefaultAlignment).bytes);
  EXPECT_EQ(Recompute({node, 1, 2}).describe(g), "recompute conv2d_1 for add_5 with its inputs 1 level up");
  for (const Recompute& c : recompute_candidates(g, {}, 3))
    EXPECT_LE(max_output_difference(want, arena_run(*rematerialize(g, c))), tolerance(want)) << c.describe(g);
  EXPECT_EQ(rematerialize(g, Recompute{node, 1, 0}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(rematerialize(g, Recompute{node, 1, kMaxRecomputeDepth + 1}).status().code(), StatusCode::kInvalidArgument);
}

TEST(Rematerialize, AConeRecomputesASharedAncestorOnce) {
  // node = relu(a) + sigmoid(a): its cone three levels deep recomputes the add, the
  // relu, the sigmoid and `a` once, both branches reading the one copy.
  GraphBuilder b("diamond");
  int x = b.input("x", {1, 4, 12, 12});
  const int a = b.conv2d(x, 4, 3, 1, 1);
  const int node = b.binary("add", b.unary("relu", a), b.unary("sigmoid", a));
  int m = b.unary("relu", b.conv2d(node, 16, 3, 1, 1));
  b.mark_output(b.binary("add", b.conv2d(m, 4, 1, 1, 0), node));
  const Graph g = *b.finish();
  Expected<Graph> cone = rematerialize(g, Recompute{node, 1, 3});
  ASSERT_TRUE(cone.ok()) << cone.status().to_string();
  EXPECT_EQ(cone->ops.size(), g.ops.size() + 4);
  const int copy_of_a = cone->find_tensor(g.tensors[size_t(a)].name + "@re");
  ASSERT_GE(copy_of_a, 0);
  EXPECT_EQ(cone->tensors[size_t(copy_of_a)].consumers.size(), 2u);
  EXPECT_LE(max_output_difference(reference_run(g), arena_run(*cone)), tolerance(reference_run(g)));
}

// What no plan of the graph as it is beats: the larger of the order-independent
// bound and `best`'s live bound.
int64_t graph_bound(const Graph& g) {
  Expected<GraphPlan> unlimited = best_plan(g);
  EXPECT_TRUE(unlimited.ok()) << unlimited.status().to_string();
  return std::max(order_independent_bound(g, true), unlimited.ok() ? unlimited->layout.lb_live : 0);
}

TEST(LimitPlanner, FitsBelowTheLowerBoundAndRunsCorrectly) {
  // MobileNetV2 at half its bound; a mixed graph (residual and branchy blocks) at 3/4.
  const std::pair<const char*, int64_t> cases[] = {{"benchmark://graphs-v0/mobilenet_v2@96", 2},
                                                   {"benchmark://graphs-v0/mixed_1@64", 4}};
  for (const auto& [uri, parts] : cases) {
    const Graph g = *resolve_graph(uri)->graph;
    LimitPlanOptions lo;
    lo.memory_limit = graph_bound(g) * (parts - 1) / parts;
    lo.time_limit_s = 20;
    Expected<LimitPlan> fit = plan_under_limit(g, lo);
    ASSERT_TRUE(fit.ok()) << uri << ": " << fit.status().to_string();
    EXPECT_LE(fit->plan.arena, lo.memory_limit);
    EXPECT_FALSE(fit->rewrites.empty());
    EXPECT_GT(fit->work, fit->original_work);
    Expected<int64_t> verified = verify_graph_plan(fit->graph, fit->plan.decisions, fit->plan.offsets);
    ASSERT_TRUE(verified.ok()) << verified.status().to_string();
    EXPECT_EQ(*verified, fit->plan.arena);
    const GraphRun want = reference_run(g);
    Expected<GraphRun> got =
        run_graph(fit->graph, fit->plan.decisions, &fit->plan.offsets, kDefaultAlignment, kernels());
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_LE(max_output_difference(want, *got), tolerance(want)) << uri;
  }
}

TEST(LimitPlanner, ATransformerFitsAtHalfItsBoundWithHeadsInTiles) {
  // Two BERT-base layers at half the bound: rows of tokens leave a layer's Q, K and
  // V whole; heads in tiles do not.
  const Graph g = *bert_base_graph(32, 2);
  LimitPlanOptions lo;
  lo.memory_limit = graph_bound(g) / 2;
  lo.time_limit_s = 30;
  Expected<LimitPlan> fit = plan_under_limit(g, lo);
  ASSERT_TRUE(fit.ok()) << fit.status().to_string();
  EXPECT_LE(fit->plan.arena, lo.memory_limit);
  bool channels = false;
  for (const std::string& r : fit->rewrites) channels |= r.find("by channels") != std::string::npos;
  EXPECT_TRUE(channels) << fmt::format("{}", fmt::join(fit->rewrites, "; "));
  Expected<int64_t> verified = verify_graph_plan(fit->graph, fit->plan.decisions, fit->plan.offsets);
  ASSERT_TRUE(verified.ok()) << verified.status().to_string();
  const GraphRun want = reference_run(g);
  Expected<GraphRun> got = run_graph(fit->graph, fit->plan.decisions, &fit->plan.offsets, kDefaultAlignment, kernels());
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_LE(max_output_difference(want, *got), tolerance(want));
}

TEST(LimitPlanner, GivenRuntimesItTakesTheFastestOfTheRewritesThatFit) {
  const Graph g = *resolve_graph("benchmark://graphs-v0/mobilenet_v2@96")->graph;
  LimitPlanOptions lo;
  lo.memory_limit = 500000;  // under half the bound: several splits fit
  lo.time_limit_s = 20;
  Expected<LimitPlan> cheapest = plan_under_limit(g, lo);
  ASSERT_TRUE(cheapest.ok()) << cheapest.status().to_string();
  EXPECT_TRUE(cheapest->measured.empty());
  // "Runtimes" that favour the most arithmetic: the choice follows the measurements.
  int calls = 0;
  lo.runtime = [&](const Graph& candidate) -> Expected<double> {
    ++calls;
    TG_ASSIGN_OR_RETURN(int64_t work, graph_work(candidate));
    return 1.0 / double(work);
  };
  lo.measure_candidates = 3;
  Expected<LimitPlan> fastest = plan_under_limit(g, lo);
  ASSERT_TRUE(fastest.ok()) << fastest.status().to_string();
  ASSERT_GE(fastest->measured.size(), 2u);
  EXPECT_LE(fastest->measured.size(), 3u);
  EXPECT_EQ(calls, int(fastest->measured.size()));
  for (const auto& m : fastest->measured) EXPECT_LE(fastest->measured[0].second, m.second);
  EXPECT_GT(fastest->work, cheapest->work);
  EXPECT_LE(fastest->plan.arena, lo.memory_limit);
  // A measurement that fails fails the search, with its message.
  lo.runtime = [](const Graph&) -> Expected<double> { return internal_error("the measuring broke"); };
  EXPECT_CONTAINS(plan_under_limit(g, lo).status().message(), "the measuring broke");
}

TEST(LimitPlanner, MeasuresOnlyWhileAQuarterOfItsTimeIsLeft) {
  // Measuring a rewritten graph compiles and runs it: seconds each. The search keeps
  // to its time limit by starting a measurement only while a quarter of the limit is
  // left, and takes the cheapest unmeasured when none can start.
  const Graph g = *resolve_graph("benchmark://graphs-v0/mobilenet_v2@96")->graph;
  LimitPlanOptions lo;
  lo.memory_limit = 500000;
  lo.time_limit_s = 20;  // the search's 60% finds a fit in a sanitizer build too
  lo.measure_candidates = 16;
  std::vector<double> starts;
  const auto began = std::chrono::steady_clock::now();
  lo.runtime = [&](const Graph& candidate) -> Expected<double> {
    starts.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
    std::this_thread::sleep_for(std::chrono::milliseconds(2000));
    TG_ASSIGN_OR_RETURN(int64_t work, graph_work(candidate));
    return 1.0 / double(work);
  };
  Expected<LimitPlan> fit = plan_under_limit(g, lo);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  ASSERT_TRUE(fit.ok()) << fit.status().to_string();
  EXPECT_LE(fit->plan.arena, lo.memory_limit);
  EXPECT_EQ(fit->measured.size(), starts.size());
  for (double t : starts) EXPECT_LE(t, lo.time_limit_s * 0.75 + 0.05);
  EXPECT_LT(elapsed, 60);  // the limit, one measurement, one plan: generous, it asserts the stop
}

TEST(LimitPlanner, ABeamFindsCheaperRewritesThanTheGreedySearch) {
  // MobileNetV2 at a third of its bound: the greedy search's first split leaves it
  // recomputing a third more arithmetic; the beam, through states the greedy rule
  // passes over, fits with a few percent.
  const Graph g = *resolve_graph("benchmark://graphs-v0/mobilenet_v2@96")->graph;
  LimitPlanOptions lo;
  lo.memory_limit = graph_bound(g) / 3;
  lo.time_limit_s = 120;
  lo.beam_width = 1;
  Expected<LimitPlan> greedy = plan_under_limit(g, lo);
  ASSERT_TRUE(greedy.ok()) << greedy.status().to_string();
  lo.beam_width = 4;
  Expected<LimitPlan> beam = plan_under_limit(g, lo);
  ASSERT_TRUE(beam.ok()) << beam.status().to_string();
  EXPECT_LE(beam->plan.arena, lo.memory_limit);
  EXPECT_LT(beam->work, greedy->work) << fmt::format("greedy: {}; beam: {}", fmt::join(greedy->rewrites, "; "),
                                                     fmt::join(beam->rewrites, "; "));
  Expected<int64_t> work = graph_work(beam->graph);
  ASSERT_TRUE(work.ok());
  EXPECT_EQ(*work, beam->work);  // the work reported is the graph's
  Expected<int64_t> verified = verify_graph_plan(beam->graph, beam->plan.decisions, beam->plan.offsets);
  ASSERT_TRUE(verified.ok()) << verified.status().to_string();
  const GraphRun want = reference_run(g);
  Expected<GraphRun> got =
      run_graph(beam->graph, beam->plan.decisions, &beam->plan.offsets, kDefaultAlignment, kernels());
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_LE(max_output_difference(want, *got), tolerance(want));
}

TEST(LimitPlanner, WhatCannotFitIsResourceExhaustedAndAFittingGraphIsUntouched) {
  const Graph g = conv_net();
  LimitPlanOptions lo;
  lo.time_limit_s = 5;
  lo.memory_limit = 256;  // below the input image alone
  Expected<LimitPlan> none = plan_under_limit(g, lo);
  EXPECT_EQ(none.status().code(), StatusCode::kResourceExhausted);
  EXPECT_CONTAINS(none.status().message(), "smallest arena reached");
  EXPECT_CONTAINS(none.status().message(), "rewrites (splitting operators and recomputing tensors): split conv");
  lo.memory_limit = int64_t(1) << 30;
  Expected<LimitPlan> roomy = plan_under_limit(g, lo);
  ASSERT_TRUE(roomy.ok());
  EXPECT_TRUE(roomy->rewrites.empty());
  EXPECT_EQ(roomy->graph.ops.size(), g.ops.size());
  lo.memory_limit = 0;
  EXPECT_EQ(plan_under_limit(g, lo).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tensorgym
