// From a program to the accelerator's layer (codegen/fpga/conv2d_program): the
// recognizer on the datasets/fpga/ programs and on every form it rejects, and the
// stream fsim runs on the program's own tensors against the reference evaluator, bit
// for bit.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "codegen/fpga/conv2d_program.h"
#include "codegen/fpga/conv2d_stream.h"
#include "codegen/fpga/fsim.h"
#include "codegen/interp/compare.h"
#include "codegen/interp/evaluator.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/ir/program.h"

namespace tensorgym::fpga {
namespace {

const std::string kSource = TENSORGYM_SOURCE_DIR;

Conv2dLayer layer(int64_t c, int64_t h, int64_t w, int64_t k, int64_t r, int64_t stride, int64_t pad, bool relu,
                  int shift) {
  Conv2dLayer l;
  l.c = c, l.h = h, l.w = w, l.k = k, l.r = l.s = r, l.stride = stride, l.pad = pad, l.relu = relu, l.shift = shift;
  l.name.clear();
  return l;
}

Program parsed(const std::string& text) {
  Expected<Program> p = parse_program(text);
  EXPECT_TRUE(p.ok()) << p.status().to_string() << "\n" << text;
  return p.ok() ? std::move(*p) : Program{};
}

std::vector<int8_t> bytes_of(const HostBuffer& b) {
  const int8_t* data = b.typed<int8_t>();
  return std::vector<int8_t>(data, data + b.num_elements());
}

struct Case {
  Conv2dLayer layer;
  Conv2dTiling tiling;
};

// Odd sizes, strides 1 and 2, 1x1 / 3x3 / 5x5 kernels, padding 0..2, ReLU and int8
// clipping, tiles of every kind with one and two virtual threads, on both designs: the
// program's text for the layer gives the layer back, and fsim's output on the
// program's random inputs is the reference evaluator's Y.
TEST(FpgaConv2dProgram, AcceleratorOutputIsTheEvaluatorsBitForBit) {
  for (const char* file : {"small-1x8x8.json", "zynq7020-1x16x16.json"}) {
    Expected<AccelConfig> config = load_accel_config(kSource + "/codegen/fpga/configs/" + file);
    ASSERT_TRUE(config.ok()) << config.status().to_string();
    const AccelConfig& c = *config;
    const int64_t bi = c.block_in, bo = c.block_out;
    const std::vector<Case> cases = {
        {layer(2 * bi, 9, 7, 2 * bo, 3, 1, 1, true, 1), {3, 7, 1, 1, 2}},
        {layer(2 * bi, 9, 7, 2 * bo, 3, 1, 1, false, 1), {9, 1, 2, 2, 1}},
        {layer(3 * bi, 11, 11, bo, 3, 2, 1, false, 2), {2, 3, 1, 3, 2}},
        {layer(bi, 10, 6, 3 * bo, 1, 2, 0, true, 0), {5, 3, 3, 1, 2}},
        {layer(bi, 8, 8, bo, 5, 1, 2, false, 1), {4, 4, 1, 1, 2}},
        {layer(2 * bi, 6, 6, 2 * bo, 3, 1, 0, true, 2), {2, 2, 1, 2, 1}},
        {layer(2 * bi, 1, 5, bo, 1, 1, 0, false, 0), {1, 5, 1, 2, 2}},  // a GEMM: 5 x 2BI x BO
    };
    for (const Case& k : cases) {
      const std::string text = conv2d_program_text(k.layer, c);
      SCOPED_TRACE(std::string(file) + " " + to_string(k.tiling) + "\n" + text);
      const Program program = parsed(text);
      Expected<Conv2dLayer> recognized = recognize_conv2d(program, c);
      ASSERT_TRUE(recognized.ok()) << recognized.status().to_string();
      EXPECT_EQ(*recognized, k.layer);

      std::vector<HostBuffer> inputs = make_random_inputs(program, 11);
      Expected<SampleProgram> p = make_conv2d_program(c, k.layer, k.tiling, {bytes_of(inputs[0]), bytes_of(inputs[1])});
      ASSERT_TRUE(p.ok()) << p.status().to_string();
      std::vector<uint8_t> dram = p->dram;
      Expected<SimulationResult> run = simulate(c, p->stream, dram);
      ASSERT_TRUE(run.ok()) << run.status().to_string();

      ProgramEvaluator evaluator(program, const_pointers(inputs));
      Expected<HostBuffer> y = evaluator.evaluate("Y");
      ASSERT_TRUE(y.ok()) << y.status().to_string();
      HostBuffer accel(DataType::i8(), y->shape());
      const std::vector<int8_t> out = output_of(*p, dram);
      ASSERT_EQ(int64_t(out.size()), accel.num_elements());
      std::copy(out.begin(), out.end(), accel.typed<int8_t>());
      Comparison cmp = compare_buffers(*y, accel);
      EXPECT_TRUE(cmp.match) << cmp.describe();
      EXPECT_EQ(p->expected, bytes_of(*y));  // the stream's own reference agrees
      // The outputs are not trivial: they span values, clipped ones included.
      const std::set<int8_t> values(out.begin(), out.end());
      EXPECT_GE(values.size(), 8u);
      EXPECT_TRUE(values.count(127)) << "no output saturates";
    }
  }
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// datasets/fpga/: each ResNet-18 file is exactly its resnet18_layers() entry, each
// GEMM a 1x1 conv over one row, and each file the program conv2d_program_text writes.
TEST(FpgaConv2dProgram, DatasetFilesAreTheirLayers) {
  const AccelConfig& c = default_accel_config();
  std::vector<std::pair<std::string, Conv2dLayer>> expected;
  for (const Conv2dLayer& l : resnet18_layers()) {
    std::string file = l.name.substr(l.name.find('.') + 1);  // "C2"
    file[0] = 'c';
    expected.emplace_back("resnet18_" + file, l);
  }
  for (auto [m, k, n] : {std::tuple{16, 512, 512}, {64, 1024, 1024}, {256, 256, 256}}) {
    Conv2dLayer g = layer(k, 1, m, n, 1, 1, 0, false, 8);
    g.name = fmt::format("gemm_{}x{}x{}", m, k, n);
    expected.emplace_back(g.name, g);
  }
  ASSERT_EQ(expected.size(), 13u);
  for (const auto& [file, l] : expected) {
    SCOPED_TRACE(file);
    const Program program = parsed(read_text(kSource + "/datasets/fpga/" + file + ".tg"));
    Expected<Conv2dLayer> recognized = recognize_conv2d(program, c);
    ASSERT_TRUE(recognized.ok()) << recognized.status().to_string();
    recognized->name = l.name;
    EXPECT_EQ(*recognized, l);
    EXPECT_TRUE(structural_equal(program, parsed(conv2d_program_text(l, c))));
    EXPECT_TRUE(legal_tilings(c, *recognized).size() > 0);
  }
}

// A small padded conv the error cases below change one piece of.
const std::string kBase =
    "input X: i8[1, 2, 5, 5, 1, 16]\n"
    "input W: i8[2, 2, 3, 3, 16, 16]\n"
    "P[n, c, h, w, b, i] = select(h >= 1 && h <= 5 && w >= 1 && w <= 5, X[n, c, h - 1, w - 1, b, i], 0) "
    "where h in 0..7, w in 0..7\n"
    "C[n, k, y, x, b, o] += i32(P[n, c, y + r, x + s, b, i]) * i32(W[k, c, r, s, o, i]) where y in 0..5, x in 0..5\n"
    "Y[n, k, y, x, b, o] = i8(max(min(C[n, k, y, x, b, o] / 256, 127), 0))\n";

std::string with(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(FpgaConv2dProgram, BaseAndItsEquivalentFormsAreRecognized) {
  const AccelConfig& c = default_accel_config();
  const Conv2dLayer base = layer(32, 5, 5, 32, 3, 1, 1, true, 8);
  for (const std::string& text : {
           kBase,
           with(kBase, "max(min(C[n, k, y, x, b, o] / 256, 127), 0)", "min(max(C[n, k, y, x, b, o] / 256, 0), 127)"),
           with(kBase, "h >= 1 && h <= 5 && w >= 1 && w <= 5", "w < 6 && h > 0 && h < 6 && w >= 1"),
       }) {
    Expected<Conv2dLayer> l = recognize_conv2d(parsed(text), c);
    ASSERT_TRUE(l.ok()) << l.status().to_string() << "\n" << text;
    EXPECT_EQ(*l, base);
  }
  Conv2dLayer unshifted = base;
  unshifted.shift = 0, unshifted.relu = false;
  Expected<Conv2dLayer> l = recognize_conv2d(parsed(with(kBase, "C[n, k, y, x, b, o] / 256, 127), 0)",
                                                         "C[n, k, y, x, b, o], 127), -128)")),
                                             c);
  ASSERT_TRUE(l.ok()) << l.status().to_string();
  EXPECT_EQ(*l, unshifted);
}

// Every form the accelerator cannot run: FAILED_PRECONDITION naming what.
TEST(FpgaConv2dProgram, EveryUnmappableFormIsNamed) {
  const AccelConfig& c = default_accel_config();
  const std::string y_line = "Y[n, k, y, x, b, o] = i8(max(min(C[n, k, y, x, b, o] / 256, 127), 0))";
  const std::string c_line =
      "C[n, k, y, x, b, o] += i32(P[n, c, y + r, x + s, b, i]) * i32(W[k, c, r, s, o, i]) where y in 0..5, x in 0..5";
  struct Bad {
    std::string text, message;
  };
  const std::vector<Bad> cases = {
      {kBase + "Z[n, k, y, x, b, o] = Y[n, k, y, x, b, o] + Y[n, k, y, x, b, o]\n", "4 stages"},
      {"input V: i8[4]\n" + kBase, "3 inputs"},
      {with(kBase, y_line, "Y[n, k, y, x, b, o] = max(C[n, k, y, x, b, o], 0)"), "not an int8 cast"},
      {with(kBase, y_line, "Y[n, k, y, x, b, o] = i8(C[n, k, y, x, b, o] / 256)"), "not a clamp by constants"},
      {with(kBase, "127), 0))", "100), 0))"), "clamps to 0..100"},
      {with(kBase, "127), 0))", "127), -127))"), "clamps to -127..127"},
      {with(kBase, "/ 256", "/ 100"), "divides by 100, not a power of two"},
      {with(kBase, "C[n, k, y, x, b, o] / 256", "C[n, k, x, y, b, o] / 256"), "is not the conv read at the output's"},
      {with(kBase, "C[n, k, y, x, b, o] / 256", "C[n, k, y, x, b, o] / C[n, k, 0, 0, b, o]"),
       "is not a division by a constant"},
      {with(kBase, "C[n, k, y, x, b, o] / 256", "i32(X[n, k, y, x, b, o]) / 256"), "3 stages and 2 outputs"},  // C is left unread
      {with(kBase, "C[n, k, y, x, b, o] +=", "C[n, k, y, x, b, o] max="), "not an i32 sum"},
      {with(kBase, "i32(P[n, c, y + r, x + s, b, i]) * i32(W", "i32(P[n, c, y + r, x + s, b, i]) + i32(W"),
       "the body is not a product"},
      {with(with(kBase, "input X: i8", "input X: i32"), "i32(P[n, c, y + r, x + s, b, i])", "P[n, c, y + r, x + s, b, i]"), "P is i32; the GEMM core multiplies int8"},
      {with(kBase, "i32(P[n, c, y + r, x + s, b, i])", "i32(P[n, c, y + r, x + s, b, i]) * 2"),
       "is not a tensor read"},
      {with(kBase, "i32(W[k, c, r, s, o, i])", "i32(W[k, c, s, r, o, i])"), "the accelerator's conv is"},
      {with(kBase, "i32(W[k, c, r, s, o, i])", "i32(W[k, c, r, s, i, o])"), "the accelerator's conv is"},
      {with(kBase, c_line,
            "C[n, k, y, x, b, o] += i32(P[n, c, y * 2 + r, x + s, b, i]) * i32(W[k, c, r, s, o, i]) "
            "where y in 0..3, x in 0..5"),
       "strides 2 (rows) and 1 (columns) differ"},
      {with(kBase, "X[n, c, h - 1, w - 1, b, i], 0)", "X[n, c, h - 1, w - 1, b, i], 1)"), "not a zero padding"},
      {with(kBase, "X[n, c, h - 1, w - 1, b, i], 0)", "X[n, c, h - 1, w - 1, b, i] + 1, 0)"), "not a zero padding"},
      {with(with(kBase, "X[n, c, h - 1, w - 1, b, i]", "X[n, c, h - 1, w - 1, 0, i]"), "w in 0..7", "w in 0..7, b in 0..1"),
       "a padding stage is"},
      {with(with(kBase, "where h in 0..7", "where h in 0..8"), "y in 0..5", "y in 0..6"),
       "pads 1 rows above, 2 below, 1 columns left, 1 right"},
      {with(with(kBase, "h >= 1 && h <= 5", "h >= 2 && h <= 6"), "h - 1", "h - 2"),
       "pads 2 rows above, 0 below, 1 columns left, 1 right"},
      {with(kBase, "w <= 5", "w <= 4"), "is not h in 1..5 and w in 1..5 (the image)"},
      {with(kBase, "h >= 1 && ", "h >= 1 && c >= 1 && "), "is not h in 1..5 and w in 1..5 (the image)"},
      {with(kBase, "y in 0..5", "y in 0..4"), "computes 4x5 outputs; a 3x3 stride-1 conv of the 5x5 image padded by 1 "
                                              "gives 5x5"},
      {with(kBase, "input X: i8[1, 2, 5, 5, 1, 16]", "input X: i8[1, 2, 5, 5, 2, 16]"),
       "X is blocked 2x16 and W 16x16; the design zynq7020-1x16x16 computes BATCH x BLOCK_IN = 1x16"},
      {with(with(kBase, "input X: i8[1, 2, 5, 5, 1, 16]", "input X: i8[1, 4, 5, 5, 1, 8]"),
            "input W: i8[2, 2, 3, 3, 16, 16]", "input W: i8[4, 4, 3, 3, 8, 8]"),
       "X is blocked 1x8 and W 8x8"},
      {"input X: i8[1, 2, 5, 5, 1, 16]\n"
       "input W: i8[2, 2, 3, 3, 16, 16]\n"
       "C[n, k, y, x, b, o] += i32(X[n, c, y + r, x + s, b, i]) * i32(X[k, c, r, s, o, i]) where y in 0..1, x in 0..1\n"
       "Y[n, k, y, x, b, o] = i8(max(min(C[n, k, y, x, b, o] / 256, 127), 0))\n",
       "does not read two different inputs"},
      {"input X: i8[1, 2, 5, 5, 1, 16]\n"
       "input W: i8[2, 2, 3, 3, 16, 16]\n"
       "V[a, c, r, s, o, i] = W[a, c, r, s, o, i] + 1\n"
       "C[n, k, y, x, b, o] += i32(X[n, c, y + r, x + s, b, i]) * i32(V[k, c, r, s, o, i]) where y in 0..3, x in 0..3\n"
       "Y[n, k, y, x, b, o] = i8(max(min(C[n, k, y, x, b, o] / 256, 127), 0))\n",
       "stages besides the padding"},
  };
  for (const Bad& bad : cases) {
    SCOPED_TRACE(bad.text);
    Expected<Program> program = parse_program(bad.text);
    ASSERT_TRUE(program.ok()) << program.status().to_string();
    Expected<Conv2dLayer> l = recognize_conv2d(*program, c);
    ASSERT_FALSE(l.ok());
    EXPECT_EQ(l.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(l.status().message().find(bad.message), std::string::npos) << l.status().to_string();
  }
}

TEST(FpgaConv2dProgram, GivenDataOfTheWrongSizeIsRejected) {
  const AccelConfig& c = default_accel_config();
  Conv2dLayer l = layer(16, 4, 4, 16, 1, 1, 0, true, 8);
  Expected<SampleProgram> p = make_conv2d_program(c, l, {4, 4, 1, 1, 1}, {std::vector<int8_t>(100), {}});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("100 input and 0 weight bytes given; the layer has 256 and 256"),
            std::string::npos)
      << p.status().to_string();
}

}  // namespace
}  // namespace tensorgym::fpga
