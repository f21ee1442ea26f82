// The analytical cost model: hand-checked figures on tiny nests, and the relative
// behaviour a useful model must have on real schedules (vectorizing, tiling, caching
// a GEMM lowers the estimate; parallel loops divide it by the cores, minus the
// imbalance; bigger problems cost more), plus determinism.
#include "codegen/analysis/cost_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "codegen/analysis/features.h"
#include "codegen/ir/program.h"
#include "codegen/lower/strided_loads.h"
#include "codegen/lower/lower.h"
#include "codegen/schedule/random_schedule.h"
#include "support/host_memory_bandwidth.h"
#include "support/host_vector_costs.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

using namespace ir_build;
using ir_build::Loop;  // not the features' Loop

ProgramPtr parse(const std::string& text) {
  Expected<Program> p = parse_program(text);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return std::make_shared<const Program>(std::move(*p));
}

ProgramPtr gemm(int n) {
  const std::string s = std::to_string(n);
  return parse("input A: f32[" + s + ", " + s + "]\ninput B: f32[" + s + ", " + s +
               "]\nC[i, j] += A[i, k] * B[k, j]\n");
}

// c2d-2: NCHW conv2d 1x1, 64 -> 64 channels, 56 x 56.
ProgramPtr conv1x1() {
  return parse(
      "input X: f32[1, 64, 56, 56]\ninput W: f32[64, 64, 1, 1]\n"
      "Y[n, f, y, x] += X[n, c, y + r, x + s] * W[f, c, r, s] where y in 0..56, x in 0..56\n");
}

LoopNest lower_text(const ProgramPtr& p, const std::string& schedule) {
  Expected<Schedule> s = Schedule::from_text(p, schedule);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  Expected<LoopNest> nest = lower(*s);
  EXPECT_TRUE(nest.ok()) << nest.status().to_string();
  return std::move(*nest);
}

MachineModel cores(int n) {
  MachineModel m = MachineModel::reference();
  m.cores = n;
  return m;
}

double est(const ProgramPtr& p, const std::string& schedule, const MachineModel& m = cores(1)) {
  return est_cycles(lower_text(p, schedule), m);
}

const char* kTiled =
    "split(C.i, 32, io, ii); split(C.j, 32, jo, ji); reorder(C, io, jo, ii, ji)\n"
    "cache_write(C, CL); compute_at(CL, C.jo)\n";
const char* kTiledVector = "split(CL.j, 8, cjo, cji); vectorize(CL.cji); unroll(CL.cjo)\n";
const char* kPacked = "cache_read(B, CL, BP); compute_at(BP, C.jo)\n";

// ---- the machine ----------------------------------------------------------------------

TEST(MachineModel, ReferenceIsFixedAndHostOverrides) {
  const MachineModel a = MachineModel::reference(), b = MachineModel::reference();
  EXPECT_EQ(a.name, "reference");
  EXPECT_EQ(a.vector_bits, b.vector_bits);
  EXPECT_EQ(a.l1_bytes, b.l1_bytes);
  EXPECT_GT(a.l2_bytes, a.l1_bytes);
  EXPECT_GT(a.l3_bytes, a.l2_bytes);
  const MachineModel h = MachineModel::from_host(512, 3);
  EXPECT_EQ(h.name, "host");
  EXPECT_EQ(h.vector_bits, 512);
  EXPECT_EQ(h.cores, 3);
  EXPECT_GT(h.l1_bytes, 0);
  const MachineModel d = MachineModel::from_host();
  EXPECT_GE(d.vector_bits, 128);
  EXPECT_GE(d.cores, 1);
  // Gathers and scatters cost what this host's were measured at.
  const HostVectorCosts& v = host_vector_costs();
  if (v.gather_lane_cycles > 0) {
    EXPECT_EQ(d.gather_lane_cycles, v.gather_lane_cycles);
  }
  if (v.scatter_lane_cycles > 0) {
    EXPECT_EQ(d.scatter_lane_cycles, v.scatter_lane_cycles);
  }
  // Gathers and scatters serialize where the two together cost their sum.
  if (v.gather_scatter_lane_cycles >= v.gather_lane_cycles + v.scatter_lane_cycles) {
    EXPECT_TRUE(d.indexed_accesses_serialize);
  }
  if (v.gather_scatter_lane_cycles <= std::max(v.gather_lane_cycles, v.scatter_lane_cycles)) {
    EXPECT_FALSE(d.indexed_accesses_serialize);
  }
  EXPECT_FALSE(MachineModel::reference().indexed_accesses_serialize);
  // The L3 feeds a core as fast as it was measured to.
  const HostMemoryBandwidth& bw = host_memory_bandwidth();
  EXPECT_EQ(d.l3_bandwidth, bw.l3_bytes_per_cycle > 0 ? bw.l3_bytes_per_cycle : MachineModel::reference().l3_bandwidth);
}

TEST(MachineModel, DegenerateMachinesStayFinite) {
  // Every rate and count at zero: the model clamps what it divides by.
  MachineModel m = MachineModel::reference();
  m.fma_units = m.load_ports = m.store_ports = m.issue_width = m.cores = 0;
  m.l2_bandwidth = m.l3_bandwidth = m.dram_bandwidth = m.dram_bandwidth_total = 0;
  m.memory_parallelism = m.scheduler_window = m.cache_utilization = 0;
  m.line_bytes = m.page_bytes = m.dtlb_entries = m.stlb_entries = m.l1_ways = 0;
  m.cache_overflow_span = m.dram_writeback_cost = m.prefetch_run_bytes = std::nan("");
  const double e = est_cycles(lower_text(gemm(64), "parallel(C.i); split(C.j, 8, jo, ji); vectorize(C.ji)"), m);
  EXPECT_TRUE(std::isfinite(e));
  EXPECT_GT(e, 0);
}

// ---- hand-checked figures ---------------------------------------------------------------

TEST(CostModel, ComputeBoundLoopByHand) {
  // for i in 0..4096: C[i] = A[i] * 2 + 1, vectorized by 8 on a 256-bit machine: 512
  // vector iterations, each 1 load + 1 FMA + 1 store; one store port: 1 cycle each.
  // Everything is in L1 after the first touch of 32 KiB... minus the cold misses,
  // which the model counts as memory; make them cheap.
  MachineModel m = cores(1);
  m.l2_bandwidth = 1e9;
  m.l3_bandwidth = 1e9;
  m.dram_bandwidth = 1e9;
  m.dram_bandwidth_total = 1e9;
  m.loop_entry_cycles = 0;
  LoopNest nest;
  nest.inputs = {Arg("A", {4096})};
  nest.outputs = {Arg("C", {4096})};
  nest.body =
      Loop("C.io", 512,
           Loop("C.ii", 8, St("C", V("C.io") * I(8) + V("C.ii"), Ld("A", V("C.io") * I(8) + V("C.ii")) * F(2) + F(1)),
                ForKind::kVectorized));
  const CostBreakdown b = estimate_cost(nest, m);
  // Per vector iteration: max(1 FMA / 2, 1 load / 2, 1 store / 1, (3 + 2 loop) / 4) = 1.25.
  EXPECT_NEAR(b.compute_cycles, 512 * 1.25, 1e-9);
  EXPECT_NEAR(b.total_cycles, 512 * 1.25, 512 * 0.2);
  ASSERT_EQ(b.stores.size(), 1u);
  EXPECT_EQ(b.stores[0].instances, 4096);
  ASSERT_EQ(b.loops.size(), 2u);
  EXPECT_TRUE(b.loops[1].vectorized);
  EXPECT_EQ(b.loops[1].executions, 512);
}

// A vector read of a constant stride is the wide load and shuffle the backend emits
// (codegen/lower/strided_loads.h): its span's loads and the permutes, dearer than a
// contiguous read and cheaper than the gather a stride past kMaxLoadStride still is.
TEST(CostModel, StridedVectorReadsCostTheirSpanNotAGather) {
  MachineModel m = cores(1);
  auto compute = [&](int64_t stride) {
    LoopNest nest;
    nest.inputs = {Arg("A", {4096 * 16})};
    nest.outputs = {Arg("C", {4096})};
    nest.body = Loop(
        "C.io", 512,
        Loop("C.ii", 8,
             St("C", V("C.io") * I(8) + V("C.ii"), Ld("A", (V("C.io") * I(8) + V("C.ii")) * I(stride)) * F(2) + F(1)),
             ForKind::kVectorized));
    return estimate_cost(nest, m).stores.at(0).compute_cycles;
  };
  const double unit = compute(1), two = compute(2), four = compute(4), gather = compute(kMaxLoadStride + 1);
  EXPECT_LT(unit, two);
  EXPECT_LT(two, four);
  EXPECT_LT(four, gather);
  // Stride 2 over 8 lanes: two vector loads, one permute.
  EXPECT_LT(two, 2.5 * unit);
}

TEST(CostModel, AccumulatorChainIsLatencyBound) {
  // acc = acc + A[k] * B[k] over k: one add per iteration waits for the last (the
  // multiply is off the chain).
  MachineModel m = cores(1);
  m.loop_entry_cycles = 0;
  LoopNest nest;
  nest.inputs = {Arg("A", {1024}), Arg("B", {1024})};
  nest.outputs = {Arg("acc", {1})};
  nest.body = Loop("acc.k", 1024, St("acc", I(0), Ld("acc", I(0)) + Ld("A", V("acc.k")) * Ld("B", V("acc.k"))));
  const CostBreakdown b = estimate_cost(nest, m);
  EXPECT_NEAR(b.compute_cycles, 1024 * m.fp_add_latency, 1e-9);
  EXPECT_STREQ(b.stores[0].bound, "latency");
}

// ---- relative behaviour -----------------------------------------------------------------

TEST(CostModel, DeterministicAndBitExact) {
  ProgramPtr p = gemm(512);
  const std::string s = std::string(kTiled) + kTiledVector + kPacked + "parallel(C.io)";
  const LoopNest nest = lower_text(p, s);
  const double a = est_cycles(nest);
  const double b = est_cycles(nest);
  const double c = est(p, s, MachineModel::reference());
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, c);
  EXPECT_GT(a, 0);
  EXPECT_TRUE(std::isfinite(a));
  const CostBreakdown d = estimate_cost(nest);
  EXPECT_EQ(d.total_cycles, a);
  EXPECT_FALSE(d.to_string().empty());
}

TEST(CostModel, BreakdownTableRoundsToFourDigitsAndIndentsLoops) {
  CostBreakdown d;
  d.total_cycles = 132718.63999999998;
  d.compute_cycles = 100000;
  d.memory_cycles = 32718.5;
  d.overhead_cycles = 12;
  StoreCost s;
  s.buffer = "C";
  s.instances = 1024;
  s.compute_cycles = 512.25;
  s.memory_cycles = 3;
  s.l1_misses = 16;
  s.bound = "compute";
  d.stores.push_back(s);
  LoopCost outer;
  outer.loop = "i";
  outer.kind = ForKind::kParallel;
  outer.extent = 32;
  outer.executions = 1;
  outer.working_set_bytes = 4096;
  outer.fits = 1;
  outer.cycles = 132718.6;
  LoopCost inner = outer;
  inner.loop = "j";
  inner.depth = 1;
  inner.kind = ForKind::kSerial;
  inner.fits = 4;
  inner.vectorized = true;
  inner.gathers = true;
  d.loops = {outer, inner};
  EXPECT_EQ(d.to_string(),
            "total 1.327e+05 cycles (compute 1e+05, memory 3.272e+04, overhead 12)\n"
            "stores:\n"
            "  C                instances 1024       compute 512.2      memory 3          (tlb 0        ) misses L1 16 "
            "       L2 0         L3 0         compute\n"
            "loops:\n"
            "  parallel i[32] x1  ws 4096 B (fits L1)  1.327e+05 cycles\n"
            "    serial j[32] x1  ws 4096 B (fits -) vec(gathers)  1.327e+05 cycles\n");
}

TEST(CostModel, BiggerProblemsCostMore) {
  double last = 0;
  for (int n : {64, 128, 256, 512}) {
    const double e = est(gemm(n), "");
    EXPECT_GT(e, last) << n;
    last = e;
  }
  // Roughly cubic in n for the same schedule.
  const double r = est(gemm(256), "reorder(C, i, k, j)") / est(gemm(128), "reorder(C, i, k, j)");
  EXPECT_GT(r, 4);
  EXPECT_LT(r, 16);
}

TEST(CostModel, VectorizingTilingAndCachingAGemmHelp) {
  ProgramPtr p = gemm(1024);
  const double naive = est(p, "");
  // j innermost: unit-stride accesses LLVM vectorizes itself.
  const double ikj = est(p, "reorder(C, i, k, j)");
  // i innermost: column walks of A and C.
  const double jki = est(p, "reorder(C, j, k, i)");
  EXPECT_LT(ikj, naive / 5);
  EXPECT_GT(jki, naive);

  // Tiling alone keeps k innermost and walks 1 KiB-float columns of B with a 4 KiB
  // stride: the lines pile into a few cache sets and nothing is gained (measured: as
  // slow as the naive order). Vectorizing the tile, then packing B's panel into a
  // contiguous buffer, then a register tile with k outside, each help.
  const double tiled = est(p, kTiled);
  const double vec = est(p, std::string(kTiled) + kTiledVector);
  const double packed = est(p, std::string(kTiled) + kTiledVector + kPacked);
  const double expert =
      est(p,
          "split(C.i, 4, io, ii); split(C.j, 64, jo, ji); reorder(C, jo, io, ii, ji)\n"
          "cache_write(C, CL); compute_at(CL, C.io); reorder(CL, k, i, j); unroll(CL.i); vectorize(CL.j)\n"
          "cache_read(B, CL, BP); compute_at(BP, C.jo); vectorize(C.ji)\n");
  EXPECT_GT(tiled, naive / 2);
  EXPECT_LT(vec, naive / 5);
  EXPECT_LT(packed, vec);
  EXPECT_LT(expert, packed / 2);

  // Vectorizing a j block around the k loop turns 8 scalar reductions over a B column
  // into one over 8-wide rows (measured: 0.61 s against 4.9 s).
  const std::string base = "split(C.j, 8, jo, ji); reorder(C, i, jo, ji, k)";
  EXPECT_LT(est(p, base + "; vectorize(C.ji)"), est(p, base) / 4);
  // With ji innermost LLVM vectorizes it by itself: the annotation changes little.
  const std::string inner = "split(C.j, 8, jo, ji); reorder(C, i, jo, k, ji)";
  EXPECT_NEAR(est(p, inner + "; vectorize(C.ji)") / est(p, inner), 1.0, 0.25);
}

TEST(CostModel, ParallelDividesByTheCoresWithImbalance) {
  ProgramPtr p = gemm(512);
  const std::string s = std::string(kTiled) + kTiledVector + kPacked;
  const double serial = est(p, s, cores(2));
  const double par2 = est(p, s + "parallel(C.io)", cores(2));
  const double par1 = est(p, s + "parallel(C.io)", cores(1));
  EXPECT_GT(par2 / serial, 0.45);
  EXPECT_LT(par2 / serial, 0.65);
  // On one core a parallel loop only adds its call overhead.
  EXPECT_NEAR(par1 / serial, 1.0, 0.02);
  EXPECT_GE(par1, serial);
  // Three rows of work on two cores: one core does two of them.
  ProgramPtr q = parse("input X: f32[3, 65536]\nY[i, j] = X[i, j] * 2.0 + 1.0\n");
  const std::string rows = "split(Y.j, 8, jo, ji); vectorize(Y.ji); parallel(Y.i)";
  const double r1 = est(q, rows, cores(1));
  const double r2 = est(q, rows, cores(2));
  const double r3 = est(q, rows, cores(3));
  EXPECT_NEAR(r2 / r1, 2.0 / 3.0, 0.05);
  EXPECT_NEAR(r3 / r1, 1.0 / 3.0, 0.05);
}

TEST(CostModel, GathersCostMoreThanContiguousVectors) {
  ProgramPtr p = parse("input X: f32[256, 256]\nY[i, j] = X[i, j] + 1.0\n");
  ProgramPtr t = parse("input X: f32[256, 256]\nY[i, j] = X[j, i] + 1.0\n");
  const std::string s = "split(Y.j, 8, jo, ji); vectorize(Y.ji)";
  EXPECT_GT(est(t, s), 1.5 * est(p, s));
}

TEST(CostModel, MaskedTailsCostMoreThanExactSplits) {
  ProgramPtr p = parse("input X: f32[1000]\nY[i] = X[i] * 2.0\n");
  const double exact = est(p, "split(Y.i, 8, o, v); vectorize(Y.v)");
  const double tail = est(p, "split(Y.i, 16, o, v); vectorize(Y.v)");
  EXPECT_GT(tail, exact);
}

TEST(CostModel, HeapAllocationsInsideLoopsCostPerExecution) {
  // 1 MiB scratch buffers (above the stack limit), allocated once or once per i.
  auto nest = [](bool inside) {
    LoopNest n;
    n.outputs = {Arg("O", {1})};
    Stmt fill = Loop("T.j", 1024, St("T", V("T.j"), F(1)));
    if (inside) {
      n.body = Loop("O.i", 16, Allocate::make("T", DataType::f32(), {262144}, fill));
    } else {
      n.body = Allocate::make("T", DataType::f32(), {262144}, Loop("O.i", 16, fill));
    }
    return n;
  };
  const MachineModel m = cores(1);
  const double inside = est_cycles(nest(true), m), outside = est_cycles(nest(false), m);
  EXPECT_NEAR(inside - outside, 15 * m.heap_alloc_cycles, 1e-6 * inside);
}

TEST(CostModel, ScratchLargerThanTheWorkspacePoolFaultsItsPagesInEveryExecution) {
  // A scratch buffer the runtime's pool keeps (1 MiB) against one it hands back to the
  // C library (a pool of 512 KiB): the second is mapped anew on each of the 16
  // executions and faults in each of its 256 pages (first touches measure 2-2.8 us a
  // page on the Zen 4 VM).
  LoopNest n;
  n.outputs = {Arg("O", {1})};
  Stmt fill = Loop("T.j", 1024, St("T", V("T.j"), F(1)));
  n.body = Loop("O.i", 16, Allocate::make("T", DataType::f32(), {262144}, fill));
  MachineModel m = cores(1);
  const double pooled = est_cycles(n, m);
  m.workspace_pool_bytes = 512 << 10;
  EXPECT_NEAR(est_cycles(n, m) - pooled, 16 * 256 * m.page_fault_cycles, 1e-6 * pooled);
}

// ---- the code generator and the memory system of the development VM ------------------

const LoopCost* find_loop(const CostBreakdown& b, const std::string& name, int depth = -1) {
  for (const LoopCost& l : b.loops)
    if (l.loop == name && (depth < 0 || l.depth == depth)) return &l;
  return nullptr;
}
// The loop points into the breakdown: a temporary one would leave it dangling.
const LoopCost* find_loop(CostBreakdown&&, const std::string&, int = -1) = delete;

TEST(CostModel, ReferenceCachesAreTheDevelopmentVms) {
  // A walk over R rows 4 KiB apart, repeated: every row's line maps to the same L1
  // set. The development VM's 12-way L1 keeps 9 of them (at 75 % use) across the
  // repeats; 16 rows thrash it and come from L2 on every repeat.
  auto walk = [](int rows) {
    LoopNest n;
    n.inputs = {Arg("A", {rows, 1024})};
    n.outputs = {Arg("S", {rows})};
    n.body = Loop("S.t", 100, Loop("S.r", rows, St("S", V("S.r"), Ld("S", V("S.r")) + Ld("A", V("S.r") * I(1024)))));
    return estimate_cost(n, cores(1));
  };
  const MachineModel m = MachineModel::reference();
  EXPECT_EQ(m.l1_bytes, 48 << 10);
  EXPECT_EQ(m.l1_ways, 12);
  EXPECT_EQ(m.l2_bytes, 2 << 20);
  const CostBreakdown fits = walk(8), thrashes = walk(16);
  EXPECT_LE(fits.stores[0].l1_misses, 2 * 8);
  EXPECT_GE(thrashes.stores[0].l1_misses, 0.9 * 100 * 16);
}

TEST(CostModel, ColumnWalksCostMoreThanRowWalks) {
  // The same copy-and-scale of a row-major 1024 x 1024 matrix, its innermost loop
  // walking rows (unit stride, vectorized) or columns (4 KiB apart: a gather and a
  // scatter per vector, a cache line per element, set conflicts).
  ProgramPtr p = parse("input X: f32[1024, 1024]\nY[i, j] = X[i, j] * 2.0 + 1.0\n");
  const double rows = est(p, "");
  const double columns = est(p, "reorder(Y, j, i)");
  EXPECT_GT(columns, 4 * rows);
}

TEST(CostModel, LlvmVectorizesStridedLoopsWithGathersWhereTheTargetHasThem) {
  // Y[i, j] = X[j, i] * 2 + 1 with j innermost: Y is unit-stride, X a column walk.
  // With AVX-512's gathers and scatters LLVM still vectorizes j (the FP work and the
  // contiguous stores pay for the gather); without them j stays scalar.
  ProgramPtr p = parse("input X: f32[256, 256]\nY[i, j] = X[j, i] * 2.0 + 1.0\n");
  const LoopNest nest = lower_text(p, "");
  const CostBreakdown with = estimate_cost(nest, cores(1));
  const LoopCost* j = find_loop(with, "Y.j");
  ASSERT_NE(j, nullptr);
  EXPECT_TRUE(j->vectorized);
  EXPECT_TRUE(j->gathers);
  MachineModel avx = cores(1);
  avx.vector_gather = avx.vector_scatter = false;
  const CostBreakdown without = estimate_cost(nest, avx);
  const LoopCost* js = find_loop(without, "Y.j");
  ASSERT_NE(js, nullptr);
  EXPECT_FALSE(js->vectorized);
  // A unit-stride read vectorizes without gathers.
  const CostBreakdown unit =
      estimate_cost(lower_text(parse("input X: f32[256, 256]\nY[i, j] = X[i, j] * 2.0 + 1.0\n"), ""), cores(1));
  EXPECT_TRUE(find_loop(unit, "Y.j")->vectorized);
  EXPECT_FALSE(find_loop(unit, "Y.j")->gathers);
  EXPECT_GT(with.total_cycles, 1.5 * unit.total_cycles);
  // A plain copy of 16 unrolled rows per iteration has nothing to gain: a gather
  // and a scatter per copy cost more than the scalar loads and stores they replace.
  ProgramPtr copy = parse("input X: f32[64, 64]\nY[i, j] = X[i, j]\n");
  const CostBreakdown rows = estimate_cost(
      lower_text(copy, "split(Y.j, 16, jo, ji); reorder(Y, jo, i, ji); unroll(Y.ji)"), cores(1));
  const LoopCost* i = find_loop(rows, "Y.i");
  ASSERT_NE(i, nullptr);
  EXPECT_FALSE(i->vectorized);
}

TEST(CostModel, ALoadUnderASelectInAVectorizedLoopIsMaskedAndTheOtherLoadsStayPlain) {
  // The same row scale, with and without a padding test on the column: LLVM cannot
  // speculate the guarded load, but with no loop inside the vector loop to split into
  // two versions around the select, W's load stays a plain load (hoisted: the optimized
  // IR has no masked load or gather at all, LLVM peels the one failing column). The
  // model priced W's load as a masked gather here, over twice the plain nest.
  const MachineModel m = cores(1);
  ProgramPtr padded = parse("input X: f32[64, 128]\ninput W: f32[64]\n"
                            "Y[i, j] = select(j >= 1, X[i, j - 1], 0.0) * W[i] where j in 0..128\n");
  ProgramPtr plain = parse("input X: f32[64, 128]\ninput W: f32[64]\nY[i, j] = X[i, j] * W[i]\n");
  const CostBreakdown with = estimate_cost(lower_text(padded, ""), m);
  const CostBreakdown without = estimate_cost(lower_text(plain, ""), m);
  const LoopCost* j = find_loop(with, "Y.j");
  ASSERT_NE(j, nullptr);
  EXPECT_TRUE(j->vectorized);
  EXPECT_LT(with.compute_cycles, 2 * without.compute_cycles) << with.to_string() << without.to_string();
}

ProgramPtr depthwise(const std::string& padding_test) {
  return parse("input X: f32[1, 32, 112, 112]\ninput W: f32[32, 3, 3]\n"
               "P[n, c, h, w] = select(" + padding_test + ", X[n, c, h - 1, w - 1], 0.0) where h in 0..114, w in 0..114\n"
               "D[n, c, y, x] += P[n, c, y + r, x + s] * W[c, r, s] where y in 0..112, x in 0..112\n");
}

// The same, padding a buffer the kernel computes (a copy of its input) rather than the
// input itself: an allocation has no read slack (support/read_slack.h), so the code
// generator keeps the load under the select behind a branch, as it did for inputs too
// before they had slack. The rules for those branches were measured on dep-1 then.
ProgramPtr depthwise_of_computed(const std::string& padding_test) {
  return parse("input X0: f32[1, 32, 112, 112]\ninput W: f32[32, 3, 3]\n"
               "X[n, c, h, w] = X0[n, c, h, w]\n"
               "P[n, c, h, w] = select(" + padding_test + ", X[n, c, h - 1, w - 1], 0.0) where h in 0..114, w in 0..114\n"
               "D[n, c, y, x] += P[n, c, y + r, x + s] * W[c, r, s] where y in 0..112, x in 0..112\n");
}

// The smallest fraction of the time a load of `buffer` runs in the stores of `nest`.
double least_read_fraction(const LoopNest& nest, const std::string& buffer) {
  const NestSummary s = summarize_nest(nest);
  double least = 2;
  for (const NestStore& st : s.stores)
    for (const NestAccess& a : st.accesses)
      if (a.kind == AccessKind::kRead && s.buffers[size_t(a.buffer)].name == buffer) least = std::min(least, a.fraction);
  return least;
}

TEST(CostModel, LoadsUnderASelectWithinAnInputsSlackRunEveryTime) {
  // The code generator evaluates both arms of a select whose loads read inputs within
  // their read slack, unless the select is a store's whole value
  // (codegen/analysis/speculative_loads.h), and the summary the model reads says so:
  // X's load under dep-1's inlined padding test runs every time. Padding a computed
  // buffer, or reaching past the slack, the load runs only where the test holds.
  const std::string test = "h >= 1 && h <= 112 && w >= 1 && w <= 112";
  EXPECT_EQ(least_read_fraction(lower_text(depthwise(test), "compute_inline(P)"), "X"), 1.0);
  EXPECT_LT(least_read_fraction(lower_text(depthwise_of_computed(test), "compute_inline(P)"), "X"), 1.0);
  ProgramPtr far = parse("input X: f32[8, 8192]\n"
                         "Y[c, h] = 2.0 * select(h >= 8192, X[c, h - 8192], 0.0) where h in 0..16384\n");
  EXPECT_LT(least_read_fraction(lower_text(far, ""), "X"), 1.0);
  ProgramPtr near = parse("input X: f32[8, 8192]\n"
                          "Y[c, h] = 2.0 * select(h >= 16, X[c, h - 16], 0.0) where h in 0..8208\n");
  EXPECT_EQ(least_read_fraction(lower_text(near, ""), "X"), 1.0);
  // A select that is a store's whole value (the padding stage's own) stays a branch.
  EXPECT_LT(least_read_fraction(lower_text(depthwise(test), ""), "X"), 1.0);
  // The schedule whose branches LLVM's jump threading left scalar (1.6 ms measured)
  // now vectorizes as the column taps alone do (0.46 and 0.46 ms measured).
  const MachineModel m = cores(1);
  ProgramPtr p = depthwise(test);
  const CostBreakdown cost = estimate_cost(lower_text(p, "compute_inline(P); unroll(D.r); unroll(D.s)"), m);
  const LoopCost* both = find_loop(cost, "D.x");
  ASSERT_NE(both, nullptr);
  EXPECT_TRUE(both->vectorized);
}

TEST(CostModel, ASelectWhoseTapsLLVMUnrollsAfterItsVectorizerLeavesThePixelsScalar) {
  // dep-1 with its padding read from the input beside a select: with both tap loops
  // left to LLVM, its loop vectorizer meets the 3-iteration tap loop first, declines,
  // and the taps are unrolled after it: the pixel loop stays scalar (1.4-2.4 ms). With
  // one tap loop unrolled by the schedule the pixels vectorize (0.40 ms), and so they
  // do when the padding is a tile computed in loops of its own before the taps read
  // it (`compute_at(P, D.r)`, 0.48 ms).
  const MachineModel m = cores(1);
  ProgramPtr p = depthwise("h >= 1 && h <= 112 && w >= 1 && w <= 112");
  auto pixels_vectorized = [&](const std::string& schedule) {
    const CostBreakdown cost = estimate_cost(lower_text(p, schedule), m);
    const LoopCost* x = find_loop(cost, "D.x");
    EXPECT_NE(x, nullptr) << schedule;
    return x && x->vectorized;
  };
  EXPECT_FALSE(pixels_vectorized("compute_inline(P)"));
  EXPECT_TRUE(pixels_vectorized("compute_inline(P); unroll(D.r)"));
  EXPECT_TRUE(pixels_vectorized("compute_inline(P); unroll(D.s)"));
  EXPECT_TRUE(pixels_vectorized("compute_at(P, D.r)"));
  EXPECT_GT(est(p, "compute_inline(P)"), 2 * est(p, "compute_inline(P); unroll(D.r)"));
}

TEST(CostModel, AFusedLoopsQuotientAndRemainderLoadWholeVectorsOnlyWhereTheTargetDoesNotGather) {
  // dep-1 `fuse(D.y, D.x, f)`: the padded tile is read at P[f / 112 * 114 + f % 112 +
  // ...]. Where the target gathers (the Zen 4 VM, every AVX-512 part) LLVM computes a
  // division per lane and gathers: 1.6-2.0 ms against 0.26 ms unfused. Without gathers
  // (opt -mcpu=haswell) it loads each lane alone and later passes merge the 8 lanes,
  // which 8 | 112 lines up, into one vector load. A divisor with no factor of 4
  // (fusing x of a 7-wide image) leaves one address per lane either way.
  ProgramPtr p = depthwise("h >= 1 && h <= 112 && w >= 1 && w <= 112");
  MachineModel gathers = cores(1);
  gathers.gather_lane_cycles = 1.5;  // as measured on the Zen 4 VM
  ASSERT_TRUE(gathers.vector_gather);
  MachineModel none = gathers;
  none.vector_gather = none.vector_scatter = false;
  for (const MachineModel* m : {&gathers, &none}) {
    const CostBreakdown fused = estimate_cost(lower_text(p, "fuse(D.y, D.x, f)"), *m);
    const LoopCost* f = find_loop(fused, "D.f");
    ASSERT_NE(f, nullptr);
    const double unfused = est(p, "", *m);
    if (m == &gathers) {
      EXPECT_TRUE(!f->vectorized || f->gathers) << fused.to_string();
      EXPECT_GT(fused.total_cycles, 2 * unfused) << fused.to_string();
    } else {
      EXPECT_TRUE(f->vectorized && !f->gathers) << fused.to_string();
      EXPECT_LT(fused.total_cycles, 1.5 * unfused) << fused.to_string();
    }
  }

  ProgramPtr narrow = parse(
      "input X: f32[1, 32, 7, 7]\ninput W: f32[32, 3, 3]\n"
      "P[n, c, h, w] = select(h >= 1 && h <= 7 && w >= 1 && w <= 7, X[n, c, h - 1, w - 1], 0.0) "
      "where h in 0..9, w in 0..9\n"
      "D[n, c, y, x] += P[n, c, y + r, x + s] * W[c, r, s] where y in 0..7, x in 0..7\n");
  const CostBreakdown cost = estimate_cost(lower_text(narrow, "fuse(D.y, D.x, f)"), none);
  const LoopCost* g = find_loop(cost, "D.f");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(g->vectorized && !g->gathers);
}

TEST(CostModel, APaddingValueComputedPerTapIsIfConvertedWithTheUpdate) {
  // dep-1 with the padding stage inlined, or computed at the innermost tap (a one-element
  // buffer, a register): either way the select sits in the middle of each tap's update
  // and LLVM's vector loop over x runs it on both arms, the other loads as masked
  // gathers (19 gathers in the optimized IR; measured 1.3 ms). Computed as a 3 x 3 tile
  // at x before the taps read it, the selects stay in the tile (no gathers; 0.24 ms).
  // (The model sees 1.6 times where the machine shows 5; it had them equal.)
  ProgramPtr p = depthwise_of_computed("h >= 1 && h <= 112 && w >= 1 && w <= 112");
  const double tile = est(p, "compute_at(P, D.x)");
  const double per_tap = est(p, "compute_at(P, D.s)");
  const double inlined = est(p, "compute_inline(P)");
  EXPECT_GT(per_tap, 1.4 * tile);
  EXPECT_NEAR(per_tap / inlined, 1.0, 0.3);
}

TEST(CostModel, PaddedTapsUnrolledByTheScheduleInTwoLoopsAreJumpThreadedAndStayScalar) {
  // dep-1 with the padding inlined and both tap loops unrolled by the schedule (as an
  // auto_unroll_max_step pragma does): LLVM's jump threading duplicates blocks between
  // the 9 copies' shared padding tests and the pixel loop stays scalar (1.6 ms
  // measured). The column taps alone unrolled by the schedule vectorize (0.2 ms).
  ProgramPtr p = depthwise_of_computed("h >= 1 && h <= 112 && w >= 1 && w <= 112");
  const MachineModel m = cores(1);
  const CostBreakdown both = estimate_cost(lower_text(p, "compute_inline(P); unroll(D.r); unroll(D.s)"), m);
  const CostBreakdown columns = estimate_cost(lower_text(p, "compute_inline(P); unroll(D.s)"), m);
  auto pixel_loop = [](const CostBreakdown& b) {
    for (const LoopCost& l : b.loops)
      if (l.loop == "D.x") return l;
    ADD_FAILURE() << "no loop D.x";
    return LoopCost();
  };
  EXPECT_FALSE(pixel_loop(both).vectorized);
  EXPECT_TRUE(pixel_loop(columns).vectorized);
  EXPECT_GT(both.total_cycles, 3 * columns.total_cycles);
  // Without a load under the select (nothing to branch around) both vectorize.
  ProgramPtr plain = parse(
      "input X: f32[1, 32, 114, 114]\ninput W: f32[32, 3, 3]\n"
      "D[n, c, y, x] += X[n, c, y + r, x + s] * W[c, r, s] where y in 0..112, x in 0..112\n");
  EXPECT_TRUE(pixel_loop(estimate_cost(lower_text(plain, "unroll(D.r); unroll(D.s)"), m)).vectorized);
}

TEST(CostModel, APaddingSelectSplitAroundAnInnerLoopGathersTheOtherLoads) {
  // dep-1 with the padding inlined, the column taps a loop LLVM unrolls inside the
  // pixel loop: LLVM first unswitches the row clause out of that small loop, and both
  // versions keep W's loads, which the vectorized pixel loop runs under the clause's
  // masks as gathers (18 in the optimized IR; 3.3 ms). With the column taps unrolled by
  // the schedule there is no such loop: the row clause is one more bit of X's mask and
  // W's loads stay plain (no gather; 0.16 ms). The model had the two equal.
  ProgramPtr p = depthwise_of_computed("h >= 1 && h <= 112 && w >= 1 && w <= 112");
  EXPECT_LT(est(p, "unroll(D.s); compute_inline(P)"), 0.8 * est(p, "compute_inline(P)"));
  // The rows unrolled by the schedule inside the loop over the columns: in each copy
  // the row clause is a constant, the loop over the columns is split around it (26
  // gathers; 1.4 ms). The other way round, none (0.22 ms).
  EXPECT_LT(est(p, "reorder(D, s, r); unroll(D.s); compute_inline(P)"),
            0.8 * est(p, "reorder(D, s, r); unroll(D.r); compute_inline(P)"));
  // A padding stage computed per tap is the same value once SROA makes it a register.
  EXPECT_LT(est(p, "unroll(D.s); compute_at(P, D.s)"), 0.8 * est(p, "compute_at(P, D.s)"));
  // The taps fused into one loop LLVM unrolls: the row clause reads it through a
  // division and holds for three copies in a row (8 gathers; 1.87 ms). (D's loops
  // alone: the copy of the input costs both the same.)
  auto d_cycles = [&](const std::string& schedule) {
    const CostBreakdown cost = estimate_cost(lower_text(p, schedule), cores(1));
    const LoopCost* c = find_loop(cost, "D.c");
    return c ? c->cycles : 0.0;
  };
  EXPECT_GT(d_cycles("fuse(D.r, D.s, f); compute_inline(P)"), 2 * d_cycles("unroll(D.s); compute_inline(P)"));
}

TEST(CostModel, APaddingTestOnRowsOutsideTheVectorLoopIsUnswitched) {
  // dep-1 with the padding inlined. With the row taps unrolled inside the pixel loop,
  // each tap's row test is a different branch: LLVM keeps them in the vector loop and
  // runs W's loads on both arms of each, as masked gathers (18 in the optimized IR;
  // measured 3.3 ms). With the row taps outside it, the row test does not move in the
  // pixel loop and LLVM unswitches it: W's loads are hoisted, X's column-masked loads
  // are the only masked ones (none gathered; measured 0.15 ms). The model had the
  // second 1.15 times the first.
  ProgramPtr p = depthwise_of_computed("h >= 1 && h <= 112 && w >= 1 && w <= 112");
  const double taps_inside = est(p, "compute_inline(P)");
  const double rows_outside = est(p, "reorder(D, c, r, x); compute_inline(P)");
  EXPECT_LT(rows_outside, 0.8 * taps_inside);
}

TEST(CostModel, APaddingRangeTestOverAWholeLoopIsASwitchTheVectorizerLeaves) {
  // dep-1's padding stage: its column test `w >= 1 && w <= 112` over w in 0..114 leaves
  // out exactly the first and the last column. LLVM rewrites it as `w != 0 && w != 113`
  // and then as a switch, and its loop vectorizer leaves a loop with a switch alone
  // ("loop contains a switch statement"): the columns stay scalar. Computed at the
  // output's rows, the stage runs three times over (0.54 ms against the naive nest's
  // 0.24); the model had it cheaper than the naive nest. Split by 2, the test is on
  // `o * 2 + i` and the loop is vectorized.
  ProgramPtr p = depthwise("h >= 1 && h <= 112 && w >= 1 && w <= 112");
  const CostBreakdown naive = estimate_cost(lower_text(p, ""), cores(1));
  const LoopCost* w = find_loop(naive, "P.w");
  ASSERT_NE(w, nullptr);
  EXPECT_FALSE(w->vectorized);
  EXPECT_GT(est(p, "compute_at(P, D.y)"), est(p, ""));
  const CostBreakdown halves = estimate_cost(lower_text(p, "split(P.w, 2, wo, wi)"), cores(1));
  const LoopCost* split = find_loop(halves, "P.wo");
  ASSERT_NE(split, nullptr);
  EXPECT_TRUE(split->vectorized);
}

TEST(CostModel, AnAccumulatorAllocatedInsideTheLoopIsNoReductionOverIt) {
  // dep-1's output accumulated in a one-element buffer computed at x: the buffer is
  // allocated inside x, so each pixel sums its 9 taps in its own register and LLVM
  // vectorizes x as for the plain nest (measured 0.27 ms, as the naive nest's 0.26 ms;
  // estimated 6.8 times the naive nest when the model took it for a float reduction
  // over x).
  ProgramPtr p = depthwise("h >= 1 && h <= 112 && w >= 1 && w <= 112");
  EXPECT_LT(est(p, "cache_write(D, D_w); compute_at(D_w, D.x)"), 1.5 * est(p, ""));
}

TEST(CostModel, PaddingClausesThatDoNotMoveWithTheVectorLoopAreHoisted) {
  // A padded copy, j vectorized by LLVM: clauses on the row i are computed once per
  // row outside the vector loop (LICM), clauses on j in every vector iteration. (The
  // padding tile of dep-1 at x has its row clauses on y and its unrolled h only.)
  auto copy = [](const std::string& test) {
    ProgramPtr p = parse("input X: f32[64, 128]\nY[i, j] = select(" + test + ", X[i - 1, j], 0.0) where i in 0..66\n");
    return estimate_cost(lower_text(p, ""), cores(1)).compute_cycles;
  };
  const double rows = copy("i >= 1 && i <= 64 && i >= 2 && i <= 63");
  const double columns = copy("i >= 1 && i <= 64 && j >= 2 && j <= 125");
  EXPECT_LT(rows, 0.8 * columns);
}

TEST(CostModel, DivisionsOfAFusedLoopOutsideTheInnerLoopAreHoisted) {
  // A random schedule of the 1x1 convolution whose fused pixel loop (x outside y) puts
  // `q % 56 * 56 + q / 56` in every index, around f and the channel loop: LICM
  // computes the division and the modulo once per pixel, so the nest costs what the
  // same loop order without the fusion does (it was estimated 2.8 times dearer;
  // measured 7.6 ms, as the plain order).
  ProgramPtr p = conv1x1();
  const double fused = est(p,
                           "reorder(Y, x, y, f, s); split(Y.r, 3, o101, i101); split(Y.s, 5, o202, i202); fuse(Y.x, Y.y, f305); split(Y.o101, 2, o408, i408); reorder(Y, i202, i408, o202); split(Y.n, 8, o610, i610); split(Y.o610, 5, o711, i711); cache_read(W, Y, W_r813)");
  const double plain = est(p, "reorder(Y, x, y, f, s)");
  EXPECT_LT(fused, 1.3 * plain);
}

TEST(CostModel, AReductionWhoseAccumulatorStaysInARegisterIsUnrolledAndTheLoopAroundVectorized) {
  // Y[f, p] += X[c, p] * W[f, c], c innermost. LICM keeps Y[f, p] in a register across
  // c before LLVM decides on unrolling, so a copy of the body is two loads and an
  // FMA: 32 channels unroll fully and p, now innermost, is vectorized (the measured
  // 6x of such 1x1 convolutions); 128 channels stay a loop, a chain of dependent adds.
  auto conv = [](int channels) {
    const std::string c = std::to_string(channels);
    return estimate_cost(lower_text(parse("input X: f32[" + c + ", 256]\ninput W: f32[16, " + c +
                                          "]\nY[f, p] += X[c, p] * W[f, c]\n"),
                                    ""),
                         cores(1));
  };
  const CostBreakdown small = conv(32), large = conv(128);
  const LoopCost* ps = find_loop(small, "Y.p", 1);
  const LoopCost* pl = find_loop(large, "Y.p", 1);
  ASSERT_NE(ps, nullptr);
  ASSERT_NE(pl, nullptr);
  EXPECT_TRUE(ps->vectorized);
  EXPECT_FALSE(pl->vectorized);
  // Per multiply-add, the unrolled and vectorized one is several times cheaper.
  EXPECT_LT(small.total_cycles / 32, large.total_cycles / 128 / 3);
}

TEST(CostModel, FusedLoopsReuseOnlyWhatFitsBetweenTwoVisitsOfALine) {
  // C = A * B with i and j fused into one loop f inside k. In row order C[f] is a
  // unit-stride walk. In column order (j outer) C[f % 1024 * 1024 + f / 1024] comes
  // back to a line only after 1024 iterations and 1024 other lines 4 KiB apart:
  // they overflow the L1 and pile into 32 of the L2's sets, so every visit comes
  // from L3.
  ProgramPtr p = gemm(1024);
  const CostBreakdown rows = estimate_cost(lower_text(p, "fuse(C.i, C.j, f); reorder(C, k, f)"), cores(1));
  const CostBreakdown columns =
      estimate_cost(lower_text(p, "reorder(C, j, i); fuse(C.j, C.i, f); reorder(C, k, f)"), cores(1));
  ASSERT_EQ(rows.stores.size(), 2u);
  ASSERT_EQ(columns.stores.size(), 2u);
  // (Row order streams C from L3 once per k: a miss per 16 elements.)
  EXPECT_GT(columns.stores[1].l2_misses, 0.9 * 2 * 1024.0 * 1024 * 1024);
  EXPECT_GT(columns.stores[1].l2_misses, 12 * rows.stores[1].l2_misses);
  EXPECT_GT(columns.total_cycles, 3 * rows.total_cycles);
  // A modulo walk over a 4 KiB row comes back to it every 1024 iterations, with
  // little else in between: it stays in L1 (the cached row of B of a fused i, j).
  const CostBreakdown cached =
      estimate_cost(lower_text(p, "cache_read(B, C, BR); fuse(C.i, C.j, f); reorder(C, k, f); compute_at(BR, C.k)"),
                    cores(1));
  double row_misses = -1;
  for (const StoreCost& s : cached.stores)
    if (s.buffer == "C" && s.instances > 1e9) row_misses = s.l1_misses;
  EXPECT_GE(row_misses, 0);
  EXPECT_LT(row_misses, 1024.0 * 1024 * 1024 / 4);
}

// S[x] += A[c, x] over `rows` rows c inside 64 columns x: each iteration of x touches
// one line of every row, and the next 15 iterations come back to the same lines.
double column_walk_l1_misses(int64_t rows, const MachineModel& m) {
  LoopNest n;
  n.inputs = {Arg("A", {rows, 1040})};
  n.outputs = {Arg("S", {64})};
  n.body =
      Loop("S.x", 64, Loop("S.c", rows, St("S", V("S.x"), Ld("S", V("S.x")) + Ld("A", V("S.c") * I(1040) + V("S.x")))));
  return estimate_cost(n, m).stores[0].l1_misses;
}

TEST(CostModel, AWorkingSetJustPastTheCacheLosesOnlyPartOfItsLines) {
  // The reference L1 holds 48 KiB; a working set fits in 3/4 of it (576 lines). Past
  // that, the share of lines fetched again each iteration grows with the overflow
  // and reaches all of them half a capacity further (864 lines): a real L1 is not an
  // LRU cache and its prefetchers refill part of what falls out (c2d-2 reading 512
  // lines, 64 channels x 8 image rows, in each pixel: 33.5 KiB on the 32 KiB Zen 4 L1,
  // 3.3 ms run, 10 ms estimated with a cliff).
  const MachineModel m = cores(1);
  auto per_touch = [&](int64_t rows) { return column_walk_l1_misses(rows, m) / double(64 * rows); };
  const double fits = per_touch(500), just_past = per_touch(640), past = per_touch(760), far_past = per_touch(900);
  EXPECT_NEAR(fits, 1.0 / 16, 0.01);  // each line once: 16 floats a line
  EXPECT_GT(just_past, fits * 1.5);
  EXPECT_LT(just_past, 0.5);
  EXPECT_GT(past, just_past * 1.5);
  EXPECT_NEAR(far_past, 1.0, 0.02);  // every line again every iteration
  // With the cliff (span 0) a working set one line past the capacity misses everything.
  MachineModel cliff = m;
  cliff.cache_overflow_span = 0;
  EXPECT_NEAR(column_walk_l1_misses(640, cliff) / (64 * 640.0), 1.0, 0.02);
}

TEST(CostModel, AStreamWrittenToDramCostsAboutWhatAStreamReadDoes) {
  // 64 MiB, twice the reference L3, written (a fill, then a write-back), read, and
  // copied. One core is limited by its outstanding misses, not by the bus: on the Zen 4
  // VM 51 MB written took 1.91 ms, read 1.97 ms, copied 3.89 ms. Write-backs charged
  // like fills (dram_writeback_cost 1) would make the write cost twice the read.
  const ProgramPtr write = parse("input W: f32[1]\nY[i] = W[0] where i in 0..16777216\n");
  const ProgramPtr read = parse("input X: f32[16777216]\nS[j] += X[i * 16 + j] where j in 0..16, i in 0..1048576\n");
  const ProgramPtr copy = parse("input X: f32[16777216]\nY[i] = X[i]\n");
  const MachineModel m = cores(1);
  const double w = est(write, "", m), r = est(read, "reorder(S, i, j)", m), c = est(copy, "", m);
  EXPECT_NEAR(w / r, 1.2, 0.25);
  EXPECT_NEAR(c / (w + r), 1.0, 0.2);
  MachineModel bus = m;
  bus.dram_writeback_cost = 1;
  EXPECT_NEAR(est(write, "", bus) / w, 2.0 / 1.2, 0.1);
}

TEST(CostModel, ShortRunsThroughMemoryWaitForTheirFirstLines) {
  // c2d-2 with rfactor(Y.c): the channels' 51 MB of partial sums summed in the order
  // f, y, x reads each channel in one run of 12.5 KiB per f; in the order y, f, x in
  // runs of 56 floats (224 bytes), each starting 12.5 KiB after the last, whose first
  // lines the prefetchers do not bring in time: 13.7 ms against 6.6 measured.
  ProgramPtr p = conv1x1();
  const MachineModel m = cores(1);
  const double runs = est(p, "rfactor(Y.c, Y_rf)", m);
  const double pieces = est(p, "reorder(Y, r, s, f, x); rfactor(Y.c, Y_rf)", m);
  EXPECT_GT(pieces, 1.5 * runs);
  // Every tracked walk streamed (the rule off): much closer together.
  MachineModel streamed = m;
  streamed.prefetch_run_bytes = 0;
  const double gap = est(p, "reorder(Y, r, s, f, x); rfactor(Y.c, Y_rf)", streamed) / est(p, "rfactor(Y.c, Y_rf)", streamed);
  EXPECT_LT(gap, pieces / runs - 0.2);
}

TEST(CostModel, UnrolledCopiesTouchTheirLinesOnceWhateverTheirOrder) {
  // Inside the innermost loop, 4 x 16 unrolled copies read 16 rows of A 4 KiB apart
  // (16 lines in one L1 set, more than its 12 ways). Straight-line code is scheduled
  // freely: each iteration of j misses each of the 16 lines once, not once per c.
  LoopNest n;
  n.inputs = {Arg("A", {16, 1024})};
  n.outputs = {Arg("S", {1024})};
  n.body = Loop("S.j", 256,
                Loop("S.c", 4,
                     Loop("S.r", 16,
                          St("S", V("S.j") * I(4) + V("S.c"),
                             Ld("S", V("S.j") * I(4) + V("S.c")) +
                                 Ld("A", V("S.r") * I(1024) + V("S.j") * I(4) + V("S.c"))),
                          ForKind::kUnrolled),
                     ForKind::kUnrolled));
  const CostBreakdown b = estimate_cost(n, cores(1));
  // At most the 16 lines per iteration (walking c first would make it 4 x 16); at
  // least every line of the 16 rows once (they do not stay: 16 lines, 12 ways).
  EXPECT_LE(b.stores[0].l1_misses, 256 * 16 * 1.1);
  EXPECT_GE(b.stores[0].l1_misses, 16 * 1024 * 4 / 64);
}

TEST(CostModel, LlvmsVectorLoopsFetchWhatDoesNotStayOncePerVectorIteration) {
  // S[j] += A[r, j] over 16 unrolled rows 4 KiB apart, j innermost: LLVM vectorizes
  // j by 8. The 16 lines of an iteration pile into one L1 set and do not stay, but
  // the 8 lanes of a vector iteration share them: about 16 misses per 8 values of
  // j, not 16 per value.
  LoopNest n;
  n.inputs = {Arg("A", {16, 1024})};
  n.outputs = {Arg("S", {1024})};
  n.body = Loop("S.j", 1024,
                Loop("S.r", 16, St("S", V("S.j"), Ld("S", V("S.j")) + Ld("A", V("S.r") * I(1024) + V("S.j"))),
                     ForKind::kUnrolled));
  const CostBreakdown b = estimate_cost(n, cores(1));
  const LoopCost* j = find_loop(b, "S.j");
  ASSERT_NE(j, nullptr);
  EXPECT_TRUE(j->vectorized);
  EXPECT_GE(b.stores[0].l1_misses, 1024 / 8 * 16);
  EXPECT_LE(b.stores[0].l1_misses, 2 * 1024 / 8 * 16);
}

TEST(CostModel, TailGuardsOnUnrolledCopiesStayInLlvmsVectorLoopAsMasks) {
  // GEMM 1024 with k split by 3 (a guard `xo * 3 + xi < 1024` on the unrolled xi
  // copies) and j tiled by 8 inside: LLVM vectorizes yo with interleaved groups, but
  // unswitching ran before the copies existed, so the two copies whose guard can
  // fail keep it, masked: their strided accesses become gathers and scatters
  // (measured: 0.46 s, where the model without masks said 0.17 s). Split by 4,
  // nothing is guarded.
  ProgramPtr p = gemm(1024);
  const CostBreakdown three = estimate_cost(lower_text(p, "tile(C.k, C.j, 3, 8, xo, yo, xi, yi)"), cores(1));
  const CostBreakdown four = estimate_cost(lower_text(p, "tile(C.k, C.j, 4, 8, xo, yo, xi, yi)"), cores(1));
  const LoopCost* yo3 = find_loop(three, "C.yo", 2);
  const LoopCost* yo4 = find_loop(four, "C.yo", 2);
  ASSERT_NE(yo3, nullptr);
  ASSERT_NE(yo4, nullptr);
  EXPECT_TRUE(yo3->vectorized && yo3->gathers);
  EXPECT_TRUE(yo4->vectorized && !yo4->gathers);
  EXPECT_GT(three.total_cycles, 1.5 * four.total_cycles);
  // A guard on the vector loop itself is a tail LLVM peels off: j split by 5 costs
  // about what j split by 4 does (measured: 0.18 s split by 5, no masks in its IR).
  const double five = est(p, "reorder(C, i, k, j); split(C.j, 5, o, v)");
  const double by4 = est(p, "reorder(C, i, k, j); split(C.j, 4, o, v)");
  EXPECT_NEAR(five / by4, 1.0, 0.3);
}

TEST(CostModel, GuardsThatDoNotMoveWithTheVectorLoopOrFoldWhenUnrolledAreNotMasked) {
  // Y[f, x] += X[c, x] * W[f, c], x the loop LLVM vectorizes, the channel loop c
  // split 16 then 3 and fully unrolled inside it. Two guards: `fo * 5 + fi < 64` reads
  // only loops outside x (unswitched), `co * 3 + coi < 4` only the unrolled copies
  // (a constant in each, folded). Neither stays as a mask: x is a plain vector loop
  // and costs about what the exact splits do (c2d-2 seed 14 #55, the same shape:
  // measured 0.97 ms, estimated 8.7 times that when both guards counted as masks).
  ProgramPtr p = parse("input X: f32[64, 512]\ninput W: f32[64, 64]\nY[f, x] += X[c, x] * W[f, c]\n");
  const std::string guarded = "split(Y.f, 5, fo, fi); split(Y.c, 16, co, ci); split(Y.co, 3, coo, coi)";
  const std::string exact = "split(Y.f, 4, fo, fi); split(Y.c, 16, co, ci); split(Y.co, 2, coo, coi)";
  auto update_x = [&](const std::string& schedule, double* total) {
    const CostBreakdown b = estimate_cost(lower_text(p, schedule), cores(1));
    *total = b.total_cycles;
    const LoopCost* last = nullptr;  // the update's x, after the initialization's
    for (const LoopCost& l : b.loops)
      if (l.loop == "Y.x") last = &l;
    return last ? *last : LoopCost{};
  };
  double g = 0, e = 0;
  const LoopCost gx = update_x(guarded, &g), ex = update_x(exact, &e);
  EXPECT_TRUE(gx.vectorized && !gx.gathers);
  EXPECT_TRUE(ex.vectorized && !ex.gathers);
  EXPECT_NEAR(g / e, 1.0, 0.25);
}

TEST(CostModel, LoopsUnderAGuardRunOnlyWhereItHolds) {
  // Y[f, x] += X[c, x] * W[f, c], x split by 8 (7 blocks) and the blocks split by 3:
  // 9 slots for 7 blocks, the guard `oo * 3 + oi < 7` around the lanes and the
  // channel loop. Its loops run in 7 of the 9 slots only: the schedule costs what the
  // plain split does (c2d-2 seed 14 #104 has this shape: estimated 1.4 times its
  // measured 8 ms while the model ran the channel loop, the latency-bound reduction,
  // in all 9).
  ProgramPtr p = parse("input X: f32[64, 56]\ninput W: f32[64, 64]\nY[f, x] += X[c, x] * W[f, c]\n");
  const double plain = est(p, "split(Y.x, 8, o, i)");
  const double slots = est(p, "split(Y.x, 8, o, i); split(Y.o, 3, oo, oi)");
  EXPECT_NEAR(slots / plain, 1.0, 0.1);
}

TEST(CostModel, AVectorReadBackShiftedByLessThanItsWidthStalls) {
  // Y[i] += X[k, i] with i split by 5 and the 5 lanes vectorized: each iteration's
  // masked load overlaps the vector the previous one stored without matching it and
  // waits for it to commit (measured: about 27 cycles); split by 8, the vectors
  // follow each other and nothing waits.
  ProgramPtr p = parse("input X: f32[16, 1000]\nY[i] += X[k, i]\n");
  const std::string order = "reorder(Y, k, i); ";
  const double five = est(p, order + "split(Y.i, 5, o, v); vectorize(Y.v)");
  const double eight = est(p, order + "split(Y.i, 8, o, v); vectorize(Y.v)");
  const MachineModel m = cores(1);
  EXPECT_GE(five, 16 * 200 * m.store_forward_stall_cycles);
  EXPECT_GT(five, 5 * eight);
}

TEST(CostModel, AShortLoopThatNoVectorDividesRunsOneMaskedVectorWithGathers) {
  // A 3-tap row filter, x split by 8: LLVM unrolls the 8 lanes and the taps, and the
  // 14 blocks left are under 16 iterations with no factor of 16 dividing them. On a
  // 512-bit machine LLVM folds the tail: one 16-lane vector of masked gathers (the
  // blocks are 8 apart) per row, not vectors of 8 (dep-1 seed 42 #110, the same
  // shape: 1.84 ms, estimated 0.29 ms). Split by 16, the 7 blocks hold 16 lanes each
  // and x vectorizes on its own.
  ProgramPtr p = parse("input X: f32[64, 114]\ninput W: f32[3]\nY[y, x] += X[y, x + s] * W[s] where x in 0..112\n");
  MachineModel m = cores(1);
  m.vector_bits = m.auto_vector_bits = 512;
  auto blocks = [&](const std::string& schedule, double* total) {
    const CostBreakdown b = estimate_cost(lower_text(p, schedule), m);
    *total = b.total_cycles;
    const LoopCost* last = nullptr;  // the update's, after the initialization's
    for (const LoopCost& l : b.loops)
      if (l.loop == "Y.o") last = &l;
    return last ? *last : LoopCost{};
  };
  double eight = 0, sixteen = 0;
  const LoopCost o8 = blocks("split(Y.x, 8, o, i)", &eight);
  blocks("split(Y.x, 16, o, i)", &sixteen);
  EXPECT_TRUE(o8.vectorized && o8.gathers);
  EXPECT_GT(eight, 3 * sixteen);
}

TEST(CostModel, ARemainderByAPowerOfTwoThatWrapsInsideTheLoopLeavesItScalar) {
  // A fused loop's remainder by 1024 wraps 64 times in the loop: LLVM's vector loop
  // is guarded by a check that always fails (gmm-4 seed 43 #114: 0.37 s run, estimated
  // as vectors close to the i-k-j order's 0.05 s). The quotient alone, or a remainder
  // by 1000, vectorize.
  const MachineModel m = cores(1);
  auto fused = [&](const std::string& program, const std::string& more) {
    const CostBreakdown b = estimate_cost(lower_text(parse(program), "fuse(Y.i, Y.j, f)" + more), m);
    for (const LoopCost& l : b.loops)
      if (l.loop == "Y.f") return l;
    ADD_FAILURE() << "no loop Y.f";
    return LoopCost{};
  };
  const std::string remainder = "input X: f32[64, 1024]\ninput T: f32[1024]\nY[i, j] = X[i, j] * T[j]\n";
  const std::string quotient = "input X: f32[64, 1024]\ninput S: f32[64]\nY[i, j] = X[i, j] * S[i]\n";
  const std::string odd = "input X: f32[64, 1000]\ninput T: f32[1000]\nY[i, j] = X[i, j] * T[j]\n";
  EXPECT_FALSE(fused(remainder, "").vectorized);
  const LoopCost q = fused(quotient, "");
  EXPECT_TRUE(q.vectorized && !q.gathers);
  EXPECT_TRUE(fused(odd, "").vectorized);
  // Run in parallel, the loop starts where the runtime's chunk does: LLVM cannot line
  // the quotient up across the lanes and gathers it.
  const LoopCost pq = fused(quotient, "; parallel(Y.f)");
  EXPECT_TRUE(pq.vectorized && pq.gathers);
}

TEST(CostModel, AFusedLoopsQuotientAndRemainderAreComputedOnceForAllAccesses) {
  // A transpose over a fused loop, scalar (the remainder by 32 wraps): X[f % 32 * 32
  // + f / 32]. A second buffer at the same index adds its load and its add, not the
  // quotient and remainder again (CSE; by 32 they are a shift and a mask).
  const MachineModel m = cores(1);
  auto compute = [&](const char* program) {
    return estimate_cost(lower_text(parse(program), "fuse(Y.i, Y.j, f)"), m).compute_cycles / 1024;
  };
  const double one = compute("input X: f32[32, 32]\nY[i, j] = X[j, i]\n");
  const double two = compute("input X: f32[32, 32]\ninput W: f32[32, 32]\nY[i, j] = X[j, i] + W[j, i]\n");
  EXPECT_LT(two - one, 1.0);
}

TEST(CostModel, AVectorNarrowerThanTheRegisterNextToTheLastDoesNotStall) {
  // Split by 4 and vectorized: each iteration stores 16 bytes and the next reads the
  // 16 after them, so nothing overlaps although the machine's vectors are wider
  // (gmm-4 seed 41 #189: estimated at 25 cycles a vector, 20 times its 96 ms run).
  ProgramPtr p = parse("input X: f32[16, 1000]\nY[i] += X[k, i]\n");
  const std::string order = "reorder(Y, k, i); ";
  const double four = est(p, order + "split(Y.i, 4, o, v); vectorize(Y.v)");
  const double five = est(p, order + "split(Y.i, 5, o, v); vectorize(Y.v)");
  const double eight = est(p, order + "split(Y.i, 8, o, v); vectorize(Y.v)");
  const MachineModel m = cores(1);
  ASSERT_GT(m.vector_bits, 4 * 32);
  EXPECT_LT(four, 16 * 250 * m.store_forward_stall_cycles);
  EXPECT_LT(four, five / 3);
  EXPECT_LT(four, 3 * eight);
}

TEST(CostModel, CopiesLoadingTheSameAddressLoadItOnce) {
  // Eight unrolled copies per vector iteration; X[0, i] is the same address in all
  // of them (one load, GVN), X[j, i] eight different ones. The loads are what bounds.
  auto run = [](const std::string& x) {
    ProgramPtr p = parse(
        "input X: f32[8, 4096]\ninput W: f32[8, 4096]\ninput V: f32[8, 4096]\ninput U: f32[8, 4096]\n"
        "Y[j, i] = " + x + " * W[j, i] + V[j, i] + U[j, i]\n");
    return estimate_cost(lower_text(p, "reorder(Y, i, j); unroll(Y.j)"), cores(1)).compute_cycles;
  };
  const double shared = run("X[0, i]"), own = run("X[j, i]");
  // 25 against 32 vector loads per iteration on two ports: 12.5 against 16 cycles.
  EXPECT_NEAR(shared / own, 12.5 / 16, 0.05);
}

TEST(CostModel, APerLaneAccumulatorIsGatheredAndScatteredByEveryUnrolledCopy) {
  // Y[f, p] += X[c, p] * W[f, c] with the output channels f explicitly vectorized:
  // each lane's Y[f, p] is its own address (stride 64), a gather and a scatter. LLVM
  // forwards nothing through them, so the unrolled copies of c do not share one load
  // and store of the accumulator as they would a register: the work per channel stays
  // the same however many channels are unrolled.
  auto per_channel = [](int channels) {
    const std::string c = std::to_string(channels);
    ProgramPtr p =
        parse("input X: f32[" + c + ", 64]\ninput W: f32[16, " + c + "]\nY[f, p] += X[c, p] * W[f, c]\n");
    return estimate_cost(lower_text(p, "vectorize(Y.f); unroll(Y.c)"), cores(1)).compute_cycles / channels;
  };
  EXPECT_NEAR(per_channel(16) / per_channel(4), 1.0, 0.15);
}

TEST(CostModel, AnInitialValueOverwrittenInTheSameLoopsIsDeleted) {
  // A reduction whose only reduction loop has extent 1 (a 1x1 convolution's r and s,
  // once rfactor took its channels): the initial store and the update sit in the same
  // loops, GVN forwards the zero into the update and DSE deletes it. What is left is
  // one write of C per element, as in the elementwise product (it was estimated at
  // twice that: the zero written, then C read back and written again).
  ProgramPtr reduce = parse("input A: f32[2048, 2048]\ninput W: f32[1]\nC[i, j] += A[i, j] * W[r]\n");
  ProgramPtr product = parse("input A: f32[2048, 2048]\ninput W: f32[1]\nC[i, j] = A[i, j] * W[0]\n");
  EXPECT_NEAR(est(reduce, "") / est(product, ""), 1.0, 0.15);
}

TEST(CostModel, UnrolledCopiesOfAFarStridedLoadAreStreamsThePrefetchersFollow) {
  // Y[f, p] += R[c, f, p] in its default order: the channel loop (R's stride 784 KiB)
  // is innermost, its accumulator in a register, so LLVM unrolls it and vectorizes p.
  // Each of the 64 unrolled loads walks R with unit stride as p advances: the
  // prefetchers follow them all, and the nest streams R as the order with c outermost
  // does. (It was estimated latency-bound, three times slower.)
  ProgramPtr p = parse("input R: f32[64, 64, 3136]\nY[f, p] += R[c, f, p]\n");
  EXPECT_LT(est(p, ""), 1.3 * est(p, "reorder(Y, c, f, p)"));
}

TEST(CostModel, RfactorOfThe1x1ConvolutionsChannelsIsCheaperThanItsNaiveNest) {
  // c2d-2 with rfactor(Y.c): a 51 MB product written once, then summed over the
  // channels with no chain of dependent adds. Measured 3.9-4.6 ms on eight random
  // schedules against 6.3-7.5 ms for the naive nest, which the model put at 1.6 times
  // the naive nest's estimate.
  ProgramPtr p = conv1x1();
  EXPECT_LT(est(p, "rfactor(Y.c, Y_rf)"), 0.8 * est(p, ""));
}

// A schedule of c2d-2's seed-45 draw: x split by `x_split`, the output channel's update
// in an unrolled pair, the x blocks inside.
std::string conv_x_blocks_inside(int x_split) {
  return "reorder(Y, f, n, c, s); split(Y.x, " + std::to_string(x_split) +
         ", o105, i105); split(Y.c, 2, o206, i206); reorder(Y, o206, i206, i105, o105); split(Y.y, 4, o511, "
         "i511); unroll(Y.i206)";
}

TEST(CostModel, LlvmFullyUnrollsALoopWhoseCopiesFoldNotOneThatIsMerelyShort) {
  // The thresholds at which `opt -O3` starts to unroll each loop (CpuBackend's
  // LlvmFullyUnrollsWhereTheCostModelSaysItDoes checks LLVM itself): Y[f, x] += X[c,
  // x] * W[f, c] with c whole (64 iterations, about 400), split by 16 (4 iterations
  // of 16 copies whose addresses step by constants: unrolled at 300) and by 4 (16
  // iterations of 4: about 425); gmm-4 tiled 8 x 8 over k and i (the 8 sums stay in
  // registers across the 8 k steps: about 200); c2d-2 seed 45 #149, 3 iterations of
  // 19 guarded updates walked one element at a time (about 350, and nothing folds:
  // LLVM vectorizes the 3 with masks instead; the model had it unrolled, 12% of that
  // seed's rank error).
  ProgramPtr p = parse("input X: f32[64, 512]\ninput W: f32[64, 64]\nY[f, x] += X[c, x] * W[f, c]\n");
  auto unrolled = [](const ProgramPtr& prog, const std::string& schedule, const std::string& loop) {
    const CostBreakdown b = estimate_cost(lower_text(prog, schedule), cores(1));
    const LoopCost* last = nullptr;  // the update's, after the initialization's
    for (const LoopCost& l : b.loops)
      if (l.loop == loop) last = &l;
    EXPECT_NE(last, nullptr) << loop;
    return last != nullptr && last->fully_unrolled;
  };
  EXPECT_FALSE(unrolled(p, "", "Y.c"));
  EXPECT_TRUE(unrolled(p, "split(Y.c, 16, o, i)", "Y.o"));
  EXPECT_FALSE(unrolled(p, "split(Y.c, 4, o, i)", "Y.o"));
  EXPECT_TRUE(unrolled(gemm(1024), "tile(C.k, C.i, 8, 8, xo, yo, xi, yi)", "C.xi"));
  const ProgramPtr conv = conv1x1();
  EXPECT_TRUE(unrolled(conv, conv_x_blocks_inside(3), "Y.o105"));
  EXPECT_FALSE(unrolled(conv, conv_x_blocks_inside(3), "Y.i105"));
}

TEST(CostModel, AMaskedTailReadBackByTheNextUpdateWaitsForItsStore) {
  // The same #149: LLVM runs the 3 x blocks as one vector of 4 with a lane masked, and
  // the next channel's update loads each masked store back while it is still in the
  // store buffer. Masked stores do not forward: 26 cycles a vector, 30.7 ms on the
  // development VM, against 0.73 ms with x split by 4 (no mask) and 12.4 ms by 7 (8
  // lanes, one masked). The model had all three within 20% of each other.
  const ProgramPtr conv = conv1x1();
  const double by3 = est(conv, conv_x_blocks_inside(3)), by4 = est(conv, conv_x_blocks_inside(4)),
               by7 = est(conv, conv_x_blocks_inside(7));
  EXPECT_GT(by3, 10 * by4);
  EXPECT_GT(by7, 5 * by4);
  EXPECT_GT(by3, by7);
}

TEST(CostModel, AVectorUpdateByGatherAndScatterStaysALoop) {
  // c2d-2 with its output channels vectorized (64 lanes, 3136 floats apart) and the
  // channel loop split by 8: each update gathers W and Y and scatters Y. LLVM prices a
  // 64-lane gather as 64 instructions, so the 8-trip loop is not unrolled, and every
  // update waits for the last one's scatter (measured 8.3 ms against 6.3 ms for the
  // naive nest; estimated at 0.8 times the naive nest when the model unrolled it).
  ProgramPtr p = conv1x1();
  EXPECT_GT(est(p, "vectorize(Y.f); split(Y.c, 8, o101, i101)"), est(p, ""));
}

TEST(CostModel, GathersAndScattersArePricedApart) {
  // c2d-2 with the output channels innermost: LLVM vectorizes them, and each update
  // gathers Y and W (3136 and 64 floats apart) and scatters Y: two gathered lanes on
  // the load ports, one scattered lane on the store port. One machine's gathers cost
  // 0.8 cycles a lane and its scatters 1.6, another's 3.5 and 1.1 (measured with
  // intrinsics loops; there the nest ran 31 ms against 12 ms for the naive one).
  ProgramPtr p = conv1x1();
  const std::string channels_inside = "reorder(Y, y, n, f); reorder(Y, s, c, f)";
  const double base = est(p, channels_inside);
  MachineModel slow_gathers = cores(1), slow_scatters = cores(1);
  slow_gathers.gather_lane_cycles += 1;
  slow_scatters.scatter_lane_cycles += 1;
  // On the reference machine the store port binds (1.6 a lane against 2 x 0.8 over
  // two load ports): a slower scatter costs a cycle a lane, a slower gather less.
  const double per_gathered_cycle = est(p, channels_inside, slow_gathers) - base;
  const double per_scattered_cycle = est(p, channels_inside, slow_scatters) - base;
  EXPECT_GT(per_gathered_cycle, 0);
  EXPECT_GT(per_scattered_cycle, per_gathered_cycle);
  // On the slow-gather machine the nest falls behind the naive one.
  MachineModel ice_lake = cores(1);
  ice_lake.gather_lane_cycles = 3.5;
  ice_lake.scatter_lane_cycles = 1.1;
  EXPECT_LT(base, est(p, ""));
  EXPECT_GT(est(p, channels_inside, ice_lake), est(p, "", ice_lake));
}

TEST(CostModel, SerializedGathersAndScattersCostTheirSum) {
  // c2d-2 with the output channels innermost: two gathers (Y, W) and a scatter (Y)
  // a lane. On a machine that spreads them over its ports the scatter binds alone;
  // where one sequencer runs them one after another (AMD Zen 4: gather 1.2, scatter
  // 1.5, the two in turn 3.3 cycles a lane; the nest ran 14.7 ms against 6.3 ms for
  // the naive one, estimated faster than it before) they add up.
  ProgramPtr p = conv1x1();
  const std::string channels_inside = "reorder(Y, y, n, f); reorder(Y, s, c, f)";
  MachineModel ports = cores(1);
  ports.gather_lane_cycles = 1.2;
  ports.scatter_lane_cycles = 1.5;
  MachineModel sequenced = ports;
  sequenced.indexed_accesses_serialize = true;
  const double spread = est(p, channels_inside, ports), serial = est(p, channels_inside, sequenced);
  EXPECT_GT(serial, 2 * spread);
  EXPECT_GT(serial, est(p, "", sequenced));
  EXPECT_LT(spread, est(p, "", ports));
  // A nest without gathers or scatters costs the same on both.
  EXPECT_EQ(est(p, "", ports), est(p, "", sequenced));
}

TEST(CostModel, AGuardOnUnrolledCopiesIsUnswitchedFromASmallVectorLoop) {
  // gmm-4 with k tiled by 3 (1024 = 341 x 3 + 1) inside the column loop: the copies'
  // tail tests `yo * 3 + yi < 1024` read only the tile loop outside and the unrolled
  // loop inside. After the body is inlined into the entry, LLVM simplifies it again
  // and unswitches the tests, now invariant, from the small column loop: no masks
  // (seed 26 #47: optimized IR without masked loads or gathers, measured 30 ms, the
  // second fastest; estimated with masked gathers at 6.6 times that).
  ProgramPtr p = gemm(1024);
  const std::string small = "tile(C.i, C.k, 2, 3, xo, yo, xi, yi)";
  MachineModel kept = cores(1);
  kept.unswitch_budget = 0;
  EXPECT_LT(1.4 * est(p, small), est(p, small, kept));
  // A body too large to duplicate keeps its guards, masked in the vector loop (seed 26
  // #189: 80 copies in the column loop; 73 masked stores in the optimized IR).
  const std::string large =
      "reorder(C, k, j, i); split(C.k, 3, o1, i1); tile(C.i, C.i1, 16, 2, xo2, yo2, xi2, yi2); "
      "tile(C.xo2, C.xi2, 5, 8, xo3, yo3, xi3, yi3); split(C.yi3, 2, o4, i4)";
  EXPECT_EQ(est(p, large), est(p, large, kept));
  // It is the body's size that keeps them.
  MachineModel any_size = cores(1);
  any_size.unswitch_budget = 1e9;
  EXPECT_GT(est(p, large), est(p, large, any_size));
}

TEST(CostModel, ATailTestOnTheVectorLoopAndItsCopiesIsMasked) {
  // gmm-4 with the columns split by 3 innermost (1024 = 341 x 3 + 1): the copies'
  // test `o * 3 + jj < 1024` moves with the vector loop `o`, so it can be neither
  // unswitched nor peeled; LLVM masks the copies that can fail (masked gathers and
  // scatters of the stride-3 groups in the IR; measured 1.12 s against 0.055 s split
  // by 4, without a tail, on a Zen 4 VM).
  ProgramPtr p = gemm(1024);
  const double tail = est(p, "reorder(C, i, k, j); split(C.j, 3, o, jj)");
  const double no_tail = est(p, "reorder(C, i, k, j); split(C.j, 4, o, jj)");
  EXPECT_GT(tail, 2 * no_tail);
  // However small the body, a test that moves with the loop is not unswitched.
  MachineModel any_size = cores(1);
  any_size.unswitch_budget = 1e9;
  EXPECT_EQ(tail, est(p, "reorder(C, i, k, j); split(C.j, 3, o, jj)", any_size));
}

TEST(CostModel, AMaskedVectorAccumulatorWaitsForItsStoreEveryIteration) {
  // c2d-2 with x tiled by 3 (a tail guard: 56 = 18 x 3 + 2) and the 3 lanes
  // vectorized around the channel loop: the accumulator is a masked load and a masked
  // store per channel, not kept in a register, and each load waits for the store
  // before it (measured 33 ms against 8.5 ms for the naive nest; estimated 3.4 ms
  // when the model kept it in a register).
  ProgramPtr p = conv1x1();
  EXPECT_GT(est(p, "tile(Y.f, Y.x, 16, 3, xo, yo, xi, yi); vectorize(Y.yi)"), est(p, ""));
  // Without the guard (x tiled by 4) the accumulator stays in a register.
  EXPECT_LT(est(p, "tile(Y.f, Y.x, 16, 4, xo, yo, xi, yi); vectorize(Y.yi)"), est(p, ""));
}

TEST(CostModel, RandomSchedulesGiveFinitePositiveEstimates) {
  for (const char* text : {"input A: f32[64, 64]\ninput B: f32[64, 64]\nC[i, j] += A[i, k] * B[k, j]\n",
                           "input X: f32[1, 8, 16, 16]\ninput W: f32[8, 3, 3]\n"
                           "P[n, c, h, w] = select(h >= 1 && h <= 16 && w >= 1 && w <= 16, X[n, c, h - 1, w - 1], 0.0)"
                           " where h in 0..18, w in 0..18\n"
                           "D[n, c, y, x] += P[n, c, y + r, x + s] * W[c, r, s] where y in 0..16, x in 0..16\n"}) {
    ProgramPtr p = parse(text);
    Rng rng(3);
    for (int i = 0; i < 40; ++i) {
      Schedule s(p);
      apply_random_primitives(s, rng, int(rng.range(1, 10)));
      Expected<LoopNest> nest = lower(s);
      ASSERT_TRUE(nest.ok()) << nest.status().to_string();
      const CostBreakdown b = estimate_cost(*nest, MachineModel::reference());
      EXPECT_TRUE(std::isfinite(b.total_cycles) && b.total_cycles > 0) << s.trace().to_string();
      EXPECT_EQ(b.total_cycles, est_cycles(*nest, MachineModel::reference()));
    }
  }
}

}  // namespace
}  // namespace tensorgym
