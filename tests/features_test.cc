// Per-store features (Ansor layout), the access summary they share with the cost
// model, and peak scratch memory: hand-computed expectations on small hand-built
// nests, and properties on lowered schedules.
#include "codegen/analysis/features.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "codegen/analysis/scratch.h"
#include "codegen/ir/program.h"
#include "codegen/lower/lower.h"
#include "codegen/schedule/random_schedule.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

using namespace ir_build;
using ir_build::Loop;  // not the features' Loop

int column(const std::string& name) {
  static const std::vector<std::string> names = feature_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return int(i);
  ADD_FAILURE() << "no column " << name;
  return 0;
}

float at(const StoreFeatureRow& row, const std::string& name) { return row[size_t(column(name))]; }

FeatureOptions raw() {
  FeatureOptions o;
  o.log_scale = false;
  return o;
}

// for i in 0..16: for j in 0..8: C[i*8 + j] = A[i*8 + j] + B[j]
LoopNest add_nest(ForKind inner = ForKind::kSerial, ForKind outer = ForKind::kSerial) {
  LoopNest nest;
  nest.inputs = {Arg("A", {16, 8}), Arg("B", {8})};
  nest.outputs = {Arg("C", {16, 8})};
  nest.body =
      Loop("C.i", 16,
           Loop("C.j", 8, St("C", V("C.i") * I(8) + V("C.j"), Ld("A", V("C.i") * I(8) + V("C.j")) + Ld("B", V("C.j"))),
                inner),
           outer);
  return nest;
}

ProgramPtr gemm_program(int n) {
  const std::string s = std::to_string(n);
  Expected<Program> p = parse_program("input A: f32[" + s + ", " + s + "]\ninput B: f32[" + s + ", " + s +
                                      "]\nC[i, j] += A[i, k] * B[k, j]\n");
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return std::make_shared<const Program>(std::move(*p));
}

LoopNest lower_text(const ProgramPtr& p, const std::string& schedule) {
  Expected<Schedule> s = Schedule::from_text(p, schedule);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  Expected<LoopNest> nest = lower(*s);
  EXPECT_TRUE(nest.ok()) << nest.status().to_string();
  return std::move(*nest);
}

// ---- names --------------------------------------------------------------------------

TEST(FeatureNames, OneHundredSixtyFourUniqueNames) {
  const std::vector<std::string> names = feature_names();
  ASSERT_EQ(names.size(), size_t(kFeaturesPerStore));
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  EXPECT_EQ(names.front(), "float_mad");
  EXPECT_EQ(names.back(), "auto_unroll_max_step");
  // The groups sit where the Ansor layout puts them.
  EXPECT_EQ(column("vec_num"), 16);
  EXPECT_EQ(column("unroll_num"), 27);
  EXPECT_EQ(column("parallel_num"), 38);
  EXPECT_EQ(column("is_gpu"), 49);
  EXPECT_EQ(column("B0.acc_type.read"), 57);
  EXPECT_EQ(column("B4.stride"), 146);
  EXPECT_EQ(column("arith_intensity_curve_0"), 147);
  EXPECT_EQ(column("alloc_size"), 157);
  EXPECT_EQ(column("outer_prod"), 161);

  const std::vector<std::string> flat = features_flat_names();
  ASSERT_EQ(flat.size(), size_t(kFeaturesFlat));
  EXPECT_EQ(kFeaturesFlat, 493);
  EXPECT_EQ(std::set<std::string>(flat.begin(), flat.end()).size(), flat.size());
  EXPECT_EQ(flat[0], "sum.float_mad");
  EXPECT_EQ(flat[size_t(kFeaturesPerStore)], "mean.float_mad");
  EXPECT_EQ(flat.back(), "num_stores");
}

// ---- hand-computed values -------------------------------------------------------------

TEST(Features, ElementwiseAddByHand) {
  const NestFeatures f = extract_features(add_nest(), raw());
  ASSERT_EQ(f.rows.size(), 1u);
  EXPECT_EQ(f.stores, std::vector<std::string>{"C"});
  const StoreFeatureRow& r = f.rows[0];
  // One float add per point; A's index i*8 + j is one integer multiply-add.
  EXPECT_EQ(at(r, "float_addsub"), 128);
  EXPECT_EQ(at(r, "float_mad"), 0);
  EXPECT_EQ(at(r, "float_mul"), 0);
  EXPECT_EQ(at(r, "int_mad"), 128);
  EXPECT_EQ(at(r, "int_addsub"), 0);
  EXPECT_EQ(at(r, "outer_prod"), 128);
  EXPECT_EQ(at(r, "num_loops"), 2);
  EXPECT_EQ(at(r, "vec_type.none"), 1);
  EXPECT_EQ(at(r, "unroll_type.none"), 1);
  EXPECT_EQ(at(r, "parallel_type.none"), 1);
  EXPECT_EQ(at(r, "is_gpu"), 0);
  EXPECT_EQ(at(r, "alloc_size"), 0);
  EXPECT_EQ(at(r, "auto_unroll_max_step"), 0);

  // Buffers sorted by (lines, bytes), ties in access order: C (write), A, B.
  EXPECT_EQ(at(r, "B0.acc_type.write"), 1);
  EXPECT_EQ(at(r, "B1.acc_type.read"), 1);
  EXPECT_EQ(at(r, "B2.acc_type.read"), 1);
  for (const char* b : {"B0.", "B1.", "B2."}) {
    const std::string p = b;
    EXPECT_EQ(at(r, p + "bytes"), 128 * 4) << p;
    EXPECT_EQ(at(r, p + "stride"), 1) << p;
    // 128 accesses, stride 4 bytes: 16 per 64-byte line.
    EXPECT_EQ(at(r, p + "lines"), 8) << p;
  }
  EXPECT_EQ(at(r, "B0.unique_bytes"), 512);
  EXPECT_EQ(at(r, "B0.unique_lines"), 8);
  EXPECT_EQ(at(r, "B0.reuse_type.no_reuse"), 1);
  EXPECT_EQ(at(r, "B0.reuse_ct"), 0);
  // No reuse: Ansor's "times 2".
  EXPECT_EQ(at(r, "B0.bytes_d_reuse_ct"), 1024);

  // B[j] is reused by every iteration of i: 16 times, at a distance of one j loop (8
  // iterations touching 8 elements of each of C, A and B: 96 bytes).
  EXPECT_EQ(at(r, "B2.unique_bytes"), 32);
  EXPECT_EQ(at(r, "B2.unique_lines"), 1);
  EXPECT_EQ(at(r, "B2.reuse_type.loop_multiple_read"), 1);
  EXPECT_EQ(at(r, "B2.reuse_dis_iter"), 8);
  EXPECT_EQ(at(r, "B2.reuse_dis_bytes"), 96);
  EXPECT_EQ(at(r, "B2.reuse_ct"), 16);
  EXPECT_EQ(at(r, "B2.bytes_d_reuse_ct"), 32);
  EXPECT_EQ(at(r, "B2.unique_bytes_d_reuse_ct"), 2);
  EXPECT_FLOAT_EQ(at(r, "B2.lines_d_reuse_ct"), 0.5f);
  for (const char* c : {"B3.bytes", "B3.acc_type.read", "B4.reuse_ct", "B4.stride"}) EXPECT_EQ(at(r, c), 0) << c;

  // Arithmetic intensity: 8 flops over 96 bytes at the j level, 128 flops over
  // (128 + 128 + 8) * 4 bytes at the i level; sampled at 12.8, 25.6, ..., 128 flops.
  const double x0 = 8, y0 = 8.0 / 96, x1 = 128, y1 = 128.0 / 1056;
  for (int i = 0; i < 10; ++i) {
    const double x = 128.0 * (i + 1) / 10;
    const double expect = y0 + (y1 - y0) / (x1 - x0) * (x - x0);
    EXPECT_NEAR(at(r, "arith_intensity_curve_" + std::to_string(i)), expect, 1e-6) << i;
  }
}

TEST(Features, LogScaleIsLog2OnePlusX) {
  const NestFeatures raw_f = extract_features(add_nest(), raw());
  const NestFeatures log_f = extract_features(add_nest());
  const std::vector<std::string> names = feature_names();
  for (size_t c = 0; c < names.size(); ++c) {
    const float x = raw_f.rows[0][c];
    const bool one_hot = names[c].find("_type.") != std::string::npos || names[c] == "is_gpu";
    const float expect = one_hot ? x : float(std::log2(1.0 + double(x)));
    EXPECT_NEAR(log_f.rows[0][c], expect, 1e-5) << names[c];
  }
}

TEST(Features, MultiplyAddsAreDetected) {
  // for k in 0..32: acc[0] = acc[0] + A[k] * B[k]
  LoopNest nest;
  nest.inputs = {Arg("A", {32}), Arg("B", {32})};
  nest.outputs = {Arg("acc", {1})};
  nest.body = Loop("acc.k", 32, St("acc", I(0), Ld("acc", I(0)) + Ld("A", V("acc.k")) * Ld("B", V("acc.k"))));
  const StoreFeatureRow r = extract_features(nest, raw()).rows[0];
  EXPECT_EQ(at(r, "float_mad"), 32);
  EXPECT_EQ(at(r, "float_mul"), 0);
  EXPECT_EQ(at(r, "float_addsub"), 0);
  // acc is read and written: one read-write buffer, reused by every k iteration.
  int rw = 0;
  for (int b = 0; b < 3; ++b) rw += int(at(r, "B" + std::to_string(b) + ".acc_type.read_write"));
  EXPECT_EQ(rw, 1);
}

TEST(Features, AnnotationsLandInTheirColumns) {
  const StoreFeatureRow plain = extract_features(add_nest(), raw()).rows[0];
  const StoreFeatureRow vec = extract_features(add_nest(ForKind::kVectorized), raw()).rows[0];
  const StoreFeatureRow par = extract_features(add_nest(ForKind::kSerial, ForKind::kParallel), raw()).rows[0];
  const StoreFeatureRow unr = extract_features(add_nest(ForKind::kUnrolled), raw()).rows[0];

  EXPECT_EQ(at(vec, "vec_num"), 1);
  EXPECT_EQ(at(vec, "vec_prod"), 8);
  EXPECT_EQ(at(vec, "vec_len"), 8);
  EXPECT_EQ(at(vec, "vec_type.inner_spatial"), 1);  // j has the smallest stride of C's index
  EXPECT_EQ(at(vec, "vec_type.none"), 0);
  EXPECT_EQ(at(par, "parallel_num"), 1);
  EXPECT_EQ(at(par, "parallel_len"), 16);
  EXPECT_EQ(at(par, "parallel_type.outer_spatial"), 1);
  EXPECT_EQ(at(unr, "unroll_len"), 8);
  EXPECT_EQ(at(unr, "unroll_type.inner_spatial"), 1);
  // An unrolled loop of 8 statement instances.
  EXPECT_EQ(at(unr, "auto_unroll_max_step"), 8);

  // Nothing outside the annotation's group changes.
  const std::vector<std::string> names = feature_names();
  auto group_of = [](const std::string& n) { return n.substr(0, n.find('_')); };
  for (size_t c = 0; c < names.size(); ++c) {
    if (group_of(names[c]) != "vec") {
      EXPECT_EQ(vec[c], plain[c]) << names[c];
    }
    if (group_of(names[c]) != "parallel") {
      EXPECT_EQ(par[c], plain[c]) << names[c];
    }
    if (group_of(names[c]) != "unroll" && names[c] != "auto_unroll_max_step") {
      EXPECT_EQ(unr[c], plain[c]) << names[c];
    }
  }
}

TEST(Features, ReductionPositionsAndAllocations) {
  // allocate T[4] inside i; for k: T[j] = T[j] + X[i*32 + k] with an unrolled reduction.
  LoopNest nest;
  nest.inputs = {Arg("X", {8, 32})};
  nest.outputs = {Arg("Y", {8, 4})};
  Stmt update = Loop(
      "T.k", 32,
      Loop("T.j", 4, St("T", V("T.j"), Ld("T", V("T.j")) + Ld("X", V("Y.i") * I(32) + V("T.k"))), ForKind::kVectorized),
      ForKind::kUnrolled);
  Stmt copy = Loop("Y.j", 4, St("Y", V("Y.i") * I(4) + V("Y.j"), Ld("T", V("Y.j"))));
  nest.body = Loop("Y.i", 8, Allocate::make("T", DataType::f32(), {4}, Seq({update, copy})));
  const NestFeatures f = extract_features(nest, raw());
  ASSERT_EQ(f.rows.size(), 2u);
  EXPECT_EQ(f.stores, (std::vector<std::string>{"T", "Y"}));
  const StoreFeatureRow& t = f.rows[0];
  EXPECT_EQ(at(t, "unroll_type.inner_reduce"), 1);
  EXPECT_EQ(at(t, "vec_type.inner_spatial"), 1);
  EXPECT_EQ(at(t, "alloc_size"), 16);
  EXPECT_EQ(at(t, "alloc_outer_prod"), 8);
  EXPECT_EQ(at(t, "alloc_prod"), 32);
  EXPECT_EQ(at(t, "alloc_inner_prod"), 32 * 4);
  EXPECT_EQ(at(t, "auto_unroll_max_step"), 32 * 4);
  // The output copy is not a local buffer; it reads T again in every iteration of
  // Y.i whose index does not change with Y.i: a loop reuse.
  const StoreFeatureRow& y = f.rows[1];
  EXPECT_EQ(at(y, "alloc_size"), 0);
  EXPECT_EQ(at(y, "B0.reuse_type.loop_multiple_read") + at(y, "B1.reuse_type.loop_multiple_read"), 1);
}

TEST(Features, SerialReuseAcrossStores) {
  // for i in 0..8: { T[i] = X[i]; U[i] = X[i] * 2 }: the second store reads X again.
  LoopNest nest;
  nest.inputs = {Arg("X", {8})};
  nest.outputs = {Arg("T", {8}), Arg("U", {8})};
  nest.body = Loop("T.i", 8, Seq({St("T", V("T.i"), Ld("X", V("T.i"))), St("U", V("T.i"), Ld("X", V("T.i")) * F(2))}));
  const NestFeatures f = extract_features(nest, raw());
  ASSERT_EQ(f.rows.size(), 2u);
  // First store: nothing touched X before.
  EXPECT_EQ(at(f.rows[0], "B0.reuse_type.no_reuse") + at(f.rows[0], "B1.reuse_type.no_reuse"), 2);
  // Second store: X was touched by the first store under the same loop.
  const StoreFeatureRow& u = f.rows[1];
  int slot = -1;
  for (int b = 0; b < 2; ++b)
    if (at(u, "B" + std::to_string(b) + ".acc_type.read") == 1) slot = b;
  ASSERT_GE(slot, 0);
  const std::string p = "B" + std::to_string(slot) + ".";
  EXPECT_EQ(at(u, p + "reuse_type.serial_multiple_read_write"), 1);
  EXPECT_EQ(at(u, p + "reuse_ct"), 1);
  // Distance: one of X's 8 elements per iteration; all records under i (T, X, U, X:
  // 8 elements each) over the 8 iterations.
  EXPECT_EQ(at(u, p + "reuse_dis_iter"), 1);
  EXPECT_EQ(at(u, p + "reuse_dis_bytes"), 4 * 8 * 4 / 8);
}

TEST(Features, IdenticalNestsGiveIdenticalFeatures) {
  ProgramPtr p = gemm_program(256);
  const std::string sched =
      "split(C.i, 32, io, ii); split(C.j, 32, jo, ji); reorder(C, io, jo, ii, ji)\n"
      "cache_write(C, CL); compute_at(CL, C.jo); split(CL.j, 8, cjo, cji); vectorize(CL.cji); parallel(C.io)\n"
      "cache_read(B, CL, BP); compute_at(BP, C.jo); unroll(CL.cjo)\n";
  const NestFeatures a = extract_features(lower_text(p, sched));
  const NestFeatures b = extract_features(lower_text(p, sched));
  ASSERT_EQ(a.rows.size(), b.rows.size());
  EXPECT_EQ(a.stores, b.stores);
  for (size_t i = 0; i < a.rows.size(); ++i)
    for (size_t c = 0; c < size_t(kFeaturesPerStore); ++c) EXPECT_EQ(a.rows[i][c], b.rows[i][c]);
  // Stores: BP copy, CL init, CL update, C copy.
  EXPECT_EQ(a.stores, (std::vector<std::string>{"BP", "CL", "CL", "C"}));
  for (const StoreFeatureRow& r : a.rows)
    for (float x : r) EXPECT_TRUE(std::isfinite(x));
}

TEST(Features, ScheduleChangesShowInTheRightColumns) {
  ProgramPtr p = gemm_program(128);
  const StoreFeatureRow plain = extract_features(lower_text(p, "split(C.j, 8, jo, ji)")).rows[1];
  const StoreFeatureRow vec = extract_features(lower_text(p, "split(C.j, 8, jo, ji); vectorize(C.ji)")).rows[1];
  const StoreFeatureRow par = extract_features(lower_text(p, "split(C.j, 8, jo, ji); parallel(C.i)")).rows[1];
  EXPECT_EQ(at(plain, "vec_num"), 0);
  EXPECT_GT(at(vec, "vec_num"), 0);
  EXPECT_EQ(at(vec, "vec_type.inner_spatial"), 1);
  EXPECT_EQ(at(par, "parallel_type.outer_spatial"), 1);
  // The update's arithmetic: one multiply-add per point, 128^3 points.
  EXPECT_NEAR(at(plain, "float_mad"), std::log2(1.0 + 128.0 * 128 * 128), 1e-4);
  EXPECT_EQ(at(vec, "float_mad"), at(plain, "float_mad"));
  EXPECT_EQ(at(vec, "outer_prod"), at(plain, "outer_prod"));

  // Reordering k innermost -> j innermost changes B's stride column.
  const StoreFeatureRow kin = extract_features(lower_text(p, "")).rows[1];
  const StoreFeatureRow jin = extract_features(lower_text(p, "reorder(C, i, k, j)")).rows[1];
  auto strides = [](const StoreFeatureRow& r) {
    std::multiset<float> s;
    for (int b = 0; b < kFeatureBuffers; ++b) s.insert(at(r, "B" + std::to_string(b) + ".stride"));
    return s;
  };
  // k innermost: A walks with stride 1, B with stride 128 (C does not move).
  EXPECT_EQ(strides(kin), (std::multiset<float>{0, 0, 0, 1, float(std::log2(129.0))}));
  // j innermost: B and C walk with stride 1 (A does not move).
  EXPECT_EQ(strides(jin), (std::multiset<float>{0, 0, 0, 1, 1}));
}

TEST(Features, FlatPoolingSumsMeansAndMaxima) {
  ProgramPtr p = gemm_program(64);
  const LoopNest nest = lower_text(p, "cache_write(C, CL); vectorize(C.j)");
  const NestFeatures f = extract_features(nest);
  const std::vector<float> flat = features_flat(nest);
  ASSERT_EQ(flat.size(), size_t(kFeaturesFlat));
  const size_t n = f.rows.size();
  ASSERT_GE(n, 2u);
  for (size_t c = 0; c < size_t(kFeaturesPerStore); ++c) {
    double sum = 0;
    float mx = f.rows[0][c];
    for (const StoreFeatureRow& r : f.rows) {
      sum += r[c];
      mx = std::max(mx, r[c]);
    }
    EXPECT_NEAR(flat[c], sum, 1e-3);
    EXPECT_NEAR(flat[size_t(kFeaturesPerStore) + c], sum / double(n), 1e-3);
    EXPECT_EQ(flat[size_t(2 * kFeaturesPerStore) + c], mx);
  }
  EXPECT_FLOAT_EQ(flat.back(), float(std::log2(1.0 + double(n))));
  // An empty nest pools to zeros.
  const std::vector<float> empty = pool_features(NestFeatures{});
  for (float x : empty) EXPECT_EQ(x, 0);
}

TEST(Features, RandomSchedulesGiveFiniteRows) {
  ProgramPtr p = gemm_program(64);
  Rng rng(7);
  for (int i = 0; i < 40; ++i) {
    Schedule s(p);
    apply_random_primitives(s, rng, int(rng.range(1, 10)));
    Expected<LoopNest> nest = lower(s);
    ASSERT_TRUE(nest.ok()) << nest.status().to_string();
    const NestFeatures f = extract_features(*nest);
    EXPECT_FALSE(f.rows.empty());
    for (const StoreFeatureRow& r : f.rows)
      for (size_t c = 0; c < size_t(kFeaturesPerStore); ++c) EXPECT_TRUE(std::isfinite(r[c])) << s.trace().to_string();
  }
}

// ---- access summary ---------------------------------------------------------------------

TEST(AccessSummary, FootprintsOfStridedAndOverlappingIndices) {
  // for i in 0..4: for k in 0..32: for r in 0..3: S[0] = A[i*1024 + k] + P[i*114 + r*114 + k + r]
  LoopNest nest;
  nest.inputs = {Arg("A", {1024, 1024}), Arg("P", {1024, 114})};
  nest.outputs = {Arg("S", {1})};
  nest.body = Loop("S.i", 4,
                   Loop("S.k", 32,
                        Loop("S.r", 3,
                             St("S", I(0),
                                Ld("A", V("S.i") * I(1024) + V("S.k")) +
                                    Ld("P", V("S.i") * I(114) + V("S.r") * I(114) + V("S.k") + V("S.r"))))));
  const NestSummary s = summarize_nest(nest);
  ASSERT_EQ(s.loops.size(), 3u);
  ASSERT_EQ(s.stores.size(), 1u);
  const NestStore& st = s.stores[0];
  ASSERT_EQ(st.accesses.size(), 3u);
  EXPECT_EQ(st.accesses[0].kind, AccessKind::kWrite);
  const NestAccess& a = st.accesses[1];
  EXPECT_EQ(a.index.stride_of(0), 1024);
  EXPECT_EQ(a.index.stride_of(1), 1);
  EXPECT_FALSE(a.index.depends_on(2));
  // Four rows of 32 floats, each row two 64-byte lines (rows start on line boundaries).
  Footprint fa = access_footprint(s, st, a, 0, 64);
  EXPECT_EQ(fa.elements, 128);
  EXPECT_EQ(fa.lines, 8);
  EXPECT_EQ(fa.runs, 4);
  EXPECT_EQ(fa.run, 32);
  // One iteration of i: one row.
  EXPECT_EQ(access_footprint(s, st, a, 1, 64).elements, 32);
  EXPECT_EQ(access_footprint(s, st, a, 3, 64).elements, 1);
  // P: rows i + r (6 rows of 114), columns k + r: 198 distinct elements, estimated
  // from above.
  Footprint fp = access_footprint(s, st, st.accesses[2], 0, 64);
  EXPECT_GE(fp.elements, 198);  // the exact union
  EXPECT_LE(fp.elements, 6 * 114);
}

TEST(AccessSummary, GuardFractionsAndLets) {
  // for xo in 0..2: for xi in 0..32: if (xo*32 + xi < 56) { let b = xo*32; Y[b + xi] = X[b + xi] }
  LoopNest nest;
  nest.inputs = {Arg("X", {56})};
  nest.outputs = {Arg("Y", {56})};
  Stmt body = LetStmt::make("Y.b", V("Y.xo") * I(32), St("Y", V("Y.b") + V("Y.xi"), Ld("X", V("Y.b") + V("Y.xi"))));
  nest.body = Loop("Y.xo", 2, Loop("Y.xi", 32, IfThenElse::make(LT::make(V("Y.xo") * I(32) + V("Y.xi"), I(56)), body)));
  const NestSummary s = summarize_nest(nest);
  ASSERT_EQ(s.stores.size(), 1u);
  EXPECT_NEAR(s.stores[0].fraction, 56.0 / 64.0, 1e-9);
  EXPECT_EQ(s.stores[0].guard_loops, (std::vector<int>{0, 1}));
  ASSERT_EQ(s.stores[0].guards.size(), 1u);
  EXPECT_NEAR(s.stores[0].guards[0].fraction, 56.0 / 64.0, 1e-9);
  EXPECT_EQ(s.stores[0].guards[0].loops, (std::vector<int>{0, 1}));
  // The let is expanded: the index is xo*32 + xi.
  EXPECT_EQ(s.stores[0].accesses[0].index.stride_of(0), 32);
  EXPECT_EQ(s.stores[0].accesses[1].index.stride_of(1), 1);
}

TEST(AccessSummary, NestedGuardsAreKeptApart) {
  // for a in 0..13: for b in 0..6: if (a*5 < 64) { if (b < 4) { Y[a*6 + b] = X[a*6 + b] } }:
  // the cost model needs each guard's own loops (one reads a, the other b).
  LoopNest nest;
  nest.inputs = {Arg("X", {78})};
  nest.outputs = {Arg("Y", {78})};
  Expr i = V("Y.a") * I(6) + V("Y.b");
  Stmt store = St("Y", i, Ld("X", i));
  nest.body = Loop("Y.a", 13, Loop("Y.b", 6, IfThenElse::make(LT::make(V("Y.a") * I(5), I(64)),
                                                             IfThenElse::make(LT::make(V("Y.b"), I(4)), store))));
  const NestSummary s = summarize_nest(nest);
  ASSERT_EQ(s.stores.size(), 1u);
  const NestStore& st = s.stores[0];
  ASSERT_EQ(st.guards.size(), 2u);
  EXPECT_EQ(st.guards[0].loops, (std::vector<int>{0}));
  EXPECT_EQ(st.guards[1].loops, (std::vector<int>{1}));
  EXPECT_LT(st.guards[1].fraction, 1.0);
  EXPECT_NEAR(st.fraction, st.guards[0].fraction * st.guards[1].fraction, 1e-12);
  EXPECT_EQ(st.guard_loops, (std::vector<int>{0, 1}));
}

TEST(AccessSummary, ALoopUnderAGuardRunsInItsShareOfTheParentsIterations) {
  // for a in 0..3: for b in 0..3: if (a*3 + b < 7) { for c in 0..8: Y[(a*3 + b)*8 + c] = 1 }
  LoopNest nest;
  nest.outputs = {Arg("Y", {72})};
  Expr slot = V("Y.a") * I(3) + V("Y.b");
  nest.body = Loop("Y.a", 3, Loop("Y.b", 3, IfThenElse::make(LT::make(slot, I(7)),
                                                            Loop("Y.c", 8, St("Y", slot * I(8) + V("Y.c"), F(1))))));
  const NestSummary s = summarize_nest(nest);
  ASSERT_EQ(s.loops.size(), 3u);
  EXPECT_EQ(s.loops[0].fraction, 1.0);
  EXPECT_EQ(s.loops[1].fraction, 1.0);
  EXPECT_NEAR(s.loops[2].fraction, 7.0 / 9.0, 1e-9);
  ASSERT_EQ(s.stores.size(), 1u);
  EXPECT_NEAR(s.stores[0].fraction, 7.0 / 9.0, 1e-9);
}

// ---- scratch ------------------------------------------------------------------------

TEST(Scratch, NestedAddSiblingsDoNotAndParallelMultiplies) {
  auto store = [](const std::string& b) { return St(b, I(0), F(1)); };
  LoopNest nest;
  nest.outputs = {Arg("O", {1})};
  // allocate A[100] { allocate B[50] {..}; allocate C[200] {..} }: peak A + C.
  nest.body = Allocate::make("A", DataType::f32(), {100},
                             Seq({Allocate::make("B", DataType::f32(), {50}, store("B")),
                                  Allocate::make("C", DataType::f32(), {200}, store("C"))}));
  EXPECT_EQ(peak_scratch_bytes(nest, 1), (100 + 200) * 4);
  EXPECT_EQ(peak_scratch_bytes(nest, 8), (100 + 200) * 4);

  // parallel for i in 0..3 { allocate T[10] { parallel for j in 0..16 { allocate U[5] } } }
  nest.body =
      Loop("O.i", 3,
           Allocate::make("T", DataType::f32(), {10},
                          Loop("O.j", 16, Allocate::make("U", DataType::f32(), {5}, store("U")), ForKind::kParallel)),
           ForKind::kParallel);
  EXPECT_EQ(peak_scratch_bytes(nest, 1), (10 + 5) * 4);
  EXPECT_EQ(peak_scratch_bytes(nest, 2), 2 * (10 + 5) * 4);
  // At most the outer loop's extent of copies, whatever the thread count; the inner
  // parallel loop runs serially on each thread.
  EXPECT_EQ(peak_scratch_bytes(nest, 64), 3 * (10 + 5) * 4);
  EXPECT_EQ(peak_scratch_bytes(nest, 0), (10 + 5) * 4);

  // No allocations: zero.
  EXPECT_EQ(peak_scratch_bytes(add_nest(), 4), 0);
}

TEST(Scratch, LoweredCacheStages) {
  ProgramPtr p = gemm_program(256);
  const LoopNest nest = lower_text(p,
                                   "split(C.i, 32, io, ii); split(C.j, 32, jo, ji); reorder(C, io, jo, ii, ji)\n"
                                   "cache_write(C, CL); compute_at(CL, C.jo); parallel(C.io)\n"
                                   "cache_read(B, CL, BP); compute_at(BP, C.jo)\n");
  // Per tile: CL 32x32 and BP 256x32 floats, live together, one set per thread.
  const int64_t per_thread = (32 * 32 + 256 * 32) * 4;
  EXPECT_EQ(peak_scratch_bytes(nest, 1), per_thread);
  EXPECT_EQ(peak_scratch_bytes(nest, 4), 4 * per_thread);
}

}  // namespace
}  // namespace tensorgym
