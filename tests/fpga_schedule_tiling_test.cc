// Reading a convolution's tiling off an accelerator schedule (codegen/fpga/
// schedule_tiling): the VTA-style schedule gives the tiling its loops say, the
// reference interpreter runs the same schedule's nest, and every departure from the
// form is refused with the rule it breaks.
#include <gtest/gtest.h>

#include "codegen/fpga/schedule_tiling.h"
#include "tests/cuda_test_support.h"
#include "tests/fpga_test_programs.h"

namespace tensorgym::fpga {
namespace {

using cuda_test::interpreter_mismatch;
using cuda_test::scheduled;

const char* const kConv = fpga_test::kBlockedConv;

// Tiles of 3 rows x 6 columns x 1 output block, one input block a step, two virtual
// threads over the output blocks.
const std::string kExpert =
    "split(Y.y, 3, yo, yi); split(Y.k, 1, ko, ki); reorder(Y, n, ko, yo, ki, yi, x, b, o); bind(Y.ko, vthread)\n"
    "set_scope(C, acc_buffer); compute_at(C, Y.yo); reorder(C, c, n, k, y, x, r, s, b, o, i)\n"
    "set_scope(P, inp_buffer); compute_at(P, C.c); pragma(P.n, dma_copy)\n"
    "cache_read(W, C, WL, wgt_buffer); compute_at(WL, C.c); pragma(WL.ax0, dma_copy)\n"
    "tensorize(C.b, gemm)";

std::string refusal(const std::string& trace) {
  Schedule s = scheduled(kConv, trace);
  Expected<Conv2dTiling> t = read_tiling(s.state(), default_accel_config());
  return t.ok() ? "(read " + to_string(*t) + ")" : t.status().to_string();
}

TEST(FpgaScheduleTiling, TheExpertFormGivesItsTiling) {
  Schedule s = scheduled(kConv, kExpert);
  Expected<Conv2dTiling> t = read_tiling(s.state(), default_accel_config());
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(to_string(*t), "h3 w6 k1 c1 vt2");
  // The same schedule, run by the reference interpreter, computes the program.
  Expected<LoopNest> nest = lower(s, LowerOptions{.allow_accelerator_scopes = true});
  ASSERT_TRUE(nest.ok()) << nest.status().to_string();
  EXPECT_EQ(interpreter_mismatch(s.state().program(), *nest), "");
  // Chunks of both input channel blocks, the weights and window loaded once a tile,
  // one virtual thread, a tile of whole rows.
  const std::string whole =
      "split(Y.k, 1, ko, ki); reorder(Y, n, ko, y, ki, x, b, o)\n"
      "set_scope(C, acc_buffer); compute_at(C, Y.ko); reorder(C, n, c, k, y, x, r, s, b, o, i)\n"
      "set_scope(P, inp_buffer); compute_at(P, C.n); pragma(P.n, dma_copy)\n"
      "cache_read(W, C, WL, wgt_buffer); compute_at(WL, C.n); pragma(WL.ax0, dma_copy)\n"
      "tensorize(C.b, gemm)";
  EXPECT_EQ(refusal(whole), "(read h6 w6 k1 c2 vt1)");
}

TEST(FpgaScheduleTiling, EachDepartureFromTheFormIsNamed) {
  auto without = [](const std::string& part) {
    std::string t = kExpert;
    t.erase(t.find(part), part.size());
    return t;
  };
  EXPECT_NE(refusal(without("\ntensorize(C.b, gemm)")).find("no stage is tensorized"), std::string::npos);
  EXPECT_NE(refusal(without("set_scope(C, acc_buffer); ")).find("set_scope(C, acc_buffer)"), std::string::npos);
  EXPECT_NE(refusal(without("; pragma(P.n, dma_copy)")).find("not one DMA transfer"), std::string::npos);
  EXPECT_NE(refusal(without("set_scope(P, inp_buffer); ")).find("no input window stage in inp_buffer"),
            std::string::npos)
      << refusal(without("set_scope(P, inp_buffer); "));
  std::string late = kExpert;
  late.replace(late.find("reorder(Y, n, ko, yo,"), 21, "reorder(Y, n, yo, ko,");
  late.replace(late.find("compute_at(C, Y.yo)"), 19, "compute_at(C, Y.ko)");
  EXPECT_NE(refusal(late).find("order n, k, y, x"), std::string::npos) << refusal(late);
  std::string three = kExpert;
  three.replace(three.find("split(Y.y, 3"), 12, "split(Y.y, 2");
  three.replace(three.find("bind(Y.ko, vthread)"), 19, "bind(Y.yo, vthread)");
  EXPECT_NE(refusal(three).find("3 virtual threads"), std::string::npos) << refusal(three);
  std::string outside = kExpert;
  outside.replace(outside.find("reorder(C, c, n, k,"), 19, "reorder(C, k, c, n,");
  EXPECT_NE(refusal(outside).find("outside the channel chunk loop"), std::string::npos) << refusal(outside);
  // A design whose core is 8 wide does not take this program's 16-wide blocks.
  Schedule s = scheduled(kConv, kExpert);
  AccelConfig small = default_accel_config();
  small.block_in = small.block_out = 8;
  EXPECT_NE(read_tiling(s.state(), small).status().message().find("BLOCK_IN"), std::string::npos);
}

}  // namespace
}  // namespace tensorgym::fpga
