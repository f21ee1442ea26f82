// The reference interpreter, the program evaluator, host buffers and comparisons.
// Nests and programs are built by hand here (not parsed) so these tests depend on the
// IR nodes only.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "codegen/interp/compare.h"
#include "codegen/interp/evaluator.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/interp/interpreter.h"
#include "codegen/ir/ir_printer.h"
#include "codegen/ir/program.h"
#include "codegen/lower/loop_nest.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

using namespace ir_build;

// Runs `nest` on `inputs` and returns its outputs (asserting success).
std::vector<HostBuffer> run_ok(const LoopNest& nest, const std::vector<HostBuffer>& inputs) {
  std::vector<HostBuffer> outputs = make_output_buffers(nest);
  Status st = interpret(nest, const_pointers(inputs), pointers(outputs));
  EXPECT_TRUE(st.ok()) << st.to_string();
  return outputs;
}

Status run_status(const LoopNest& nest, const std::vector<HostBuffer>& inputs, const InterpreterOptions& options = {}) {
  std::vector<HostBuffer> outputs = make_output_buffers(nest);
  return interpret(nest, const_pointers(inputs), pointers(outputs), options);
}

// ---- nests used by several tests ----------------------------------------------------

// C[M, N] = A[M, K] x B[K, N], i-j-k order, C zeroed before each k loop.
LoopNest gemm_nest(int64_t M, int64_t N, int64_t K) {
  LoopNest nest;
  nest.inputs = {Arg("A", {M, K}), Arg("B", {K, N})};
  nest.outputs = {Arg("C", {M, N})};
  Expr c = V("i") * I(N) + V("j");
  Stmt update = St("C", c, Ld("C", c) + Ld("A", V("i") * I(K) + V("k")) * Ld("B", V("k") * I(N) + V("j")));
  nest.body = Loop("i", M, Loop("j", N, Seq({St("C", c, F(0)), Loop("k", K, update)})));
  return nest;
}

Program gemm_program(int64_t M, int64_t N, int64_t K) {
  Program p;
  p.inputs = {Input("A", {M, K}), Input("B", {K, N})};
  p.stages = {Stage("C", DataType::f32(), {Axis("i", M), Axis("j", N)},
                    Tensor("A", {V("i"), V("k")}) * Tensor("B", {V("k"), V("j")}), ReduceKind::kSum,
                    {Axis("k", K)})};
  p.outputs = {"C"};
  return p;
}

std::vector<float> gemm_reference(const HostBuffer& A, const HostBuffer& B, int64_t M, int64_t N, int64_t K) {
  std::vector<float> C(size_t(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0;
      for (int64_t k = 0; k < K; ++k) acc = acc + A.typed<float>()[i * K + k] * B.typed<float>()[k * N + j];
      C[size_t(i * N + j)] = acc;
    }
  return C;
}

// ---- HostBuffer ---------------------------------------------------------------------

TEST(HostBuffer, AlignedZeroedAndCopied) {
  HostBuffer b(DataType::f32(), {3, 5});
  EXPECT_EQ(b.num_elements(), 15);
  EXPECT_EQ(b.bytes(), 60);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
  for (int64_t i = 0; i < 15; ++i) EXPECT_EQ(b.get_float(i), 0.0);
  b.set_float(7, 2.5);
  HostBuffer copy = b;
  b.set_float(7, 1.0);
  EXPECT_EQ(copy.get_float(7), 2.5);
  EXPECT_NE(copy.data(), b.data());
  EXPECT_EQ(b.flat_index({1, 2}), 7);
  EXPECT_EQ(b.describe(), "f32[3, 5]");

  HostBuffer empty(DataType::i32(), {0, 4});
  EXPECT_EQ(empty.num_elements(), 0);
  EXPECT_NE(empty.data(), nullptr);
}

TEST(HostBuffer, TypedAccessConvertsLikeCasts) {
  HostBuffer i8(DataType::i8(), {4});
  i8.set_int(0, 130);  // wraps
  i8.set_float(1, -300.7);  // saturates
  i8.set_float(2, std::nan(""));
  i8.set_float(3, -2.9);  // truncates toward zero
  EXPECT_EQ(i8.get_int(0), -126);
  EXPECT_EQ(i8.get_int(1), -128);
  EXPECT_EQ(i8.get_int(2), 0);
  EXPECT_EQ(i8.get_int(3), -2);
  HostBuffer f(DataType::f32(), {1});
  f.set_float(0, 0.1);
  EXPECT_EQ(f.get_float(0), double(0.1f));
  HostBuffer b(DataType::boolean(), {1});
  b.set_int(0, 7);
  EXPECT_EQ(b.get_int(0), 1);
}

TEST(HostBuffer, RandomFillIsDeterministicAndInRange) {
  HostBuffer a(DataType::f32(), {1000}), b(DataType::f32(), {1000}), c(DataType::f32(), {1000});
  fill_random(a, 42);
  fill_random(b, 42);
  fill_random(c, 43);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), size_t(a.bytes())), 0);
  EXPECT_NE(std::memcmp(a.data(), c.data(), size_t(a.bytes())), 0);
  double lo = 1, hi = -1;
  for (int64_t i = 0; i < 1000; ++i) {
    lo = std::min(lo, a.get_float(i));
    hi = std::max(hi, a.get_float(i));
  }
  EXPECT_GE(lo, -1.0);
  EXPECT_LT(hi, 1.0);
  EXPECT_LT(lo, -0.9);
  EXPECT_GT(hi, 0.9);
  // Pinned bits: the sequence is part of the contract (same inputs on every platform).
  EXPECT_EQ(a.get_float(0), 0.48312973976135254);  // splitmix64(42) >> 40, scaled
  EXPECT_EQ(a.get_float(1), -0.680179238319397);

  HostBuffer i8(DataType::i8(), {2000}), i32(DataType::i32(), {2000});
  fill_random(i8, 1);
  fill_random(i32, 1);
  int64_t i8_lo = 0, i8_hi = 0, i32_lo = 0, i32_hi = 0;
  for (int64_t i = 0; i < 2000; ++i) {
    i8_lo = std::min(i8_lo, i8.get_int(i));
    i8_hi = std::max(i8_hi, i8.get_int(i));
    i32_lo = std::min(i32_lo, i32.get_int(i));
    i32_hi = std::max(i32_hi, i32.get_int(i));
  }
  EXPECT_EQ(i8_lo, -8);
  EXPECT_EQ(i8_hi, 8);
  EXPECT_EQ(i32_lo, -64);
  EXPECT_EQ(i32_hi, 64);
}

TEST(HostBuffer, RandomInputsAndPoisonedOutputs) {
  Program p = gemm_program(4, 5, 6);
  std::vector<HostBuffer> in1 = make_random_inputs(p, 7), in2 = make_random_inputs(p, 7);
  ASSERT_EQ(in1.size(), 2u);
  EXPECT_EQ(in1[0].shape(), (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(in1[1].shape(), (std::vector<int64_t>{6, 5}));
  EXPECT_EQ(std::memcmp(in1[1].data(), in2[1].data(), size_t(in1[1].bytes())), 0);
  EXPECT_NE(in1[0].get_float(0), in1[1].get_float(0));  // independent streams

  LoopNest nest = gemm_nest(4, 5, 6);
  nest.outputs.push_back(Arg("D", {3}, DataType::i32()));
  std::vector<HostBuffer> out = make_output_buffers(nest);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(std::isnan(out[0].get_float(3)));
  EXPECT_EQ(out[1].get_int(2), 0x5A5A5A5A);
}

// ---- interpreter: semantics ---------------------------------------------------------

TEST(Interpreter, Gemm) {
  const int64_t M = 7, N = 9, K = 13;
  LoopNest nest = gemm_nest(M, N, K);
  std::vector<HostBuffer> in = make_random_inputs(gemm_program(M, N, K), 1);
  std::vector<HostBuffer> out = run_ok(nest, in);
  std::vector<float> ref = gemm_reference(in[0], in[1], M, N, K);
  for (int64_t i = 0; i < M * N; ++i) ASSERT_EQ(out[0].typed<float>()[i], ref[size_t(i)]) << i;
}

TEST(Interpreter, PaddedStencilEvaluatesOnlyTheChosenSelectSide) {
  // out[i] = sum_r w[r] * (0 <= i + r - 1 < N ? A[i + r - 1] : 0): the unchosen side
  // loads A[-1] and A[N], which must not be evaluated.
  const int64_t N = 10;
  LoopNest nest;
  nest.inputs = {Arg("A", {N}), Arg("w", {3})};
  nest.outputs = {Arg("out", {N})};
  Expr x = V("i") + V("r") - I(1);
  Expr padded = Select::make(GE::make(x, I(0)) && LT::make(x, I(N)), Ld("A", x), F(0));
  nest.body = Loop("i", N, Seq({St("out", V("i"), F(0)),
                                Loop("r", 3, St("out", V("i"), Ld("out", V("i")) + Ld("w", V("r")) * padded))}));
  std::vector<HostBuffer> in = {HostBuffer(DataType::f32(), {N}), HostBuffer(DataType::f32(), {3})};
  fill_random(in[0], 3);
  fill_random(in[1], 4);
  std::vector<HostBuffer> out = run_ok(nest, in);
  const float* A = in[0].typed<float>();
  const float* w = in[1].typed<float>();
  for (int64_t i = 0; i < N; ++i) {
    float acc = 0;
    for (int64_t r = 0; r < 3; ++r) {
      int64_t j = i + r - 1;
      acc = acc + w[r] * (j >= 0 && j < N ? A[j] : 0.0f);
    }
    EXPECT_EQ(out[0].typed<float>()[i], acc) << i;
  }
}

TEST(Interpreter, AllocateLetAndIfThenElse) {
  // tmp = A * 2 (a local buffer); out[i] = i even ? tmp[i] + 1 : -tmp[x] with x = i - 1.
  const int64_t N = 8;
  LoopNest nest;
  nest.inputs = {Arg("A", {N})};
  nest.outputs = {Arg("out", {N})};
  Stmt fill = Loop("i", N, St("tmp", V("i"), Ld("A", V("i")) * F(2)));
  Stmt use = Loop(
      "i", N,
      LetStmt::make("x", V("i") - I(1),
                    IfThenElse::make(EQ::make(V("i") % I(2), I(0)), St("out", V("i"), Ld("tmp", V("i")) + F(1)),
                                     St("out", V("i"), F(0) - Ld("tmp", V("x"))))));
  nest.body = Allocate::make("tmp", DataType::f32(), {N}, Seq({fill, use}));
  std::vector<HostBuffer> in = {HostBuffer(DataType::f32(), {N})};
  fill_random(in[0], 5);
  std::vector<HostBuffer> out = run_ok(nest, in);
  const float* A = in[0].typed<float>();
  for (int64_t i = 0; i < N; ++i) {
    float expected = i % 2 == 0 ? A[i] * 2.0f + 1.0f : 0.0f - A[i - 1] * 2.0f;
    EXPECT_EQ(out[0].typed<float>()[i], expected) << i;
  }
}

TEST(Interpreter, AllocatedBuffersStartPoisoned) {
  LoopNest nest;
  nest.outputs = {Arg("out", {4}), Arg("iout", {4}, DataType::i32())};
  nest.body = Allocate::make(
      "t", DataType::f32(), {4},
      Allocate::make("u", DataType::i32(), {4},
                     Seq({St("t", I(0), F(1)), Loop("i", 4, St("out", V("i"), Ld("t", V("i")))),
                          Loop("i", 4, St("iout", V("i"), Ld("u", V("i"), DataType::i32())))})));
  std::vector<HostBuffer> out = run_ok(nest, {});
  EXPECT_EQ(out[0].get_float(0), 1.0);
  for (int64_t i = 1; i < 4; ++i) EXPECT_TRUE(std::isnan(out[0].get_float(i)));
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(out[1].get_int(i), 0x5A5A5A5A);
}

TEST(Interpreter, IntegerWrapAndFloorDivMod) {
  // The operands come from an input so nothing is folded.
  LoopNest nest;
  nest.inputs = {Arg("v", {4}, DataType::i32())};
  nest.outputs = {Arg("o", {10}, DataType::i32()), Arg("b", {2}, DataType::i8())};
  auto v = [](int64_t k) { return Ld("v", I(k), DataType::i32()); };
  // v = [INT32_MAX, -7, 2, 100]
  Expr i8_a = Cast::make(DataType::i8(), v(3));  // 100
  nest.body = Seq({
      St("o", I(0), v(0) + I(1)),             // wraps to INT32_MIN
      St("o", I(1), v(1) / v(2)),             // -7 / 2 = -4
      St("o", I(2), v(1) % v(2)),             // -7 % 2 = 1
      St("o", I(3), (I(0) - v(1)) / (I(0) - v(2))),  // 7 / -2 = -4
      St("o", I(4), (I(0) - v(1)) % (I(0) - v(2))),  // 7 % -2 = -1
      St("o", I(5), v(0) * v(2)),             // wraps to -2
      St("o", I(6), Min::make(v(1), v(2))),
      St("o", I(7), Max::make(v(1), v(2))),
      St("o", I(8), v(1) / I(8)),             // -7 / 8 = -1
      St("o", I(9), v(1) % I(8)),             // -7 % 8 = 1
      St("b", I(0), i8_a + i8_a),             // 200 wraps to -56
      St("b", I(1), Cast::make(DataType::i8(), v(0))),  // 0x7FFFFFFF -> -1
  });
  HostBuffer vin(DataType::i32(), {4});
  vin.set_int(0, std::numeric_limits<int32_t>::max());
  vin.set_int(1, -7);
  vin.set_int(2, 2);
  vin.set_int(3, 100);
  std::vector<HostBuffer> in;
  in.push_back(vin);
  std::vector<HostBuffer> out = run_ok(nest, in);
  const std::vector<int64_t> expected = {std::numeric_limits<int32_t>::min(), -4, 1, -4, -1, -2, -7, 2, -1, 1};
  for (size_t k = 0; k < expected.size(); ++k) EXPECT_EQ(out[0].get_int(int64_t(k)), expected[k]) << k;
  EXPECT_EQ(out[1].get_int(0), -56);
  EXPECT_EQ(out[1].get_int(1), -1);
}

TEST(Interpreter, I8DotProductWithI32Accumulation) {
  const int64_t N = 5, K = 64;
  LoopNest nest;
  nest.inputs = {Arg("A", {N, K}, DataType::i8()), Arg("x", {K}, DataType::i8())};
  nest.outputs = {Arg("y", {N}, DataType::i32())};
  Expr a = Cast::make(DataType::i32(), Ld("A", V("i") * I(K) + V("k"), DataType::i8()));
  Expr b = Cast::make(DataType::i32(), Ld("x", V("k"), DataType::i8()));
  nest.body = Loop("i", N, Seq({St("y", V("i"), I(0)),
                                Loop("k", K, St("y", V("i"), Ld("y", V("i"), DataType::i32()) + a * b))}));
  std::vector<HostBuffer> in = {HostBuffer(DataType::i8(), {N, K}), HostBuffer(DataType::i8(), {K})};
  fill_random(in[0], 11);
  fill_random(in[1], 12);
  std::vector<HostBuffer> out = run_ok(nest, in);
  for (int64_t i = 0; i < N; ++i) {
    int64_t acc = 0;
    for (int64_t k = 0; k < K; ++k) acc += in[0].get_int(i * K + k) * in[1].get_int(k);
    EXPECT_EQ(out[0].get_int(i), acc);
  }
}

TEST(Interpreter, FloatToIntCastsTruncateAndSaturate) {
  const std::vector<double> values = {2.7, -2.7, 1e10, -1e10, std::nan(""), 127.9, -0.5};
  const int64_t n = int64_t(values.size());
  LoopNest nest;
  nest.inputs = {Arg("x", {n})};
  nest.outputs = {Arg("i32", {n}, DataType::i32()), Arg("i8", {n}, DataType::i8()), Arg("f", {n})};
  Expr x = Ld("x", V("i"));
  nest.body = Loop("i", n, Seq({St("i32", V("i"), Cast::make(DataType::i32(), x)),
                                St("i8", V("i"), Cast::make(DataType::i8(), x)),
                                // i8 -> f32 -> back: exact
                                St("f", V("i"), Cast::make(DataType::f32(), Cast::make(DataType::i8(), x)))}));
  HostBuffer xin(DataType::f32(), {n});
  for (int64_t i = 0; i < n; ++i) xin.set_float(i, values[size_t(i)]);
  std::vector<HostBuffer> in;
  in.push_back(xin);
  std::vector<HostBuffer> out = run_ok(nest, in);
  const int64_t imax = std::numeric_limits<int32_t>::max(), imin = std::numeric_limits<int32_t>::min();
  const std::vector<int64_t> e32 = {2, -2, imax, imin, 0, 127, 0};
  const std::vector<int64_t> e8 = {2, -2, 127, -128, 0, 127, 0};
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(out[0].get_int(i), e32[size_t(i)]) << i;
    EXPECT_EQ(out[1].get_int(i), e8[size_t(i)]) << i;
    EXPECT_EQ(out[2].get_float(i), double(e8[size_t(i)])) << i;
  }
}

TEST(Interpreter, MathCallsUseFloatPrecision) {
  const int64_t N = 16;
  LoopNest nest;
  nest.inputs = {Arg("x", {N})};
  nest.outputs = {Arg("y", {N}), Arg("z", {N}, DataType::f64())};
  Expr x = Ld("x", V("i"));
  Expr xd = Cast::make(DataType::f64(), x);
  nest.body = Loop(
      "i", N,
      Seq({St("y", V("i"), Call::make(CallOp::kExp, {x}) + Call::make(CallOp::kTanh, {x}) +
                                  Call::make(CallOp::kSqrt, {Call::make(CallOp::kAbs, {x})})),
           St("z", V("i"), Call::make(CallOp::kLog, {Call::make(CallOp::kExp, {xd})}))}));
  std::vector<HostBuffer> in = {HostBuffer(DataType::f32(), {N})};
  fill_random(in[0], 9);
  std::vector<HostBuffer> out = run_ok(nest, in);
  for (int64_t i = 0; i < N; ++i) {
    const float v = in[0].typed<float>()[i];
    const float expected = std::exp(v) + std::tanh(v) + std::sqrt(std::fabs(v));
    EXPECT_EQ(out[0].typed<float>()[i], expected);
    EXPECT_EQ(out[1].typed<double>()[i], std::log(std::exp(double(v))));
  }
}

TEST(Interpreter, MaxReduction) {
  const int64_t M = 6, K = 20;
  LoopNest nest;
  nest.inputs = {Arg("A", {M, K})};
  nest.outputs = {Arg("m", {M})};
  nest.body = Loop("i", M, Seq({St("m", V("i"), make_lowest(DataType::f32())),
                                Loop("k", K, St("m", V("i"), Max::make(Ld("m", V("i")), Ld("A", V("i") * I(K) + V("k")))))}));
  std::vector<HostBuffer> in = {HostBuffer(DataType::f32(), {M, K})};
  fill_random(in[0], 2);
  std::vector<HostBuffer> out = run_ok(nest, in);
  for (int64_t i = 0; i < M; ++i) {
    float m = -INFINITY;
    for (int64_t k = 0; k < K; ++k) m = std::max(m, in[0].typed<float>()[i * K + k]);
    EXPECT_EQ(out[0].typed<float>()[i], m);
  }
}

TEST(Interpreter, LoopBoundsEvaluatedOnceAndEmptyLoops) {
  // for i in [2, 2 + 3): out[i] = i;  for j in [0, -1): never runs.
  LoopNest nest;
  nest.outputs = {Arg("out", {6}, DataType::i32())};
  nest.body = Seq({Loop("i", 6, St("out", V("i"), I(-1))),
                   For::make("i", I(2), I(3), ForKind::kParallel, St("out", V("i"), V("i"))),
                   For::make("j", I(0), I(-1), ForKind::kSerial, St("out", I(100), I(0)))});
  std::vector<HostBuffer> out = run_ok(nest, {});
  const std::vector<int64_t> expected = {-1, -1, 2, 3, 4, -1};
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(out[0].get_int(i), expected[size_t(i)]);
}

TEST(Interpreter, CompiledNestRunsRepeatedly) {
  const int64_t M = 4, N = 4, K = 4;
  auto compiled = CompiledNest::compile(gemm_nest(M, N, K));
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  for (uint64_t seed = 0; seed < 3; ++seed) {
    std::vector<HostBuffer> in = make_random_inputs(gemm_program(M, N, K), seed);
    std::vector<HostBuffer> out = make_output_buffers(gemm_nest(M, N, K));
    ASSERT_TRUE((*compiled)->run(const_pointers(in), pointers(out)).ok());
    std::vector<float> ref = gemm_reference(in[0], in[1], M, N, K);
    for (int64_t i = 0; i < M * N; ++i) ASSERT_EQ(out[0].typed<float>()[i], ref[size_t(i)]);
    // M*N stores of zero + M*N*K updates + loop iterations M + M*N + M*N*K.
    EXPECT_EQ((*compiled)->last_steps(), 2 * M * N + 2 * M * N * K + M);
  }
}

// ---- interpreter: errors ------------------------------------------------------------

TEST(InterpreterErrors, OutOfBoundsLoad) {
  LoopNest nest;
  nest.inputs = {Arg("A", {16})};
  nest.outputs = {Arg("out", {17})};
  nest.body = Loop("i", 17, St("out", V("i"), Ld("A", V("i"))));
  std::vector<HostBuffer> in = {HostBuffer(DataType::f32(), {16})};
  Status st = run_status(nest, in);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "out of bounds load from A: index 16, size 16");

  nest.body = Loop("i", 16, St("out", V("i"), Ld("A", V("i") - I(1))));
  st = run_status(nest, in);
  EXPECT_EQ(st.message(), "out of bounds load from A: index -1, size 16");
}

TEST(InterpreterErrors, OutOfBoundsStore) {
  LoopNest nest = gemm_nest(32, 32, 4);
  // Store one past the end of C after the GEMM.
  nest.body = Seq({nest.body, St("C", I(1024), F(1))});
  std::vector<HostBuffer> in = make_random_inputs(gemm_program(32, 32, 4), 0);
  Status st = run_status(nest, in);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "out of bounds store to C: index 1024, size 1024");
}

TEST(InterpreterErrors, OutOfBoundsInAllocation) {
  LoopNest nest;
  nest.outputs = {Arg("out", {1})};
  nest.body = Allocate::make("tmp", DataType::f32(), {8}, Loop("i", 9, St("tmp", V("i"), F(0))));
  Status st = run_status(nest, {});
  EXPECT_EQ(st.message(), "out of bounds store to tmp: index 8, size 8");
}

TEST(InterpreterErrors, IntegerDivisionByZero) {
  LoopNest nest;
  nest.inputs = {Arg("d", {3}, DataType::i32())};
  nest.outputs = {Arg("out", {3}, DataType::i32())};
  nest.body = Loop("i", 3, St("out", V("i"), I(10) / Ld("d", V("i"), DataType::i32())));
  HostBuffer d(DataType::i32(), {3});
  d.set_int(0, 2);
  d.set_int(1, 5);
  d.set_int(2, 0);
  std::vector<HostBuffer> in;
  in.push_back(d);
  Status st = run_status(nest, in);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(st.message(), ("integer division by zero"));
  EXPECT_CONTAINS(st.message(), ("10 / d[i]"));

  nest.body = Loop("i", 3, St("out", V("i"), I(10) % Ld("d", V("i"), DataType::i32())));
  EXPECT_CONTAINS(run_status(nest, in).message(), ("integer division by zero"));
}

TEST(InterpreterErrors, StepCap) {
  LoopNest nest;
  nest.outputs = {Arg("out", {1})};
  nest.body = Loop("i", 1000, Loop("j", 1000, St("out", I(0), F(1))));
  InterpreterOptions options;
  options.max_steps = 5000;
  Status st = run_status(nest, {}, options);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_CONTAINS(st.message(), ("step limit of 5000"));
  // An empty-bodied loop is capped too.
  nest.body = Loop("i", 1 << 30, IfThenElse::make(LT::make(V("i"), I(0)), St("out", I(0), F(1))));
  EXPECT_EQ(run_status(nest, {}, options).code(), StatusCode::kResourceExhausted);
}

TEST(InterpreterErrors, AllocationCap) {
  LoopNest nest;
  nest.outputs = {Arg("out", {1})};
  nest.body = Allocate::make("big", DataType::f32(), {int64_t(1) << 40}, St("out", I(0), F(0)));
  EXPECT_EQ(run_status(nest, {}).code(), StatusCode::kResourceExhausted);
}

TEST(InterpreterErrors, WrongArguments) {
  LoopNest nest = gemm_nest(4, 4, 4);
  std::vector<HostBuffer> in = make_random_inputs(gemm_program(4, 4, 4), 0);
  std::vector<HostBuffer> out = make_output_buffers(nest);

  Status st = interpret(nest, {&in[0]}, pointers(out));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(st.message(), ("expected 2 inputs, got 1"));

  HostBuffer wrong_shape(DataType::f32(), {4, 5});
  st = interpret(nest, {&in[0], &wrong_shape}, pointers(out));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "input B: expected f32[4, 4], got f32[4, 5]");

  HostBuffer wrong_type(DataType::i32(), {4, 4});
  st = interpret(nest, const_pointers(in), {&wrong_type});
  EXPECT_EQ(st.message(), "output C: expected f32[4, 4], got i32[4, 4]");

  st = interpret(nest, {&in[0], nullptr}, pointers(out));
  EXPECT_CONTAINS(st.message(), ("input B is null"));
  EXPECT_EQ(interpret(nest, const_pointers(in), {}).code(), StatusCode::kInvalidArgument);
}

TEST(InterpreterErrors, VectorNodesAreUnimplemented) {
  LoopNest nest;
  nest.inputs = {Arg("A", {8})};
  nest.outputs = {Arg("out", {8})};
  Expr ramp = Ramp::make(I(0), I(1), 8);
  nest.body = Store::make("out", {ramp}, Load::make(DataType::f32().with_lanes(8), "A", {ramp}));
  std::vector<HostBuffer> in = {HostBuffer(DataType::f32(), {8})};
  Status st = run_status(nest, in);
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  nest.body = St("out", I(0), Load::make(DataType::f32(), "A", {Broadcast::make(I(0), 4)}));
  EXPECT_EQ(run_status(nest, in).code(), StatusCode::kUnimplemented);
}

TEST(InterpreterErrors, MalformedNests) {
  std::vector<HostBuffer> in = {HostBuffer(DataType::f32(), {4})};
  LoopNest nest;
  nest.inputs = {Arg("A", {4})};
  nest.outputs = {Arg("out", {4})};

  nest.body = St("out", V("i"), F(0));
  Status st = run_status(nest, in);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(st.message(), ("unbound variable i"));

  nest.body = St("nope", I(0), F(0));
  EXPECT_CONTAINS(run_status(nest, in).message(), ("unknown buffer nope"));

  nest.body = St("A", I(0), F(0));
  EXPECT_CONTAINS(run_status(nest, in).message(), ("store to input A"));

  nest.body = St("out", I(0), Cast::make(DataType::f32(), Ld("A", I(0), DataType::i32())));
  EXPECT_CONTAINS(run_status(nest, in).message(), ("load from A as i32, but the buffer is f32"));

  nest.body = Store::make("out", {I(0), I(1)}, F(0));
  EXPECT_CONTAINS(run_status(nest, in).message(), ("one flat index"));

  // Allocations are scoped: a name is unknown after its Allocate.
  nest.body = Seq({Allocate::make("t", DataType::f32(), {4}, St("t", I(0), F(0))), St("t", I(0), F(0))});
  EXPECT_CONTAINS(run_status(nest, in).message(), ("unknown buffer t"));
}

// ---- evaluator ----------------------------------------------------------------------

TEST(Evaluator, GemmAgreesWithInterpreter) {
  const int64_t M = 12, N = 10, K = 9;
  Program p = gemm_program(M, N, K);
  std::vector<HostBuffer> in = make_random_inputs(p, 3);
  std::vector<HostBuffer> out = run_ok(gemm_nest(M, N, K), in);
  ProgramEvaluator ev(p, const_pointers(in));
  ASSERT_TRUE(ev.status().ok()) << ev.status().to_string();
  Expected<HostBuffer> ref = ev.evaluate("C");
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  Comparison c = compare_buffers(*ref, out[0], Tolerance{0, 0});  // same order: bit-exact
  EXPECT_TRUE(c.match) << c.describe();
  Expected<double> v = ev.value_at("C", {3, 4});
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, out[0].get_float(3 * N + 4));
  Expected<double> a = ev.value_at("A", {1, 2});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, in[0].get_float(1 * K + 2));
}

TEST(Evaluator, OnePointOfALargeGemmIsCheap) {
  const int64_t S = 1024;
  Program p = gemm_program(S, S, S);
  std::vector<HostBuffer> in = make_random_inputs(p, 5);
  ProgramEvaluator ev(p, const_pointers(in));
  Expected<double> v = ev.value_at("C", {5, 1000});
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  float acc = 0;
  for (int64_t k = 0; k < S; ++k) acc = acc + in[0].typed<float>()[5 * S + k] * in[1].typed<float>()[k * S + 1000];
  EXPECT_EQ(*v, double(acc));
  EXPECT_EQ(ev.steps(), S);
  // Memoized: asking again costs nothing.
  ASSERT_TRUE(ev.value_at("C", {5, 1000}).ok());
  EXPECT_EQ(ev.steps(), S);
}

// conv2d over C channels with a zero-padding stage: P = pad(X, 1), O = P * W (3x3).
struct ConvCase {
  int64_t C = 3, H = 6, W = 5, K = 2, R = 3;
  Program program() const {
    Program p;
    p.inputs = {Input("X", {C, H, W}), Input("Wt", {K, C, R, R})};
    Expr h = V("h"), w = V("w");
    Expr inside = GE::make(h, I(1)) && LE::make(h, I(H)) && GE::make(w, I(1)) && LE::make(w, I(W));
    p.stages.push_back(Stage("P", DataType::f32(), {Axis("c", C), Axis("h", H + 2), Axis("w", W + 2)},
                             Select::make(inside, Tensor("X", {V("c"), h - I(1), w - I(1)}), F(0))));
    p.stages.push_back(Stage(
        "O", DataType::f32(), {Axis("k", K), Axis("y", H), Axis("x", W)},
        Tensor("P", {V("rc"), V("y") + V("ry"), V("x") + V("rx")}) * Tensor("Wt", {V("k"), V("rc"), V("ry"), V("rx")}),
        ReduceKind::kSum, {Axis("rc", C), Axis("ry", R), Axis("rx", R)}));
    p.outputs = {"O"};
    return p;
  }
  LoopNest nest() const {
    LoopNest n;
    n.inputs = {Arg("X", {C, H, W}), Arg("Wt", {K, C, R, R})};
    n.outputs = {Arg("O", {K, H, W})};
    const int64_t PH = H + 2, PW = W + 2;
    Expr h = V("h"), w = V("w");
    Expr inside = GE::make(h, I(1)) && LE::make(h, I(H)) && GE::make(w, I(1)) && LE::make(w, I(W));
    Stmt pad = Loop("c", C, Loop("h", PH, Loop("w", PW,
        St("P", (V("c") * I(PH) + h) * I(PW) + w,
           Select::make(inside, Ld("X", (V("c") * I(H) + h - I(1)) * I(W) + w - I(1)), F(0))))));
    Expr o = (V("k") * I(H) + V("y")) * I(W) + V("x");
    Expr pv = Ld("P", (V("rc") * I(PH) + V("y") + V("ry")) * I(PW) + V("x") + V("rx"));
    Expr wv = Ld("Wt", ((V("k") * I(C) + V("rc")) * I(R) + V("ry")) * I(R) + V("rx"));
    Stmt conv = Loop("k", K, Loop("y", H, Loop("x", W, Seq({
        St("O", o, F(0)),
        Loop("rc", C, Loop("ry", R, Loop("rx", R, St("O", o, Ld("O", o) + pv * wv))))}))));
    n.body = Allocate::make("P", DataType::f32(), {C * PH * PW}, Seq({pad, conv}));
    return n;
  }
};

TEST(Evaluator, ConvWithPaddingStageAgreesWithInterpreter) {
  ConvCase cc;
  Program p = cc.program();
  std::vector<HostBuffer> in = make_random_inputs(p, 8);
  std::vector<HostBuffer> out = run_ok(cc.nest(), in);
  ProgramEvaluator ev(p, const_pointers(in));
  Expected<HostBuffer> ref = ev.evaluate("O");
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  Comparison c = compare_buffers(*ref, out[0], Tolerance{0, 0});
  EXPECT_TRUE(c.match) << c.describe();
  // A corner reads the padding.
  Expected<double> pad = ev.value_at("P", {0, 0, 3});
  ASSERT_TRUE(pad.ok());
  EXPECT_EQ(*pad, 0.0);
  Comparison sampled = compare_with_evaluator(ev, "O", out[0], Tolerance{0, 0}, 10, 1);
  EXPECT_TRUE(sampled.match) << sampled.describe();
  EXPECT_EQ(sampled.checked, 12);
}

TEST(Evaluator, SoftmaxChainAgreesWithInterpreter) {
  const int64_t R = 4, Cn = 10;
  Program p;
  p.inputs = {Input("X", {R, Cn})};
  p.stages.push_back(Stage("mx", DataType::f32(), {Axis("i", R)}, Tensor("X", {V("i"), V("j")}), ReduceKind::kMax,
                           {Axis("j", Cn)}));
  p.stages.push_back(Stage("e", DataType::f32(), {Axis("i", R), Axis("j", Cn)},
                           Call::make(CallOp::kExp, {Tensor("X", {V("i"), V("j")}) - Tensor("mx", {V("i")})})));
  p.stages.push_back(Stage("s", DataType::f32(), {Axis("i", R)}, Tensor("e", {V("i"), V("j")}), ReduceKind::kSum,
                           {Axis("j", Cn)}));
  p.stages.push_back(Stage("y", DataType::f32(), {Axis("i", R), Axis("j", Cn)},
                           Tensor("e", {V("i"), V("j")}) / Tensor("s", {V("i")})));
  p.outputs = {"y"};

  LoopNest n;
  n.inputs = {Arg("X", {R, Cn})};
  n.outputs = {Arg("y", {R, Cn})};
  Expr ij = V("i") * I(Cn) + V("j");
  Stmt body = Seq({
      Loop("i", R, Seq({St("mx", V("i"), make_lowest(DataType::f32())),
                        Loop("j", Cn, St("mx", V("i"), Max::make(Ld("mx", V("i")), Ld("X", ij))))})),
      Loop("i", R, Loop("j", Cn, St("e", ij, Call::make(CallOp::kExp, {Ld("X", ij) - Ld("mx", V("i"))})))),
      Loop("i", R, Seq({St("s", V("i"), F(0)), Loop("j", Cn, St("s", V("i"), Ld("s", V("i")) + Ld("e", ij)))})),
      Loop("i", R, Loop("j", Cn, St("y", ij, Ld("e", ij) / Ld("s", V("i"))))),
  });
  n.body = Allocate::make("mx", DataType::f32(), {R},
                          Allocate::make("e", DataType::f32(), {R * Cn}, Allocate::make("s", DataType::f32(), {R}, body)));

  std::vector<HostBuffer> in = make_random_inputs(p, 4);
  std::vector<HostBuffer> out = run_ok(n, in);
  ProgramEvaluator ev(p, const_pointers(in));
  Expected<HostBuffer> ref = ev.evaluate("y");
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  Comparison c = compare_buffers(*ref, out[0], Tolerance{0, 0});
  EXPECT_TRUE(c.match) << c.describe();
  double row = 0;
  for (int64_t j = 0; j < Cn; ++j) row += out[0].get_float(j);
  EXPECT_NEAR(row, 1.0, 1e-5);
}

TEST(Evaluator, IntegerStagesWrapLikeTheInterpreter) {
  Program p;
  p.inputs = {Input("A", {3, 16}, DataType::i8())};
  Expr a = Cast::make(DataType::i32(), Tensor("A", {V("i"), V("k")}, DataType::i8()));
  p.stages.push_back(Stage("s", DataType::i32(), {Axis("i", 3)}, a * a - I(3) / I(2), ReduceKind::kSum, {Axis("k", 16)}));
  p.stages.push_back(Stage("m", DataType::i8(), {Axis("i", 3)},
                           Cast::make(DataType::i8(), Tensor("s", {V("i")}, DataType::i32()) % I(7) * I(40))));
  p.outputs = {"m"};
  std::vector<HostBuffer> in = make_random_inputs(p, 6);
  ProgramEvaluator ev(p, const_pointers(in));
  for (int64_t i = 0; i < 3; ++i) {
    int64_t s = 0;
    for (int64_t k = 0; k < 16; ++k) s += in[0].get_int(i * 16 + k) * in[0].get_int(i * 16 + k) - 1;  // 3 / 2 == 1
    Expected<double> v = ev.value_at("s", {i});
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(*v, double(s));
    const int64_t m = int64_t(int8_t(uint8_t(((s % 7 + 7) % 7) * 40)));
    Expected<double> mv = ev.value_at("m", {i});
    ASSERT_TRUE(mv.ok());
    EXPECT_EQ(*mv, double(m));
  }
}

TEST(Evaluator, Errors) {
  Program p = gemm_program(4, 4, 4);
  std::vector<HostBuffer> in = make_random_inputs(p, 0);
  {
    ProgramEvaluator ev(p, {&in[0]});
    EXPECT_FALSE(ev.status().ok());
    EXPECT_EQ(ev.value_at("C", {0, 0}).status().code(), StatusCode::kInvalidArgument);
  }
  ProgramEvaluator ev(p, const_pointers(in));
  EXPECT_EQ(ev.value_at("D", {0, 0}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ev.value_at("C", {0}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ev.value_at("C", {0, 4}).status().code(), StatusCode::kOutOfRange);

  // A stage that reads out of bounds (no guard).
  Program bad;
  bad.inputs = {Input("A", {4})};
  bad.stages = {Stage("B", DataType::f32(), {Axis("i", 4)}, Tensor("A", {V("i") + I(1)}))};
  bad.outputs = {"B"};
  std::vector<HostBuffer> bin = make_random_inputs(bad, 0);
  ProgramEvaluator bev(bad, const_pointers(bin));
  ASSERT_TRUE(bev.value_at("B", {2}).ok());
  Expected<double> oob = bev.value_at("B", {3});
  EXPECT_EQ(oob.status().code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(oob.status().message(), ("out of bounds read of A at [4] (shape [4])"));

  // Integer division by zero.
  Program div;
  div.inputs = {Input("A", {2}, DataType::i32())};
  div.stages = {Stage("B", DataType::i32(), {Axis("i", 2)}, I(1) / Tensor("A", {V("i")}, DataType::i32()))};
  div.outputs = {"B"};
  HostBuffer zeros(DataType::i32(), {2});
  ProgramEvaluator dev(div, {&zeros});
  EXPECT_CONTAINS(dev.value_at("B", {0}).status().message(), ("integer division by zero"));

  // Unknown variable and reads of later stages are rejected up front.
  Program unk;
  unk.inputs = {Input("A", {2})};
  unk.stages = {Stage("B", DataType::f32(), {Axis("i", 2)}, Tensor("A", {V("q")}))};
  HostBuffer two(DataType::f32(), {2});
  ProgramEvaluator uev(unk, {&two});
  EXPECT_CONTAINS(uev.status().message(), "unknown variable q");
  Program later;
  later.inputs = {Input("A", {2})};
  later.stages = {Stage("B", DataType::f32(), {Axis("i", 2)}, Tensor("C", {V("i")})),
                  Stage("C", DataType::f32(), {Axis("i", 2)}, Tensor("A", {V("i")}))};
  ProgramEvaluator lev(later, {&two});
  EXPECT_CONTAINS(lev.status().message(), "not an input or an earlier stage");

  // Step cap.
  EvaluatorOptions opts;
  opts.max_steps = 10;
  ProgramEvaluator capped(p, const_pointers(in), opts);
  EXPECT_TRUE(capped.value_at("C", {0, 0}).ok());
  EXPECT_EQ(capped.evaluate("C").status().code(), StatusCode::kResourceExhausted);
}

// Differential check of the scalar semantics: random integer and float expressions
// over a loop variable and two inputs, run through the interpreter's compiled
// form (with its specialised fast paths) and the evaluator's tree walk, must agree
// bit for bit.
class RandomExprs {
 public:
  explicit RandomExprs(uint64_t seed) : state_(seed) {}

  Expr gen_int(int depth) {
    if (depth == 0 || next(4) == 0) {
      switch (next(4)) {
        case 0: return I(int64_t(next(41)) - 20);
        case 1: return V("i");
        case 2: return T("A", V("i"));
        default: return T("A", (V("i") + I(int64_t(next(7)))) % I(16));
      }
    }
    switch (next(10)) {
      case 0: return gen_int(depth - 1) + gen_int(depth - 1);
      case 1: return gen_int(depth - 1) - gen_int(depth - 1);
      case 2: return gen_int(depth - 1) * gen_int(depth - 1) * I(65537);
      case 3: return gen_int(depth - 1) / nonzero();
      case 4: return gen_int(depth - 1) % nonzero();
      case 5: return Min::make(gen_int(depth - 1), gen_int(depth - 1));
      case 6: return Max::make(gen_int(depth - 1), gen_int(depth - 1));
      case 7: return Select::make(LT::make(gen_int(depth - 1), gen_int(depth - 1)), gen_int(depth - 1), gen_int(depth - 1));
      case 8: return Cast::make(DataType::i32(), Cast::make(DataType::i8(), gen_int(depth - 1)));
      default: return Cast::make(DataType::i32(), gen_float(depth - 1) * F(1e3));
    }
  }

  Expr gen_float(int depth) {
    if (depth == 0 || next(4) == 0) {
      switch (next(3)) {
        case 0: return F(double(int64_t(next(2001)) - 1000) / 256.0);
        case 1: return T("X", V("i"), DataType::f32());
        default: return Cast::make(DataType::f32(), T("A", V("i")));
      }
    }
    switch (next(11)) {
      case 0: return gen_float(depth - 1) + gen_float(depth - 1);
      case 1: return gen_float(depth - 1) - gen_float(depth - 1);
      case 2: return gen_float(depth - 1) * gen_float(depth - 1);
      case 3: return gen_float(depth - 1) / gen_float(depth - 1);
      case 4: return Min::make(gen_float(depth - 1), gen_float(depth - 1));
      case 5: return Max::make(gen_float(depth - 1), gen_float(depth - 1));
      case 6: return Select::make(LE::make(gen_float(depth - 1), gen_float(depth - 1)), gen_float(depth - 1),
                                  gen_float(depth - 1));
      case 7: return Call::make(CallOp::kTanh, {gen_float(depth - 1)});
      case 8: return Call::make(CallOp::kSqrt, {Call::make(CallOp::kAbs, {gen_float(depth - 1)})});
      case 9: return Cast::make(DataType::f32(), Cast::make(DataType::f64(), gen_float(depth - 1)) * FloatImm::make(DataType::f64(), 1.0 / 3));
      default: return Cast::make(DataType::f32(), gen_int(depth - 1));
    }
  }

 private:
  static Expr T(const std::string& name, Expr idx, DataType t = DataType::i32()) { return Load::make(t, name, {std::move(idx)}); }
  Expr nonzero() {
    int64_t v = int64_t(next(11)) - 5;
    return I(v == 0 ? 3 : v);
  }
  uint64_t next(uint64_t n) {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    return (state_ >> 33) % n;
  }
  uint64_t state_;
};

TEST(Interpreter, RandomExpressionsAgreeWithEvaluator) {
  const int64_t N = 16;
  for (uint64_t trial = 0; trial < 150; ++trial) {
    RandomExprs gen(trial * 7919 + 1);
    Expr ie = gen.gen_int(4), fe = gen.gen_float(4);
    Program p;
    p.inputs = {Input("A", {N}, DataType::i32()), Input("X", {N})};
    p.stages = {Stage("oi", DataType::i32(), {Axis("i", N)}, ie), Stage("of", DataType::f32(), {Axis("i", N)}, fe)};
    p.outputs = {"oi", "of"};
    LoopNest nest;
    nest.inputs = {Arg("A", {N}, DataType::i32()), Arg("X", {N})};
    nest.outputs = {Arg("oi", {N}, DataType::i32()), Arg("of", {N})};
    nest.body = Loop("i", N, Seq({St("oi", V("i"), ie), St("of", V("i"), fe)}));
    std::vector<HostBuffer> in = make_random_inputs(p, trial);
    std::vector<HostBuffer> out = run_ok(nest, in);
    ProgramEvaluator ev(p, const_pointers(in));
    for (int k = 0; k < 2; ++k) {
      Expected<HostBuffer> ref = ev.evaluate(k == 0 ? "oi" : "of");
      ASSERT_TRUE(ref.ok()) << ref.status().to_string();
      Comparison c = compare_buffers(*ref, out[size_t(k)], Tolerance{0, 0});
      ASSERT_TRUE(c.match) << "trial " << trial << ": " << c.describe() << "\n" << (k == 0 ? ie : fe);
    }
  }
}

// ---- comparisons --------------------------------------------------------------------

TEST(Compare, FloatsWithinTolerance) {
  HostBuffer e(DataType::f32(), {4}), a(DataType::f32(), {4});
  for (int64_t i = 0; i < 4; ++i) {
    e.set_float(i, 1.0 + double(i));
    a.set_float(i, 1.0 + double(i));
  }
  EXPECT_TRUE(compare_buffers(e, a).match);
  a.set_float(2, 3.0 + 3.0e-4);  // inside atol + rtol*|e| = 3.1e-4
  EXPECT_TRUE(compare_buffers(e, a, {1e-4, 1e-5}).match);
  a.set_float(2, 3.01);
  Comparison c = compare_buffers(e, a, {1e-4, 1e-5});
  EXPECT_FALSE(c.match);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.worst_index, 2);
  EXPECT_EQ(c.expected_value, 3.0);
  EXPECT_NEAR(c.max_abs_error, 0.01, 1e-6);
  EXPECT_NEAR(c.max_rel_error, 0.01 / 3, 1e-6);
  EXPECT_CONTAINS(c.describe(), ("1 of 4 elements differ"));
  EXPECT_CONTAINS(c.describe(), ("worst at 2 [2]: expected 3, got 3.00999"));
}

// The report spells each figure as printf's %.9g would, and the worst element's
// index in the shape.
TEST(Compare, DescribeSpellsFiguresAsNineSignificantDigits) {
  HostBuffer e(DataType::f64(), {2, 3}), a(DataType::f64(), {2, 3});
  for (int64_t i = 0; i < 6; ++i) {
    e.set_float(i, 0.1 * double(i + 1));
    a.set_float(i, 0.1 * double(i + 1));
  }
  a.set_float(4, 1.0 / 3.0);
  Comparison c = compare_buffers(e, a, {1e-4, 1e-5});
  ASSERT_FALSE(c.match);
  auto g9 = [](double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return std::string(buf);
  };
  std::string want = "1 of 6 elements differ (max abs error " + g9(c.max_abs_error) + ", max rel error " +
                     g9(c.max_rel_error) + "); worst at 4 [1, 1]: expected " + g9(c.expected_value) + ", got " +
                     g9(c.actual_value);
  if (c.allowed_error > 0) want += " (allowed error " + g9(c.allowed_error) + ")";
  EXPECT_EQ(c.describe(), want);
  EXPECT_EQ(compare_buffers(e, e).describe(), "match (6 elements, max abs error 0, max rel error 0)");
}

TEST(Compare, NaNAndInfinity) {
  HostBuffer e(DataType::f64(), {3}), a(DataType::f64(), {3});
  e.set_float(0, std::nan(""));
  a.set_float(0, std::nan(""));
  e.set_float(1, INFINITY);
  a.set_float(1, INFINITY);
  EXPECT_TRUE(compare_buffers(e, a).match);
  a.set_float(2, std::nan(""));  // expected 0, got NaN
  Comparison c = compare_buffers(e, a);
  EXPECT_FALSE(c.match);
  EXPECT_EQ(c.worst_index, 2);
  EXPECT_TRUE(std::isinf(c.max_abs_error));
  a.set_float(2, 0);
  e.set_float(0, 1.0);  // expected 1, got NaN
  EXPECT_FALSE(compare_buffers(e, a).match);
  e.set_float(0, std::nan(""));
  a.set_float(1, 1e300);  // expected inf, got finite: never within tolerance
  EXPECT_FALSE(compare_buffers(e, a, {1, 1}).match);
}

TEST(Compare, IntegersExactly) {
  HostBuffer e(DataType::i32(), {2, 2}), a(DataType::i32(), {2, 2});
  e.set_int(3, 100);
  a.set_int(3, 100);
  EXPECT_TRUE(compare_buffers(e, a, {1, 1}).match);
  a.set_int(3, 101);
  Comparison c = compare_buffers(e, a, {1, 1});  // tolerance does not apply to integers
  EXPECT_FALSE(c.match);
  EXPECT_CONTAINS(c.describe(), ("worst at 3 [1, 1]: expected 100, got 101"));
}

TEST(Compare, ShapeAndTypeMismatch) {
  HostBuffer e(DataType::f32(), {2, 3}), a(DataType::f32(), {3, 2}), b(DataType::f64(), {2, 3});
  Comparison c = compare_buffers(e, a);
  EXPECT_FALSE(c.match);
  EXPECT_EQ(c.describe(), "mismatch: expected f32[2, 3], got f32[3, 2]");
  EXPECT_EQ(compare_buffers(e, b).describe(), "mismatch: expected f32[2, 3], got f64[2, 3]");
}

TEST(Compare, SampledAgainstEvaluatorCatchesTheLastElement) {
  const int64_t M = 16, N = 16, K = 4;
  Program p = gemm_program(M, N, K);
  std::vector<HostBuffer> in = make_random_inputs(p, 2);
  std::vector<HostBuffer> out = run_ok(gemm_nest(M, N, K), in);
  ProgramEvaluator ev(p, const_pointers(in));
  Comparison ok = compare_with_evaluator(ev, "C", out[0], Tolerance{}, 20, 9);
  EXPECT_TRUE(ok.match) << ok.describe();
  EXPECT_EQ(ok.checked, 22);
  out[0].set_float(M * N - 1, 1e6);
  Comparison bad = compare_with_evaluator(ev, "C", out[0], Tolerance{}, 20, 9);
  EXPECT_FALSE(bad.match);
  EXPECT_EQ(bad.worst_index, M * N - 1);
  HostBuffer wrong(DataType::f32(), {M, N + 1});
  EXPECT_CONTAINS(compare_with_evaluator(ev, "C", wrong, Tolerance{}, 20, 9).describe(), ("expected f32[16, 16]"));
  EXPECT_CONTAINS(compare_with_evaluator(ev, "Z", out[0], Tolerance{}, 20, 9).describe(), ("no tensor named Z"));
}

}  // namespace
}  // namespace tensorgym
