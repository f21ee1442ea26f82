// Convolution streams on the accelerator (codegen/fpga/conv2d_stream): bit-exact with
// the reference on odd shapes, strides and padding, every tiling rule's error, and
// what virtual threads and the roofline promise.
#include <gtest/gtest.h>

#include "codegen/fpga/conv2d_stream.h"
#include "codegen/fpga/fsim.h"

namespace tensorgym::fpga {
namespace {

const std::string kConfigs = std::string(TENSORGYM_SOURCE_DIR) + "/codegen/fpga/configs/";

Conv2dLayer layer(int64_t c, int64_t h, int64_t w, int64_t k, int64_t r, int64_t stride, int64_t pad, bool relu) {
  Conv2dLayer l;
  l.name = "test";
  l.c = c, l.h = h, l.w = w, l.k = k, l.r = l.s = r, l.stride = stride, l.pad = pad, l.relu = relu;
  l.shift = 7;
  return l;
}

struct Case {
  Conv2dLayer layer;
  Conv2dTiling tiling;
};

// Odd image sizes, 3x3 / 1x1 / 5x5 kernels, strides 1 and 2, padding 0..2, several
// channel blocks reduced in chunks, tiles of every kind, one and two virtual threads.
TEST(FpgaConv2d, StreamsAreBitExactOnBothConfigurations) {
  for (const char* file : {"small-1x8x8.json", "zynq7020-1x16x16.json"}) {
    AccelConfig c = *load_accel_config(kConfigs + file);
    const int64_t bi = c.block_in, bo = c.block_out;
    std::vector<Case> cases = {
        {layer(2 * bi, 9, 7, 2 * bo, 3, 1, 1, true), {3, 7, 1, 1, 2}},
        {layer(2 * bi, 9, 7, 2 * bo, 3, 1, 1, false), {9, 1, 2, 2, 1}},
        {layer(3 * bi, 11, 11, bo, 3, 2, 1, true), {2, 3, 1, 3, 2}},
        {layer(bi, 10, 6, 3 * bo, 1, 2, 0, true), {5, 3, 3, 1, 2}},
        {layer(bi, 8, 8, bo, 5, 1, 2, false), {4, 4, 1, 1, 2}},
        {layer(2 * bi, 6, 6, 2 * bo, 3, 1, 0, true), {2, 2, 1, 2, 1}},
    };
    for (const Case& k : cases) {
      SCOPED_TRACE(std::string(file) + " " + to_string(k.tiling));
      Expected<SampleProgram> p = make_conv2d_program(c, k.layer, k.tiling, 5);
      ASSERT_TRUE(p.ok()) << p.status().to_string();
      std::vector<uint8_t> dram = p->dram;
      Expected<SimulationResult> r = simulate(c, p->stream, dram);
      ASSERT_TRUE(r.ok()) << r.status().to_string() << "\n" << to_text(p->stream);
      EXPECT_EQ(output_of(*p, dram), p->expected);
      EXPECT_EQ(r->macs, k.layer.macs());
      EXPECT_GE(r->cycles, roofline(c, k.layer).bound());
      // The same stream without its data: the same cycles.
      Expected<SampleProgram> bare = make_conv2d_program(c, k.layer, k.tiling, 5, false);
      ASSERT_TRUE(bare.ok());
      Expected<SimulationResult> timing = simulate(c, bare->stream, bare->dram, SimulateOptions{false});
      ASSERT_TRUE(timing.ok());
      EXPECT_EQ(timing->cycles, r->cycles);
    }
  }
}

TEST(FpgaConv2d, TilingErrorsSayWhichRule) {
  const AccelConfig& c = default_accel_config();
  Conv2dLayer l = resnet18_layers()[0];  // C2: 56x56, 64 -> 64, 3x3
  auto message = [&](Conv2dTiling t) { return check_tiling(c, l, t).message(); };
  EXPECT_NE(message({5, 14, 1, 1, 2}).find("does not divide"), std::string::npos);
  EXPECT_NE(message({56, 56, 4, 4, 2}).find("INP"), std::string::npos) << message({56, 56, 4, 4, 2});
  EXPECT_NE(message({14, 14, 1, 1, 3}).find("virtual_threads"), std::string::npos);
  Conv2dLayer odd = l;
  odd.c = 60;
  EXPECT_NE(check_tiling(c, odd, {14, 14, 1, 1, 2}).message().find("blocks"), std::string::npos);
  Conv2dLayer wide = l;
  wide.pad = 3;
  EXPECT_NE(check_tiling(c, wide, {2, 2, 1, 1, 1}).message().find("padding"), std::string::npos);
  EXPECT_FALSE(make_conv2d_program(c, l, {5, 14, 1, 1, 2}).ok());
  EXPECT_TRUE(check_tiling(c, l, {14, 14, 1, 1, 2}).ok());
}

// On every ResNet-18 layer, the same tiling with two virtual threads takes fewer
// cycles than with one, as on the real design: loads hide behind compute.
TEST(FpgaConv2d, VirtualThreadsBeatTheSameTilingWithout) {
  const AccelConfig& c = default_accel_config();
  for (const Conv2dLayer& l : resnet18_layers()) {
    SCOPED_TRACE(l.name);
    // The first tiling (in legal_tilings' order) of 2 virtual threads with a few
    // hundred GEMM cycles a step.
    const Conv2dTiling* chosen = nullptr;
    std::vector<Conv2dTiling> all = legal_tilings(c, l);
    for (const Conv2dTiling& t : all)
      if (t.virtual_threads == 2 && t.tile_h * t.tile_w * t.tile_k * t.tile_c * l.r * l.s >= 256) {
        chosen = &t;
        break;
      }
    ASSERT_NE(chosen, nullptr);
    Conv2dTiling one = *chosen;
    one.virtual_threads = 1;
    int64_t cycles[2];
    for (const Conv2dTiling& t : {one, *chosen}) {
      Expected<SampleProgram> p = make_conv2d_program(c, l, t, 1, false);
      ASSERT_TRUE(p.ok()) << p.status().to_string();
      Expected<SimulationResult> r = simulate(c, p->stream, p->dram, SimulateOptions{false});
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      cycles[t.virtual_threads - 1] = r->cycles;
    }
    EXPECT_LT(cycles[1], cycles[0]) << to_string(*chosen);
  }
}

TEST(FpgaConv2d, RooflineOfResNetC2) {
  Roofline r = roofline(default_accel_config(), resnet18_layers()[0]);
  EXPECT_EQ(r.compute_cycles, 56 * 56 * 64 * 64 * 9 / 256);
  EXPECT_EQ(r.dram_cycles, (56 * 56 * 64 * 2 + 64 * 64 * 9 + 7) / 8);
  EXPECT_EQ(r.bound(), r.compute_cycles);
}

}  // namespace
}  // namespace tensorgym::fpga
