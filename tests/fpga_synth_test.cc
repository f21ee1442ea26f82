// yosys synthesis of the accelerator (codegen/fpga/rtl/synth.sh) and its resource report
// (codegen/fpga/synth_report.h): the parser on a report of known counts, and, where
// yosys was found at configure time, real syntheses of small-1x8x8 and zynq7020-1x16x16
// checked against the Zynq-7020's budget, both within it (docs/fpga.md "RTL" has the
// counts and times).
#include <gtest/gtest.h>

#include <map>

#include "codegen/fpga/accel_config.h"
#include "codegen/fpga/synth_report.h"
#include "codegen/fpga/synthesize.h"
#include "tests/env_test_support.h"
#include "tests/test_support.h"

namespace tensorgym::fpga {
namespace {

TEST(FpgaSynthReport, ReadsTheFlattenedTopsCells) {
  const std::string report = R"(
=== accel ===

   Number of wires:               4321
   Number of wire bits:          54321
   Number of cells:                 12
     CARRY4                        100
     DSP48E1                        99
     FDRE                         1400
     FDSE                            9
     LUT2                          200
     LUT6                         9000
     RAM32M                         64
     RAMB18E1                       45
     RAMB36E1                        6

)";
  Expected<Utilization> u = parse_yosys_stat(report);
  ASSERT_TRUE(u.ok()) << u.status().to_string();
  EXPECT_EQ(u->logic_luts, 9200);
  EXPECT_EQ(u->lutram_luts, 256);
  EXPECT_EQ(u->luts(), 9456);
  EXPECT_EQ(u->flip_flops, 1409);
  EXPECT_EQ(u->dsps, 99);
  EXPECT_EQ(u->block_rams(), 28.5);
  EXPECT_EQ(u->cells.at("CARRY4"), 100);
  EXPECT_TRUE(fits(*u, xc7z020_budget()));
  EXPECT_NE(summary(*u, xc7z020_budget()).find("fits xc7z020: yes"), std::string::npos);
  Utilization big = *u;
  big.dsps = 221;  // one over the budget
  EXPECT_FALSE(fits(big, xc7z020_budget()));
  EXPECT_NE(summary(big, xc7z020_budget()).find("DSP48E1 221 > 220"), std::string::npos)
      << summary(big, xc7z020_budget());
  EXPECT_FALSE(parse_yosys_stat("yosys said nothing useful").ok());
}

// Real syntheses: skipped where configure found no yosys.
class FpgaSynth : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef TENSORGYM_YOSYS
    GTEST_SKIP() << "yosys was not found at configure time";
#endif
  }
};

// Synthesizes a configuration and checks its report's content; returns whether it fits.
void check_synthesis(const std::string& name, bool* fits_part) {
  Expected<AccelConfig> c =
      load_accel_config(std::string(TENSORGYM_SOURCE_DIR) + "/codegen/fpga/configs/" + name + ".json");
  ASSERT_TRUE(c.ok());
  Expected<Utilization> u = synthesized_utilization(name);  // synthesizes unless a fresh report is there
  ASSERT_TRUE(u.ok()) << u.status().to_string();
  const PartBudget& budget = xc7z020_budget();
  std::printf("[ synth    ] %s: %s\n", name.c_str(), summary(*u, budget).c_str());
  EXPECT_GT(u->logic_luts, 1000);
  EXPECT_GT(u->flip_flops, 500);
  // Two int8 products share a DSP48E1 (codegen/fpga/rtl/compute.sv), so at least half a
  // DSP per MAC; the ALU and index arithmetic take a few more.
  EXPECT_GE(u->dsps, (c->macs_per_cycle() + 1) / 2);
  EXPECT_GT(u->block_rams(), 0);
  const bool within = u->luts() <= 53200 && u->flip_flops <= 106400 && u->dsps <= 220 && u->block_rams() <= 140;
  EXPECT_EQ(fits(*u, budget), within);
  EXPECT_EQ(summary(*u, budget).find("fits xc7z020: yes") != std::string::npos, within);
  *fits_part = within;
}

TEST_F(FpgaSynth, SmallDesignFitsTheZynq7020) {
  bool within = false;
  check_synthesis("small-1x8x8", &within);
  EXPECT_TRUE(within);
}

// The default design's 256 int8 products would take 256 DSP48E1 at one a product, over
// the Zynq-7020's 220; two to a DSP they take 128, and the design fits.
TEST_F(FpgaSynth, DefaultDesignFitsTheZynq7020) {
  bool within = false;
  check_synthesis("zynq7020-1x16x16", &within);
  EXPECT_TRUE(within);
}

// The fpga target's resource observation: the same synthesis of the default design.
TEST_F(FpgaSynth, TheEnvironmentReportsTheDesignsResources) {
  std::unique_ptr<Env> e = env_test::env();
  ResetOptions on_fpga;
  on_fpga.target = "fpga";
  ASSERT_TRUE(e->reset("benchmark://fpga-v0/resnet18_c2", on_fpga, {}).ok());
  StepResult r = e->step({}, {"fpga_resources"}, {});
  ASSERT_TRUE(r.error.ok()) << r.error.to_string();
  ASSERT_TRUE(r.observations[0].is<EventDict>());
  std::map<std::string, Event> fields;
  for (const auto& [k, v] : r.observations[0].as<EventDict>()) fields[k] = v;
  EXPECT_EQ(fields["design"].as<std::string>(), "zynq7020-1x16x16");
  EXPECT_EQ(fields["part"].as<std::string>(), "xc7z020");
  const std::vector<int64_t>& used = fields["used"].as<Int64Tensor>().values;
  const std::vector<int64_t>& available = fields["available"].as<Int64Tensor>().values;
  ASSERT_EQ(used.size(), 4u);  // LUTs, flip-flops, DSP48E1, block RAM halves
  EXPECT_EQ(available, (std::vector<int64_t>{53200, 106400, 220, 280}));
  bool within = true;
  for (size_t i = 0; i < used.size(); ++i) within &= used[i] > 0 && used[i] <= available[i];
  EXPECT_EQ(fields["fits"].as<bool>(), within);
  EXPECT_TRUE(within);
  EXPECT_CONTAINS(fields["summary"].as<std::string>(), "fits xc7z020: yes");
}

}  // namespace
}  // namespace tensorgym::fpga
