// The program language: lexer, parser (typing, ranges, bounds, caps, errors) and the
// program printer (round trips).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "codegen/ir/ir_equality.h"
#include "codegen/ir/ir_printer.h"
#include "codegen/ir/lexer.h"
#include "codegen/ir/program.h"

namespace tensorgym {
namespace {

const char* kGemm = R"(# GEMM
input A: f32[1024, 1024]
input B: f32[1024, 1024]
C[i, j] += A[i, k] * B[k, j]
)";

const char* kConv2d = R"(# conv2d with explicit padding stage
input X: f32[1, 64, 56, 56]
input W: f32[64, 64, 3, 3]
P[n, c, h, w] = select(h >= 1 && h <= 56 && w >= 1 && w <= 56, X[n, c, h - 1, w - 1], 0.0) where h in 0..58, w in 0..58
Y[n, f, y, x] += P[n, c, y + r, x + s] * W[f, c, r, s] where y in 0..56, x in 0..56
R[n, f, y, x] = max(Y[n, f, y, x], 0.0)
)";

const char* kSoftmax = R"(input X: f32[8, 32]
M[i] max= X[i, j]
E[i, j] = exp(X[i, j] - M[i])
S[i] += E[i, j]
O[i, j] = E[i, j] / S[i]
)";

Program parse_ok(const std::string& text) {
  Expected<Program> p = parse_program(text);
  EXPECT_TRUE(p.ok()) << p.status().to_string() << "\nin:\n" << text;
  if (!p.ok()) return Program{};
  return std::move(p).value();
}

// The parse fails with `code` and a message that starts with `where` ("line:col")
// and contains `what`.
void expect_error(const std::string& text, const std::string& where, const std::string& what,
                  StatusCode code = StatusCode::kInvalidArgument, const ProgramLimits& limits = {}) {
  Expected<Program> p = parse_program(text, limits);
  ASSERT_FALSE(p.ok()) << "parsed, but expected an error at " << where << ":\n" << text;
  EXPECT_EQ(p.status().code(), code) << p.status().to_string();
  const std::string& m = p.status().message();
  EXPECT_EQ(m.rfind(where + ": ", 0), 0u) << "message: " << m << "\nexpected position " << where;
  EXPECT_NE(m.find(what), std::string::npos) << "message: " << m << "\nexpected to contain: " << what;
}

const StageDef& stage(const Program& p, const std::string& name) {
  const StageDef* s = p.find_stage(name);
  EXPECT_NE(s, nullptr) << name;
  static const StageDef kNone;
  return s ? *s : kNone;
}

std::vector<std::string> axis_names(const std::vector<IterVar>& vars) {
  std::vector<std::string> out;
  for (const IterVar& v : vars) out.push_back(v.name);
  return out;
}
std::vector<int64_t> axis_extents(const std::vector<IterVar>& vars) {
  std::vector<int64_t> out;
  for (const IterVar& v : vars) out.push_back(v.extent);
  return out;
}

Expr load(DataType t, const std::string& name, std::vector<Expr> idx) { return Load::make(t, name, std::move(idx)); }
Expr var(const std::string& n) { return make_var(n); }
Expr f32(double v) { return FloatImm::make(DataType::f32(), v); }

// parse -> to_text -> parse gives an equal program, and to_text is a fixed point.
void expect_round_trip(const std::string& text) {
  Program p1 = parse_ok(text);
  std::string t1 = p1.to_text();
  Expected<Program> p2 = parse_program(t1);
  ASSERT_TRUE(p2.ok()) << "printed text does not parse back: " << p2.status().to_string() << "\n" << t1;
  EXPECT_TRUE(structural_equal(p1, *p2)) << "original:\n" << text << "printed:\n" << t1;
  EXPECT_EQ(p2->to_text(), t1);
}

// ---------------------------------------------------------------------------
// Lexer

TEST(Lexer, TokensCarryLineAndColumn) {
  std::vector<Token> t = tokenize("C[i] += A[i] # note\n  M[i] max= 1.5e-3 .. 0..58");
  ASSERT_GE(t.size(), 20u);
  EXPECT_EQ(t[0].kind, TokenKind::kIdent);
  EXPECT_EQ(t[0].text, "C");
  EXPECT_EQ(t[4].kind, TokenKind::kPlusAssign);
  EXPECT_EQ(t[4].column, 6);
  EXPECT_EQ(t[9].kind, TokenKind::kNewline);
  EXPECT_EQ(t[10].text, "M");
  EXPECT_EQ(t[10].line, 2);
  EXPECT_EQ(t[10].column, 3);
  EXPECT_EQ(t[14].kind, TokenKind::kMaxAssign);
  EXPECT_EQ(t[15].kind, TokenKind::kFloat);
  EXPECT_DOUBLE_EQ(t[15].float_value, 1.5e-3);
  EXPECT_EQ(t[16].kind, TokenKind::kDotDot);
  EXPECT_EQ(t[17].kind, TokenKind::kInt);
  EXPECT_EQ(t[17].int_value, 0u);
  EXPECT_EQ(t[18].kind, TokenKind::kDotDot);
  EXPECT_EQ(t[19].int_value, 58u);
  EXPECT_EQ(t.back().kind, TokenKind::kEnd);
}

TEST(Lexer, OperatorsAndErrors) {
  std::vector<Token> t = tokenize("== != <= >= < > && || ! = + - * / % ( ) [ ] , :");
  std::vector<TokenKind> want = {TokenKind::kEq,     TokenKind::kNe,       TokenKind::kLe,       TokenKind::kGe,
                                 TokenKind::kLt,     TokenKind::kGt,       TokenKind::kAndAnd,   TokenKind::kOrOr,
                                 TokenKind::kBang,   TokenKind::kAssign,   TokenKind::kPlus,     TokenKind::kMinus,
                                 TokenKind::kStar,   TokenKind::kSlash,    TokenKind::kPercent,  TokenKind::kLParen,
                                 TokenKind::kRParen, TokenKind::kLBracket, TokenKind::kRBracket, TokenKind::kComma,
                                 TokenKind::kColon,  TokenKind::kEnd};
  ASSERT_EQ(t.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(t[i].kind, want[i]) << i;

  std::vector<Token> bad = tokenize("a $ b");
  EXPECT_EQ(bad.back().kind, TokenKind::kError);
  EXPECT_EQ(bad.back().column, 3);
  EXPECT_EQ(tokenize("99999999999999999999").back().kind, TokenKind::kError);
  EXPECT_EQ(tokenize("1e999").back().kind, TokenKind::kError);
  EXPECT_EQ(tokenize("1.").back().kind, TokenKind::kError);
  EXPECT_EQ(tokenize("2e").back().kind, TokenKind::kError);
  EXPECT_EQ(tokenize("3abc").back().kind, TokenKind::kError);
  EXPECT_EQ(tokenize(std::string("a\0b", 3)).back().kind, TokenKind::kError);
  EXPECT_EQ(tokenize("9223372036854775807").front().int_value, 9223372036854775807ull);
  EXPECT_TRUE(is_reserved_word("where"));
  EXPECT_TRUE(is_reserved_word("i8"));
  EXPECT_FALSE(is_reserved_word("i16"));
}

// ---------------------------------------------------------------------------
// Accepted programs

TEST(Parser, Gemm) {
  Program p = parse_ok(kGemm);
  ASSERT_EQ(p.inputs.size(), 2u);
  EXPECT_EQ(p.inputs[0].name, "A");
  EXPECT_EQ(p.inputs[0].dtype, DataType::f32());
  EXPECT_EQ(p.inputs[0].shape, (std::vector<int64_t>{1024, 1024}));
  EXPECT_EQ(p.inputs[0].loc.line, 2);
  EXPECT_EQ(p.inputs[0].loc.column, 7);
  ASSERT_EQ(p.stages.size(), 1u);
  const StageDef& c = p.stages[0];
  EXPECT_EQ(c.name, "C");
  EXPECT_EQ(c.loc.line, 4);
  EXPECT_EQ(c.loc.column, 1);
  EXPECT_EQ(c.dtype, DataType::f32());
  EXPECT_EQ(c.reduce, ReduceKind::kSum);
  EXPECT_EQ(axis_names(c.axes), (std::vector<std::string>{"i", "j"}));
  EXPECT_EQ(axis_extents(c.axes), (std::vector<int64_t>{1024, 1024}));
  EXPECT_EQ(axis_names(c.reduce_axes), (std::vector<std::string>{"k"}));
  EXPECT_EQ(c.reduce_axes[0].min, 0);
  EXPECT_EQ(c.reduce_axes[0].extent, 1024);
  EXPECT_FALSE(c.reduce_axes[0].declared);
  Expr want =
      Mul::make(load(DataType::f32(), "A", {var("i"), var("k")}), load(DataType::f32(), "B", {var("k"), var("j")}));
  EXPECT_TRUE(structural_equal(c.body, want)) << c.body;
  EXPECT_EQ(p.outputs, (std::vector<std::string>{"C"}));
  EXPECT_EQ(p.to_text(), "input A: f32[1024, 1024]\ninput B: f32[1024, 1024]\nC[i, j] += A[i, k] * B[k, j]\n");
}

TEST(Parser, Conv2dWithPadding) {
  Program p = parse_ok(kConv2d);
  ASSERT_EQ(p.stages.size(), 3u);
  const StageDef& pad = stage(p, "P");
  EXPECT_EQ(pad.reduce, ReduceKind::kNone);
  EXPECT_EQ(pad.shape(), (std::vector<int64_t>{1, 64, 58, 58}));
  EXPECT_FALSE(pad.axes[0].declared);
  EXPECT_TRUE(pad.axes[2].declared);
  EXPECT_TRUE(pad.axes[3].declared);
  EXPECT_TRUE(pad.reduce_axes.empty());
  ASSERT_NE(pad.body.as<Select>(), nullptr);
  EXPECT_EQ(pad.body.as<Select>()->false_value.type(), DataType::f32());

  const StageDef& y = stage(p, "Y");
  EXPECT_EQ(y.reduce, ReduceKind::kSum);
  EXPECT_EQ(axis_names(y.axes), (std::vector<std::string>{"n", "f", "y", "x"}));
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 64, 56, 56}));
  EXPECT_EQ(axis_names(y.reduce_axes), (std::vector<std::string>{"c", "r", "s"}));
  EXPECT_EQ(axis_extents(y.reduce_axes), (std::vector<int64_t>{64, 3, 3}));

  const StageDef& r = stage(p, "R");
  EXPECT_EQ(r.shape(), (std::vector<int64_t>{1, 64, 56, 56}));
  EXPECT_TRUE(structural_equal(
      r.body, Max::make(load(DataType::f32(), "Y", {var("n"), var("f"), var("y"), var("x")}), f32(0.0))));
  EXPECT_EQ(p.outputs, (std::vector<std::string>{"R"}));
  EXPECT_EQ(p.reads_of(y), (std::vector<std::string>{"P", "W"}));
  EXPECT_EQ(p.to_text(),
            "input X: f32[1, 64, 56, 56]\n"
            "input W: f32[64, 64, 3, 3]\n"
            "P[n, c, h, w] = select(h >= 1 && h <= 56 && w >= 1 && w <= 56, X[n, c, h - 1, w - 1], 0.0) where h in "
            "0..58, w in 0..58\n"
            "Y[n, f, y, x] += P[n, c, y + r, x + s] * W[f, c, r, s] where y in 0..56, x in 0..56\n"
            "R[n, f, y, x] = max(Y[n, f, y, x], 0.0)\n");
}

TEST(Parser, AllDtypesAndCasts) {
  Program p = parse_ok(
      "input A: f32[4]\ninput B: f64[4]\ninput C: i8[4]\ninput D: i32[4]\n"
      "E[i] = f64(A[i]) + B[i]\n"
      "F[i] = i32(C[i]) * D[i]\n"
      "G[i] = i8(D[i])\n"
      "H[i] = f32(i) + A[i]\n");
  EXPECT_EQ(p.inputs[1].dtype, DataType::f64());
  EXPECT_EQ(p.inputs[2].dtype, DataType::i8());
  EXPECT_EQ(p.inputs[3].dtype, DataType::i32());
  EXPECT_EQ(stage(p, "E").dtype, DataType::f64());
  EXPECT_EQ(stage(p, "F").dtype, DataType::i32());
  EXPECT_EQ(stage(p, "G").dtype, DataType::i8());
  EXPECT_EQ(stage(p, "H").dtype, DataType::f32());
  const Add* h = stage(p, "H").body.as<Add>();
  ASSERT_NE(h, nullptr);
  ASSERT_NE(h->a.as<Cast>(), nullptr);
  EXPECT_EQ(h->a.as<Cast>()->value.type(), DataType::i32());
  EXPECT_EQ(p.outputs, (std::vector<std::string>{"E", "F", "G", "H"}));
}

TEST(Parser, Int8GemmAccumulatesInInt32) {
  Program p = parse_ok("input A: i8[64, 32]\ninput B: i8[32, 16]\nC[i, j] += i32(A[i, k]) * i32(B[k, j])\n");
  const StageDef& c = stage(p, "C");
  EXPECT_EQ(c.dtype, DataType::i32());
  EXPECT_EQ(c.shape(), (std::vector<int64_t>{64, 16}));
  EXPECT_EQ(axis_extents(c.reduce_axes), (std::vector<int64_t>{32}));
}

TEST(Parser, EveryOperatorAndFunction) {
  Program p = parse_ok(
      "input A: f32[8]\ninput B: i32[8]\n"
      "F[i] = abs(A[i]) + exp(A[i]) - log(A[i]) * sqrt(A[i]) / tanh(A[i]) + min(A[i], 1.0) + max(A[i], 2) - -A[i]\n"
      "G[i] = B[i] % 3 + B[i] / 2 * -B[i] + abs(B[i]) + min(B[i], 0) + max(0, B[i])\n"
      "H[i] = select(A[i] == 1.0 || A[i] != 2.0 && !(A[i] < 0.5) && A[i] <= 3.0 && A[i] > 0.0 && A[i] >= 0.0, "
      "1.0, 2.0)\n"
      "K[i] = select((B[i] > 0) == (i < 4), B[i], 0)\n");
  const StageDef& f = stage(p, "F");
  EXPECT_EQ(f.dtype, DataType::f32());
  const Sub* neg = f.body.as<Sub>();
  ASSERT_NE(neg, nullptr);
  // -A[i] is 0.0 - A[i].
  const Sub* inner = neg->b.as<Sub>();
  ASSERT_NE(inner, nullptr);
  EXPECT_TRUE(structural_equal(inner->a, f32(0.0)));
  EXPECT_EQ(stage(p, "G").dtype, DataType::i32());
  EXPECT_EQ(stage(p, "H").dtype, DataType::f32());
  EXPECT_EQ(stage(p, "K").dtype, DataType::i32());
  EXPECT_EQ(to_string(stage(p, "G").body),
            "B[i] % 3 + B[i] / 2 * (0 - B[i]) + abs(B[i]) + min(B[i], 0) + max(0, B[i])");
}

TEST(Parser, LiteralsAdoptTheOtherOperandsType) {
  Program p = parse_ok(
      "input A: f32[4]\ninput B: f64[4]\ninput C: i8[4]\n"
      "D[i] = A[i] + 1\n"
      "E[i] = 2 * B[i] + 0.1\n"
      "F[i] = C[i] * -128 + 127\n"
      "G[i] = -3 + i where i in 0..4\n"
      "H[i] = select(i < 2, 1, 2.5) where i in 0..4\n"
      "K[i] = exp(1) + A[i]\n");
  const Add* d = stage(p, "D").body.as<Add>();
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(structural_equal(d->b, f32(1.0)));
  const Add* e = stage(p, "E").body.as<Add>();
  ASSERT_NE(e, nullptr);
  ASSERT_NE(e->b.as<FloatImm>(), nullptr);
  EXPECT_EQ(e->b.type(), DataType::f64());
  EXPECT_EQ(e->b.as<FloatImm>()->value, 0.1);  // not rounded through f32
  EXPECT_EQ(stage(p, "F").dtype, DataType::i8());
  const Add* g = stage(p, "G").body.as<Add>();
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(is_const(g->a, -3));  // unary minus folds into the literal
  EXPECT_EQ(stage(p, "H").dtype, DataType::f32());
}

TEST(Parser, ConstantExpressionsAdoptTypesLikeLiterals) {
  Program p = parse_ok(
      "input A: f64[4]\ninput C: i8[4]\n"
      "B[i] = A[i] * (1.0 / 256.0)\n"
      "D[i] = C[i] + (100 - 28) * 2\n"
      "E[i] = select(A[i] > 0.0, 1, -2.5) + A[i] + -(1.5 * 2) + abs(-0.5) * max(1.0, 2)\n"
      "F[i] = 1.0 + 2 where i in 0..4\n"
      "G[i] = f64(exp(1.0 / 3.0)) + f64(i32(C[i]) * (7 / 2))\n");
  const Mul* b = stage(p, "B").body.as<Mul>();
  ASSERT_NE(b, nullptr);
  ASSERT_NE(b->b.as<Div>(), nullptr);
  EXPECT_EQ(b->b.type(), DataType::f64());
  EXPECT_EQ(to_string(stage(p, "B").body), "A[i] * (1.0 / 256.0)");
  EXPECT_EQ(stage(p, "D").dtype, DataType::i8());
  EXPECT_EQ(stage(p, "E").dtype, DataType::f64());
  EXPECT_EQ(to_string(stage(p, "E").body),
            "select(A[i] > 0.0, 1.0, -2.5) + A[i] + (0.0 - 1.5 * 2.0) + abs(-0.5) * max(1.0, 2.0)");
  EXPECT_EQ(stage(p, "F").dtype, DataType::f32());
  // (7 / 2) adopts i32 from its neighbour; an integer constant expression never
  // becomes a float (A[i] * (2 + 3) is a type error, see ParserErrors.Types).
  EXPECT_EQ(to_string(stage(p, "G").body), "f64(exp(1.0 / 3.0)) + f64(i32(C[i]) * (7 / 2))");
  EXPECT_EQ(stage(p, "G").dtype, DataType::f64());
}

TEST(Parser, WhereRangesAndNegativeReductionStart) {
  Program p = parse_ok(
      "input A: f32[8]\n"
      "B[i] += A[i + r + 1] where i in 0..6, r in -1..2\n");
  const StageDef& b = stage(p, "B");
  ASSERT_EQ(b.axes.size(), 1u);
  EXPECT_EQ(b.axes[0].extent, 6);
  EXPECT_TRUE(b.axes[0].declared);
  ASSERT_EQ(b.reduce_axes.size(), 1u);
  EXPECT_EQ(b.reduce_axes[0].name, "r");
  EXPECT_EQ(b.reduce_axes[0].min, -1);
  EXPECT_EQ(b.reduce_axes[0].extent, 3);
  EXPECT_TRUE(b.reduce_axes[0].declared);
  EXPECT_EQ(p.to_text(), "input A: f32[8]\nB[i] += A[i + r + 1] where i in 0..6, r in -1..2\n");
  // A where range that agrees with a lone use is fine, and a spatial variable
  // that only occurs on the left side takes its range from where (broadcast).
  Program q = parse_ok("input A: f32[8]\nB[i, j] = A[i] where i in 0..8, j in 0..3\n");
  EXPECT_EQ(stage(q, "B").shape(), (std::vector<int64_t>{8, 3}));
}

TEST(Parser, MaxAndMinReductions) {
  Program p = parse_ok(kSoftmax);
  const StageDef& m = stage(p, "M");
  EXPECT_EQ(m.reduce, ReduceKind::kMax);
  EXPECT_EQ(m.shape(), (std::vector<int64_t>{8}));
  EXPECT_EQ(axis_names(m.reduce_axes), (std::vector<std::string>{"j"}));
  EXPECT_EQ(stage(p, "E").reduce, ReduceKind::kNone);
  EXPECT_EQ(stage(p, "S").reduce, ReduceKind::kSum);
  EXPECT_EQ(p.outputs, (std::vector<std::string>{"O"}));
  Program q = parse_ok("input X: i32[4, 5]\nN[i] min= X[i, j]\n");
  EXPECT_EQ(stage(q, "N").reduce, ReduceKind::kMin);
  EXPECT_EQ(stage(q, "N").dtype, DataType::i32());
}

TEST(Parser, DivModIndicesAndStridedAccess) {
  Program p = parse_ok(
      "input A: f32[4, 2]\ninput X: f32[56, 56]\ninput W: f32[3, 3]\n"
      "B[i] = A[i / 2, i % 2] where i in 0..8\n"
      "C[h] = A[(h + 1) / 2, (h * 3 + 1) % 2] where h in 0..7\n"
      "Y[y, x] += X[y * 2 + r, 2 * x + s] * W[r, s] where y in 0..27, x in 0..27\n");
  EXPECT_EQ(stage(p, "B").shape(), (std::vector<int64_t>{8}));
  EXPECT_EQ(stage(p, "Y").shape(), (std::vector<int64_t>{27, 27}));
  EXPECT_EQ(axis_names(stage(p, "Y").reduce_axes), (std::vector<std::string>{"r", "s"}));
  EXPECT_EQ(p.outputs, (std::vector<std::string>{"B", "C", "Y"}));
}

TEST(Parser, BlankLinesCommentsAndWhitespace) {
  Program p = parse_ok("\n\n  # heading\r\ninput A: f32[ 4 ]   # trailing\r\n\n\tB[ i ]=A[i]*2.0\n\n");
  EXPECT_EQ(p.stages.size(), 1u);
  EXPECT_EQ(p.stages[0].loc.line, 6);
  EXPECT_EQ(p.stages[0].loc.column, 2);
  // No trailing newline.
  EXPECT_EQ(parse_ok("input A: f32[4]\nB[i] = A[i]").stages.size(), 1u);
}

TEST(Parser, SelectNarrowsBoundsInBothBranches) {
  // The false branch knows i < 2 is false, so i - 2 >= 0.
  parse_ok("input A: f32[4]\nB[i] = select(i < 2, A[i + 2], A[i - 2]) where i in 0..6\n");
  expect_error("input A: f32[4]\nB[i] = select(i < 2, A[i - 2], 0.0) where i in 0..6\n", "2:22",
               "index 0 (i - 2) ranges over -2..-1 but A has extent 4");
}

// ---------------------------------------------------------------------------
// Round trips

TEST(Printer, RoundTrips) {
  const std::vector<std::string> programs = {
      kGemm,
      kConv2d,
      kSoftmax,
      // depthwise conv
      "input X: f32[1, 32, 30, 30]\ninput W: f32[32, 3, 3]\n"
      "Y[n, c, y, x] += X[n, c, y + r, x + s] * W[c, r, s] where y in 0..28, x in 0..28\n",
      // elementwise chain
      "input A: f32[16, 16]\ninput B: f32[16, 16]\n"
      "C[i, j] = A[i, j] + B[i, j]\nD[i, j] = C[i, j] * 2.0 - 1.0\n"
      "E[i, j] = tanh(D[i, j]) / (1.0 + abs(D[i, j]))\nF[i, j] = sqrt(max(E[i, j], 0.0)) + log(1.5 + E[i, j])\n",
      // strided conv
      "input X: f32[57, 57]\ninput W: f32[3, 3]\nY[y, x] += X[y * 2 + r, x * 2 + s] * W[r, s] where y in 0..28, x in "
      "0..28\n",
      // / and % indices
      "input A: i32[4, 8]\nB[i] = A[i / 8, i % 8] * 3 - 7 where i in 0..32\n"
      "C[i] = A[(i + 1) / 2 % 4, 7 - i % 8] where i in 0..32\n",
      // int8 gemm with f64 epilogue
      "input A: i8[16, 8]\ninput B: i8[8, 4]\nC[i, j] += i32(A[i, k]) * i32(B[k, j])\n"
      "D[i, j] = f64(C[i, j]) * 0.1\n",
      // negative reduction start, min= and max=
      "input A: f64[10]\nB[i] max= A[i + r + 1] where i in 0..8, r in -1..2\nC[i] min= A[i + r] where i in 0..8, r "
      "in 0..3\n",
      // selects, logic, unary, negative literals
      "input A: f32[8]\ninput B: i32[8]\n"
      "C[i] = select(!(A[i] < 0.0) || B[i] == -1 && i != 3, -A[i], -2.5e-07)\n"
      "D[i] = select(B[i] >= 0, B[i] - -3, i32(C[i]) * -1)\n",
      // broadcast axis from where, reduction over a compound-only variable
      "input A: f32[8]\nB[i, j] = A[i] * f32(j) where j in 0..5\nC[i] += B[i, j] + f32(r) where r in 0..4\n",
      // ordering of where entries is canonical after one round
      "input A: f32[8, 8]\nB[i, j] += A[i + r, j] where r in 0..2, i in 0..7\n",
      // f64 literals that need 17 digits
      "input A: f64[2]\nB[i] = A[i] * 0.1 + 3.141592653589793 + 100000000000\n",
      // untyped constant expressions
      "input A: f64[4]\ninput C: i8[4]\nB[i] = A[i] * (1.0 / 256.0) - -(0.5 * 3) + abs(-2.0) * max(1, 2.5)\n"
      "D[i] = C[i] + (100 - 28) * 2 + select(C[i] > 0, 1, -1)\nE[i] = 1.0 / 3.0 where i in 0..4\n",
      // i8 and i32 arithmetic with literals at the edge
      "input A: i8[4]\nB[i] = A[i] * -128 + 127 - A[i] % 7\n",
      "input A: i32[4]\nB[i] = A[i] + -2147483648 - 2147483647 * A[i]\n",
  };
  for (const std::string& text : programs) {
    SCOPED_TRACE(text);
    expect_round_trip(text);
  }
}

TEST(Printer, WhereOrderAfterOneRound) {
  Program p = parse_ok("input A: f32[8, 8]\nB[i, j] += A[i + r, j] where r in 0..2, i in 0..7\n");
  EXPECT_EQ(p.to_text(), "input A: f32[8, 8]\nB[i, j] += A[i + r, j] where i in 0..7, r in 0..2\n");
}

TEST(Printer, ProgramBuiltInCodePrintsTheRangesItNeeds) {
  // Nothing is marked declared, but B's i is only used in i + 1, so it needs a where.
  Program p;
  p.inputs.push_back({"A", DataType::f32(), {8}, {}});
  StageDef b;
  b.name = "B";
  b.dtype = DataType::f32();
  b.axes = {{"i", 0, 7, false}};
  b.body = load(DataType::f32(), "A", {Add::make(var("i"), make_int(1))});
  p.stages.push_back(b);
  StageDef c;
  c.name = "C";
  c.dtype = DataType::f32();
  c.axes = {{"i", 0, 7, false}};
  c.body = load(DataType::f32(), "B", {var("i")});
  p.stages.push_back(c);
  p.outputs = {"C"};
  EXPECT_EQ(p.to_text(), "input A: f32[8]\nB[i] = A[i + 1] where i in 0..7\nC[i] = B[i]\n");
  Program back = parse_ok(p.to_text());
  EXPECT_TRUE(structural_equal(p, back));
}

TEST(Printer, StructuralEqualityIgnoresLocationsAndDeclared) {
  Program a = parse_ok("input A: f32[8]\nB[i] = A[i] where i in 0..8\n");
  Program b = parse_ok("\n\ninput   A: f32[8]\n  B[i] = A[i]\n");
  EXPECT_TRUE(structural_equal(a, b));
  Program c = parse_ok("input A: f32[8]\nB[i] = A[i] + 1.0\n");
  EXPECT_FALSE(structural_equal(a, c));
  Program d = parse_ok("input A: f32[9]\nB[i] = A[i]\n");
  EXPECT_FALSE(structural_equal(a, d));
  Program e = parse_ok("input A: f32[8]\nB[i] += A[i]\n");
  EXPECT_FALSE(structural_equal(a, e));
}

// ---------------------------------------------------------------------------
// Malformed programs

TEST(ParserErrors, NamesAndDeclarations) {
  expect_error("input A: f32[4]\nB[i] = Q[i]\n", "2:8", "unknown tensor 'Q'");
  expect_error("input A: f16[4]\n", "1:10", "unknown element type 'f16'");
  expect_error("input A: f32[4]\ninput A: f32[4]\n", "2:7", "'A' is already defined at 1:7");
  expect_error("input A: f32[4]\nA[i] = 1.0 where i in 0..4\n", "2:1", "already defined");
  expect_error("input where: f32[4]\n", "1:7", "reserved word");
  expect_error("input A: f32[4]\nB[in] = A[in]\n", "2:3", "'in' is a reserved word");
  expect_error("input A: f32[4]\nexp[i] = A[i]\n", "2:1", "reserved word");
  expect_error("input A: f32[4]\ninput[i] = A[i]\n", "2:1", "'input' is a reserved word");
  expect_error("input A: f32[]\nB[i] = 1.0\n", "1:14", "at least one dimension");
  expect_error("input A: f32[0]\n", "1:14", "positive");
  expect_error("input A: f32[-3]\n", "1:14", "positive");
  expect_error("input A: f32[4]\nB[] = 1.0\n", "2:3", "at least one index variable");
  expect_error("input A: f32[4]\nB[i, i] = A[i]\n", "2:6", "appears twice");
  expect_error("input A: f32[4]\nB[i + 1] = A[i]\n", "2:5", "plain variables");
  expect_error("input A: f32[4]\nB[i] = A\n", "2:8", "must be indexed");
  expect_error("input A: f32[4]\nB[A] = 1.0\n", "2:3", "names a tensor");
  expect_error("input A: f32[4]\nB[i] == A[i]\n", "2:6", "expected '=', '+=', 'max=' or 'min='");
}

TEST(ParserErrors, StructureAndTokens) {
  expect_error("", "1:1", "no stages");
  expect_error("# only a comment\ninput A: f32[4]\n", "3:1", "no stages");
  expect_error("input A: f32[4]\nB[i] = A[i] $\n", "2:13", "unexpected character '$'");
  expect_error("input A: f32[4]\nB[i] = A[i] & A[i]\n", "2:13", "did you mean '&&'");
  expect_error("input A: f32[4]\nB[i] = (A[i] + 1.0\n", "2:19", "')' to close the '(' at 2:8");
  expect_error("input A: f32[4]\nB[i] = A[i] A[i]\n", "2:13", "after the stage's expression");
  expect_error("input A: f32[4] x\n", "1:17", "after the end of the statement");
  expect_error("input A: f32[4]\nB[i] = A[i] +\n", "2:14", "expected an expression, found end of line");
  expect_error("input A: f32[4]\nB[i] = A[i\n", "2:11", "',' or ']'");
  expect_error("input A: f32[4]\n+ B[i] = A[i]\n", "2:1", "expected a statement");
  expect_error("input A: f32[4]\nB[i] = A[i] < 1.0 < 2.0\n", "2:19", "cannot be chained");
  expect_error(std::string("input A: f32[4]\nB[i] = A[i]\0\n", 29), "2:12", "'\\x00'");
  expect_error("input A: f32[4]\nB[i] = A[i] * \xc3\xa9\n", "2:15", "'\\xc3'");
  expect_error("input A: f32[4]\nB[i] = A[i] + 99999999999999999999\n", "2:15", "too large");
  expect_error("input A: f32[4]\nB[i] = i + 3000000000 where i in 0..4\n", "2:12", "does not fit in i32");
  expect_error("input A: f32[4]\nB[i] = A[i] + 1e999\n", "2:15", "out of range");
  expect_error("input A: f32[4]\nB[i] = select(i < 2, A[i])\n", "2:8", "select takes 3 arguments, found 2");
  expect_error("input A: f32[4]\nB[i] = exp A[i]\n", "2:12", "'(' after 'exp'");
  expect_error("input A: f32[4]\nB[i] = foo(A[i])\n", "2:8", "unknown function 'foo'");
  expect_error("input A: f32[4]\nB[i] = A(i)\n", "2:8", "unknown function 'A'");
  expect_error("input A: f32[4]\nB[i] = A[i] where\n", "2:18", "a variable name in the where clause");
  expect_error("input A: f32[4]\nB[i] = A[i] + where\n", "2:15", "expected an expression, found 'where'");
}

TEST(ParserErrors, Types) {
  expect_error("input A: f32[4]\ninput B: i32[4]\nC[i] = A[i] + B[i]\n", "3:13",
               "type mismatch in '+': f32 and i32 (use a cast such as f32(...))");
  expect_error("input A: f32[4]\ninput B: f64[4]\nC[i] = A[i] * B[i]\n", "3:13",
               "type mismatch in '*': f32 and f64 (use a cast such as f64(...))");
  expect_error("input A: i8[4]\ninput B: i32[4]\nC[i] = max(A[i], B[i])\n", "3:8", "type mismatch in 'max'");
  expect_error("input A: i32[4]\nB[i] = A[i] + 1.5\n", "2:15", "float literal 1.5 cannot be used as i32");
  expect_error("input A: i8[4]\nB[i] = A[i] + 300\n", "2:15", "300 does not fit in i8");
  expect_error("input A: f32[4]\nB[i] = A[i] % 2.0\n", "2:13", "'%' needs integer operands, found f32");
  expect_error("input A: i32[4]\nB[i] = exp(A[i])\n", "2:8", "exp needs a float argument, found i32");
  expect_error("input A: f32[4]\nB[i] = select(A[i], 1.0, 0.0)\n", "2:15", "condition of select must be a bool");
  expect_error("input A: f32[4]\ninput B: i32[4]\nC[i] = select(i < 2, A[i], B[i])\n", "3:8",
               "type mismatch in 'select'");
  expect_error("input A: f32[4]\nB[i] = A[i] > 0.0 && A[i]\n", "2:22", "'&&' needs conditions (bool)");
  expect_error("input A: f32[4]\nB[i] = !A[i]\n", "2:8", "'!' needs a condition");
  expect_error("input A: f32[4]\nB[i] = A[i] > 0.0\n", "2:8", "is a condition (bool)");
  expect_error("input A: f32[4]\nB[i] = f32(A[i] > 0.0)\n", "2:8", "cannot cast a condition");
  expect_error("input A: i32[4]\nB[i] = A[i] / 0\n", "2:13", "division by zero");
  expect_error("input A: i32[4]\nB[i] = A[i] % (1 - 1)\n", "2:13", "modulo by zero");
  expect_error("input A: i32[4]\nB[i] = A[i] + (1 / 0)\n", "2:18", "division by zero");
  expect_error("input A: f32[4]\nB[i] = A[i] * (2 + 3)\n", "2:13",
               "type mismatch in '*': f32 and i32 (use a cast such as f32(...))");
  expect_error("input A: f32[4]\nB[i] = A[i] * ((2 + 3) * 1.5)\n", "2:24", "type mismatch in '*': i32 and f32");
  expect_error("input A: i32[4]\nB[i] = A[i] + (1 + 2.5)\n", "2:13", "type mismatch in '+': i32 and f32");
  expect_error("input A: i32[4]\nB[i] = A[i] + (1.0 % 2)\n", "2:20", "'%' needs integer operands");
  expect_error("input A: i8[4]\nB[i] = A[i] + (100 + 200)\n", "2:22", "200 does not fit in i8");
  expect_error("input A: f32[4]\nB[i] = select(A[i] > 0.0, 1 + 1, 2) && A[i] > 0.0\n", "2:8",
               "'&&' needs conditions (bool) on both sides, found a constant i32 expression");
}

TEST(ParserErrors, Indices) {
  expect_error("input A: f32[4, 4]\nB[i] = A[i]\n", "2:8", "A has 2 dimensions but is accessed with 1 index");
  expect_error("input A: f32[4]\nB[i] = A[i, i]\n", "2:13", "accessed with more indices");
  expect_error("input A: f32[4, 4]\nB[i, j] = A[i * j, 0] where i in 0..2, j in 0..2\n", "2:15", "not affine");
  expect_error("input A: f32[4]\nB[i] = A[i * 1.5]\n", "2:14", "float literal 1.5 cannot be used as i32");
  expect_error("input A: f32[4]\nB[i] = A[1.5]\n", "2:10", "a float is not allowed in an index");
  expect_error("input A: f32[4]\nB[i] = A[f32(i)]\n", "2:10", "casts are not allowed in an index");
  expect_error("input A: f32[4]\ninput I: i32[4]\nB[i] = A[I[i]]\n", "3:10", "tensor reads are not allowed");
  expect_error("input A: f32[4]\nB[i] = A[i / 0] where i in 0..4\n", "2:12", "division by zero");
  expect_error("input A: f32[4]\nB[i] = A[i % j] where i in 0..4, j in 1..3\n", "2:12", "divides by a variable");
  expect_error("input A: f32[4]\nB[i] = A[i / -2] where i in 0..4\n", "2:12", "not a positive constant");
  expect_error("input A: f32[4]\nB[i] = A[min(i, 3)] where i in 0..4\n", "2:10", "not allowed in an index");
  expect_error("input A: f32[4]\nB[i] = A[i < 2]\n", "2:12", "must be an i32 expression, found bool");
}

TEST(ParserErrors, RangesAndBounds) {
  expect_error("input A: f32[8]\nB[i] = A[i + 1]\n", "2:3", "cannot infer the range of variable 'i'");
  expect_error("input A: f32[8, 8]\nB[i] += A[i, i + r]\n", "2:18", "add 'where r in lo..hi'");
  expect_error("input A: f32[8]\ninput B: f32[4]\nC[i] = A[i] + B[i]\n", "3:17", "conflicting ranges for 'i'");
  expect_error("input A: f32[8]\nB[i] = A[i] where i in 0..4\n", "2:19", "disagrees with its use as index 0 of A");
  expect_error("input A: f32[8]\nB[i] = A[i + 1] where i in 1..7\n", "2:28", "must start at 0");
  expect_error("input A: f32[8]\nB[i] = A[i] where q in 0..4\n", "2:19", "'q' in the where clause does not occur");
  expect_error("input A: f32[8]\nB[i] = A[i + 1] where i in 0..4, i in 0..4\n", "2:34", "duplicate where range");
  expect_error("input A: f32[8]\nB[i] = A[i + 1] where i in 4..4\n", "2:28", "empty range");
  expect_error("input A: f32[8]\nB[i] += A[i] + f32(r) where r in -2147483648..2147483647\n", "2:34", "is too long");
  expect_error("input A: f32[8]\nB[i] += A[i] + f32(r) where r in 0..2147483648\n", "2:37", "does not fit in i32");
  expect_error("input A: f32[8, 8]\nB[i] = A[i, k]\n", "2:13",
               "reduction variable, which '=' does not allow (use '+='");
  expect_error("input A: f32[8]\nB[i] = A[i + 1] where i in 0..8\n", "2:8",
               "access A[i + 1] may be out of bounds: index 0 (i + 1) ranges over 1..8 but A has extent 8");
  expect_error(
      "input X: f32[1, 64, 56, 56]\nP[n, c, h, w] = select(h >= 0 && h <= 56 && w >= 1 && w <= 56, X[n, c, h - 1, w - "
      "1], 0.0) where h in 0..58, w in 0..58\n",
      "2:64", "index 2 (h - 1) ranges over -1..55 but X has extent 56 in that dimension");
  expect_error("input A: f32[8]\nB[i] += A[i + r] where i in 0..8, r in -1..1\n", "2:9", "ranges over -1..7");
  expect_error("input A: f32[8]\nB[i] = A[i] + B[i]\n", "2:15", "stage B cannot read itself");
  expect_error("input A: f32[8]\nB[i] = C[i]\nC[i] = A[i]\n", "2:8", "unknown tensor 'C'");
}

TEST(ParserErrors, Caps) {
  expect_error("input A: f32[1000000000, 1000000000]\nB[i, j] = A[i, j]\n", "1:7", "max_tensor_bytes",
               StatusCode::kResourceExhausted);
  expect_error("input A: f32[1000000000, 1000000000, 1000000000, 1000000000]\n", "1:7",
               "needs more than 9223372036854775807 bytes", StatusCode::kResourceExhausted);
  expect_error("input A: f32[9223372036854775807]\n", "1:7", "max_tensor_bytes", StatusCode::kResourceExhausted);
  ProgramLimits small;
  small.max_tensor_bytes = 1024;
  small.max_total_bytes = 2048;
  small.max_stage_iterations = 10000;
  small.max_rank = 3;
  small.max_stages = 2;
  small.max_text_bytes = 200;
  expect_error("input A: f32[257]\n", "1:7", "input A (f32[257]) needs 1028 bytes, over the limit of 1024",
               StatusCode::kResourceExhausted, small);
  expect_error("input A: f32[256]\ninput B: f32[256]\ninput C: f32[1]\n", "3:7", "max_total_bytes",
               StatusCode::kResourceExhausted, small);
  expect_error("input A: f32[1, 1, 1, 1]\n", "1:7", "rank 4, over the limit of 3 (max_rank)",
               StatusCode::kResourceExhausted, small);
  expect_error("input A: f32[100]\nB[i] += A[j] where i in 0..101\n", "2:1", "10100 iterations",
               StatusCode::kResourceExhausted, small);
  expect_error("input A: f32[4]\nB[i] = A[i]\nC[i] = B[i]\nD[i] = C[i]\n", "4:1", "max_stages",
               StatusCode::kResourceExhausted, small);
  expect_error(std::string(201, '#'), "1:1", "max_text_bytes", StatusCode::kResourceExhausted, small);
  expect_error("input A: f32[4]\nB[i, j, k, l] = A[i] where j in 0..1, k in 0..1, l in 0..1\n", "2:1",
               "stage B has rank 4, over the limit of 3 (max_rank)", StatusCode::kResourceExhausted, small);
  std::string many_vars = "input A: f32[1]\nB[i] += A[i]";
  for (int k = 0; k < 70; ++k) many_vars += " + A[v" + std::to_string(k) + "]";
  // v64 is the 65th: after "B[i] += A[i]" (12), ten " + A[vK]" (8) and 54 " + A[vKK]" (9), then " + A[".
  expect_error(many_vars, "2:" + std::to_string(12 + 10 * 8 + 54 * 9 + 5 + 1), "more than 64 reduction variables",
               StatusCode::kResourceExhausted);
}

// Names are capped, so that every message quoting one stays short.
TEST(ParserErrors, LongNames) {
  const std::string name(kMaxNameBytes, 'a');
  EXPECT_EQ(parse_ok("input " + name + ": f32[4]\nB[i] = " + name + "[i]\n").inputs[0].name, name);
  expect_error("input " + name + "b: f32[4]\n", "1:7", "a name of 257 bytes, over the limit of 256");
  // A token quoted in a message is cut short, with its length.
  const std::string digits(5000, '7');
  Expected<Program> p = parse_program("input A: f32[4]\nB[i] = A[i] * " + digits + ".5x\n");
  ASSERT_FALSE(p.ok());
  EXPECT_LT(p.status().message().size(), 200u) << p.status().message().substr(0, 300);
}

TEST(ParserErrors, DeepNesting) {
  std::string deep = "input A: f32[4]\nB[i] = " + std::string(100000, '(') + "A[i]" + std::string(100000, ')') + "\n";
  // The body is level 1 and each '(' one more: the 257th '(' (column 8 + 256) is too deep.
  expect_error(deep, "2:264", "nested too deeply (more than 256 levels");

  std::string minus = "input A: f32[4]\nB[i] = " + std::string(100000, '-') + "A[i]\n";
  EXPECT_FALSE(parse_program(minus).ok());

  std::string bang = "input A: f32[4]\nB[i] = select(" + std::string(5000, '!') + "(i < 2), A[i], 0.0)\n";
  EXPECT_FALSE(parse_program(bang).ok());

  // A long flat chain nests the tree, not the parser.
  std::string chain = "input A: f32[4]\nB[i] = A[i]";
  for (int k = 0; k < 100000; ++k) chain += " + A[i]";
  Expected<Program> c = parse_program(chain);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("too large"), std::string::npos) << c.status().message();

  // Moderate nesting is fine.
  std::string ok = "input A: f32[4]\nB[i] = " + std::string(100, '(') + "A[i]" + std::string(100, ')') + "\n";
  EXPECT_TRUE(parse_program(ok).ok());
  std::string sum = "input A: f32[4]\nB[i] = A[i]";
  for (int k = 0; k < 300; ++k) sum += " + A[i]";
  expect_round_trip(sum);
}

// ---------------------------------------------------------------------------
// Fuzz: mutated programs never crash, and fail with "line:column: ...".

TEST(ParserFuzz, MutationsFailCleanly) {
  const std::vector<std::string> seeds = {
      kGemm,
      kConv2d,
      kSoftmax,
      "input A: i8[16, 8]\ninput B: i8[8, 4]\nC[i, j] += i32(A[i, k]) * i32(B[k, j])\nD[i, j] = f64(C[i, j]) * 0.1\n",
      "input A: i32[4, 8]\nB[i] = A[i / 8, i % 8] * 3 - 7 where i in 0..32\n",
      "input A: f32[8]\ninput B: i32[8]\nC[i] = select(!(A[i] < 0.0) || B[i] == -1 && i != 3, -A[i], -2.5e-07)\n",
  };
  const std::string alphabet = "abcdijkrsxyzABCPXW_0123456789 \n\t#[](),:+-*/%=<>!&|.e" + std::string("\0\xff\x80", 3);
  std::mt19937 rng(12345);
  const std::regex prefix("^[0-9]+:[0-9]+: ");
  int accepted = 0;
  for (int iter = 0; iter < 6000; ++iter) {
    std::string text = seeds[rng() % seeds.size()];
    int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t at = text.empty() ? 0 : rng() % (text.size() + 1);
      char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0:
          if (at < text.size()) text.erase(at, 1);
          break;
        case 1: text.insert(at, 1, c); break;
        default:
          if (at < text.size()) text[at] = c;
          break;
      }
    }
    Expected<Program> p = parse_program(text);
    if (p.ok()) {
      ++accepted;
      // Whatever parses also prints and parses back to the same program.
      Expected<Program> back = parse_program(p->to_text());
      ASSERT_TRUE(back.ok()) << back.status().to_string() << "\n" << p->to_text();
      EXPECT_TRUE(structural_equal(*p, *back)) << text;
      continue;
    }
    ASSERT_TRUE(p.status().code() == StatusCode::kInvalidArgument ||
                p.status().code() == StatusCode::kResourceExhausted)
        << p.status().to_string();
    ASSERT_TRUE(std::regex_search(p.status().message(), prefix)) << p.status().message() << "\nfor:\n" << text;
  }
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace tensorgym
