// The accelerator's RTL (codegen/fpga/rtl, Verilator) against fsim: on the sample GEMMs
// of both configurations (each at its own dram_max_outstanding, and the default design
// also at 1), every ALU operation, padded loads and a STORE read back by a LOAD, the
// DRAM image after the run is fsim's byte for byte and the cycles agree within 5%
// (docs/fpga.md "RTL"). Skipped when the build has no RTL models; the packed-DSP
// arithmetic's check runs without them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "codegen/fpga/accel_config.h"
#include "codegen/fpga/fsim.h"
#include "codegen/fpga/isa.h"
#include "codegen/fpga/rtl_sim.h"
#include "codegen/fpga/sample_programs.h"

namespace tensorgym::fpga {
namespace {

const std::string kConfigs = std::string(TENSORGYM_SOURCE_DIR) + "/codegen/fpga/configs/";

bool built_for(const std::string& file) {
  for (const std::string& f : rtl_config_files())
    if (f == kConfigs + file) return true;
  return false;
}

// Runs both simulators on copies of `dram`; the images must match and the cycles agree.
void expect_agreement(const AccelConfig& c, const std::vector<Instruction>& stream, const std::vector<uint8_t>& dram,
                      const std::string& what) {
  std::vector<uint8_t> by_fsim = dram, by_rtl = dram;
  Expected<SimulationResult> f = simulate(c, stream, by_fsim);
  ASSERT_TRUE(f.ok()) << what << ": " << f.status().to_string();
  Expected<SimulationResult> r = simulate_rtl(c, stream, by_rtl);
  ASSERT_TRUE(r.ok()) << what << ": " << r.status().to_string();
  EXPECT_EQ(by_rtl, by_fsim) << what;
  int64_t diff = r->cycles - f->cycles;
  EXPECT_LE(std::abs(diff) * 20, f->cycles) << what << ": rtl " << r->cycles << ", fsim " << f->cycles;
  EXPECT_EQ(r->dram_read_bytes, f->dram_read_bytes) << what;
  EXPECT_EQ(r->dram_write_bytes, f->dram_write_bytes) << what;
  std::printf("[ modules  ] %-40s", what.c_str());
  for (int m = 0; m < 3; ++m) {
    const ModuleCycles& b = r->modules[m];
    std::printf(" %s %lld/%lld/%lld/%lld", module_name(Module(m)), (long long)b.busy, (long long)b.dependency_stall,
                (long long)b.dram_stall, (long long)b.idle);
  }
  std::printf("\n");
  // The per-module breakdown: busy, waiting for a token, waiting for DRAM, idle.
  for (int m = 0; m < 3; ++m) {
    const ModuleCycles &a = f->modules[m], &b = r->modules[m];
    const std::string where = what + ", " + module_name(Module(m));
    EXPECT_EQ(b.instructions, a.instructions) << where;
    EXPECT_EQ(b.busy, a.busy) << where;
    EXPECT_EQ(b.dependency_stall, a.dependency_stall) << where;
    EXPECT_EQ(b.dram_stall, a.dram_stall) << where;
    EXPECT_EQ(b.idle, a.idle) << where;
  }
  std::printf("[ cycles   ] %-40s fsim %8lld  rtl %8lld  diff %+lld\n", what.c_str(), (long long)f->cycles,
              (long long)r->cycles, (long long)diff);
}

// A configuration's file, and the DRAM requests in flight to allow (0: its own).
using Design = std::tuple<std::string, int>;

Expected<AccelConfig> design_config(const Design& d) {
  Expected<AccelConfig> c = load_accel_config(kConfigs + std::get<0>(d));
  if (c.ok() && std::get<1>(d) > 0) c->dram_max_outstanding = std::get<1>(d);
  return c;
}

const auto kDesigns = ::testing::Values(Design{"small-1x8x8.json", 0}, Design{"zynq7020-1x16x16.json", 0},
                                        Design{"zynq7020-1x16x16.json", 1});

class FpgaRtlGemm : public ::testing::TestWithParam<std::tuple<Design, int, bool>> {};

TEST_P(FpgaRtlGemm, MatchesFsim) {
  auto [design, slots, relu] = GetParam();
  const std::string& file = std::get<0>(design);
  if (!built_for(file)) GTEST_SKIP() << "no RTL model for " << file;
  Expected<AccelConfig> c = design_config(design);
  ASSERT_TRUE(c.ok());
  for (const GemmProgramOptions& o : sample_gemm_options(*c, slots, relu)) {
    Expected<SampleProgram> p = make_gemm_program(*c, o);
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    expect_agreement(*c, p->stream, p->dram,
                     file + " out " + std::to_string(c->dram_max_outstanding) + " " + std::to_string(o.m) + "x" + std::to_string(o.n) + "x" + std::to_string(o.k) +
                         " slots " + std::to_string(slots) + (relu ? " relu" : ""));
    std::vector<uint8_t> dram = p->dram;
    ASSERT_TRUE(simulate_rtl(*c, p->stream, dram).ok());
    EXPECT_EQ(output_of(*p, dram), p->expected);
  }
}

INSTANTIATE_TEST_SUITE_P(Configs, FpgaRtlGemm,
                         ::testing::Combine(kDesigns, ::testing::Values(1, 2), ::testing::Bool()));

// Hand-made streams on each design.
class FpgaRtl : public ::testing::TestWithParam<Design> {
 protected:
  void SetUp() override {
    if (!built_for(std::get<0>(GetParam()))) GTEST_SKIP() << "no RTL model for " << std::get<0>(GetParam());
    Expected<AccelConfig> c = design_config(GetParam());
    ASSERT_TRUE(c.ok());
    config = *c;
    label = config.name + " out " + std::to_string(config.dram_max_outstanding) + " ";
  }
  AccelConfig config;
  std::string label;
};

INSTANTIATE_TEST_SUITE_P(Designs, FpgaRtl, kDesigns);

// A chain of every ALU operation, with accumulator and immediate sources, over a strided
// loop of micro-ops (the pipeline forwards back-to-back writes of one accumulator).
TEST_P(FpgaRtl, AluChainMatchesFsim) {
  const AccelConfig* c = &config;
  const int64_t entry = c->acc_entry_bytes(), lanes = c->batch * c->block_out, entries = 8;
  std::vector<uint8_t> dram(size_t(entries * entry + 64 + entries * c->out_entry_bytes()), 0);
  const int32_t values[] = {-300, -129, -128, -1, 0, 1, 127, 70000, 5, -3, 2, 31, -2, 40, -70000, 1 << 30};
  for (int64_t e = 0; e < entries; ++e)
    for (int64_t l = 0; l < lanes; ++l) {
      // Wrapping, as the datapath does: 1 << 30 times 2 and 3 leave int32's range.
      int32_t v = int32_t(uint32_t(values[(e * 3 + l) % 16]) * uint32_t(e % 3 + 1));
      std::memcpy(&dram[size_t(e * entry + l * 4)], &v, 4);
    }
  const int64_t uop_at = entries * entry;
  // Micro-ops: dst 0 src 4, dst 1 src 5 (iterated 2 x 2 with dst_in 2: dst 0..3).
  for (int u = 0; u < 2; ++u) {
    uint32_t bits = *encode(Uop{uint32_t(u), uint32_t(4 + u), 0});
    std::memcpy(&dram[size_t(uop_at + u * 4)], &bits, 4);
  }
  std::vector<Instruction> s = {make_load(Buffer::kAcc, 0, 0, 1, uint32_t(entries), uint32_t(entries)),
                                make_load(Buffer::kUop, 0, uint32_t(uop_at / 4), 1, 2, 2)};
  struct Step {
    AluOp op;
    bool imm;
    int32_t value;
  };
  for (Step k : {Step{AluOp::kAdd, false, 0}, Step{AluOp::kMul, false, 0}, Step{AluOp::kShr, true, 3},
                 Step{AluOp::kMax, false, 0}, Step{AluOp::kShr, false, 0}, Step{AluOp::kMin, true, 1000},
                 Step{AluOp::kShr, true, -2}, Step{AluOp::kClip, false, 0}, Step{AluOp::kAdd, true, -32768},
                 Step{AluOp::kMul, true, -7}, Step{AluOp::kClip, true, 127}, Step{AluOp::kRequant, true, 33}}) {
    Instruction a = make_alu(k.op, 0, 2, 1, 2);
    a.dst_in = 2;
    a.src_in = 0;
    a.use_imm = k.imm;
    a.imm = k.value;
    s.push_back(a);
  }
  s.back().push_next = true;
  Instruction store = make_store(0, uint32_t((uop_at + 64) / c->out_entry_bytes()), 1, uint32_t(entries),
                                 uint32_t(entries));
  store.pop_prev = true;
  store.push_prev = true;
  s.push_back(store);
  Instruction finish = make_finish();
  finish.pop_next = true;
  s.push_back(finish);
  expect_agreement(*c, s, dram, label + "ALU chain");
}

// REQ on int32 extremes, with every kind of operand: immediates that cover shift 0 and
// 31 with and without ReLU, and accumulator operands whose bits above 5 are set (ignored).
TEST_P(FpgaRtl, RequantMatchesFsim) {
  const AccelConfig* c = &config;
  const int64_t entry = c->acc_entry_bytes(), lanes = c->batch * c->block_out, entries = 10;
  std::vector<uint8_t> dram(size_t(entries * entry + 64 + 16 * c->out_entry_bytes()), 0);
  const int32_t values[] = {INT32_MIN, INT32_MAX, -1, 0,   1000, -1000,  255,     -257,
                            127,       128,       -128, -129, 70000, -70000, 1 << 30, 5};
  for (int64_t e = 0; e < entries; ++e)
    for (int64_t l = 0; l < lanes; ++l) {
      // Entries 8 and 9 are the operands: a shift and ReLU per lane under high garbage bits.
      int32_t v = e < 8 ? values[(e * 3 + l) % 16] : int32_t(uint32_t((l * 7 + e * 13) % 64) | (l % 2 ? 0xa5a5a500u : 0));
      std::memcpy(&dram[size_t(e * entry + l * 4)], &v, 4);
    }
  const int64_t uop_at = entries * entry;
  for (int u = 0; u < 8; ++u) {  // dst u, src 8 or 9
    uint32_t bits = *encode(Uop{uint32_t(u), uint32_t(8 + u % 2), 0});
    std::memcpy(&dram[size_t(uop_at + u * 4)], &bits, 4);
  }
  std::vector<Instruction> s = {make_load(Buffer::kAcc, 0, 0, 1, uint32_t(entries), uint32_t(entries)),
                                make_load(Buffer::kUop, 0, uint32_t(uop_at / 4), 1, 8, 8)};
  const int32_t imms[] = {0, 32, 3, 35, 31, 63};
  for (uint32_t e = 0; e < 8; ++e) {
    Instruction a = make_alu(AluOp::kRequant, e, e + 1, 1, 1);
    a.use_imm = e < 6;
    a.imm = e < 6 ? imms[e] : 0;
    s.push_back(a);
  }
  s.back().push_next = true;
  const uint32_t out_at = uint32_t((uop_at + 64) / c->out_entry_bytes());
  Instruction store = make_store(0, out_at, 1, 8, 8);
  store.pop_prev = true;
  store.push_prev = true;
  s.push_back(store);
  // Then, once that is stored, every entry again and entry 1 three times back to back
  // (forwarded), stored beside it.
  Instruction all = make_alu(AluOp::kRequant, 0, 8, 1, 1);
  all.use_imm = true;
  all.imm = 36;
  all.pop_next = true;
  s.push_back(all);
  Instruction again = make_alu(AluOp::kRequant, 1, 2, 1, 3);
  again.use_imm = true;
  again.imm = 1;
  again.push_next = true;
  s.push_back(again);
  store.dram_base = out_at + 8;
  s.push_back(store);
  Instruction finish = make_finish();
  finish.pop_next = true;
  s.push_back(finish);
  ASSERT_TRUE(check_stream(*c, s).ok()) << check_stream(*c, s).message();
  expect_agreement(*c, s, dram, label + "REQ");
  std::vector<uint8_t> by_fsim = dram, by_rtl = dram;
  EXPECT_EQ(simulate_rtl(*c, s, by_rtl)->cycles, simulate(*c, s, by_fsim)->cycles);  // cycle-exact, not within 5%
}

// Padded loads of INP and ACC; GEMM and ALU bring the pads into OUT and STORE shows them.
TEST_P(FpgaRtl, PaddedLoadsMatchFsim) {
  const AccelConfig* c = &config;
  struct Pads {
    uint32_t y0, y1, x0, x1;
  };
  for (Pads p : {Pads{1, 1, 1, 1}, Pads{0, 2, 0, 0}, Pads{2, 0, 0, 3}, Pads{0, 0, 2, 0}, Pads{3, 1, 0, 1}}) {
    const uint32_t ys = 3, xs = 2, w = p.x0 + xs + p.x1, h = p.y0 + ys + p.y1;
    std::vector<uint8_t> dram(16384, 0);
    for (size_t b = 0; b < 4096; ++b) dram[b] = uint8_t(b * 37 + 11);
    const uint32_t uop_word = 4096 / 4, out_entry = 8192 / uint32_t(c->out_entry_bytes());
    uint32_t bits = *encode(Uop{0, 0, 0});
    std::memcpy(&dram[4096], &bits, 4);
    Instruction acc = make_load(Buffer::kAcc, 0, 1, ys, xs, 5);
    acc.y_pad0 = p.y0, acc.y_pad1 = p.y1, acc.x_pad0 = p.x0, acc.x_pad1 = p.x1;
    Instruction inp = make_load(Buffer::kInp, 0, 3, ys, xs, 4);
    inp.y_pad0 = p.y0, inp.y_pad1 = p.y1, inp.x_pad0 = p.x0, inp.x_pad1 = p.x1;
    inp.push_next = true;
    Instruction wgt = make_load(Buffer::kWgt, 0, 2, 1, 1, 1);  // before INP, whose token covers both
    Instruction gemm = make_gemm(0, 1, h * w, 1);  // acc[e] += inp[e] . wgt[0]
    gemm.dst_out = 1, gemm.src_out = 1;
    gemm.pop_prev = true;
    Instruction wait = make_alu(AluOp::kMax, 0, 1, 1, 1);
    wait.use_imm = true;
    wait.imm = -32768;
    wait.push_next = true;
    Instruction store = make_store(0, out_entry, h, w, w);
    store.pop_prev = true;
    store.push_prev = true;
    Instruction finish = make_finish();
    finish.pop_next = true;
    std::vector<Instruction> s = {make_load(Buffer::kUop, 0, uop_word, 1, 1, 1), acc, wgt, inp, gemm, wait, store,
                                  finish};
    expect_agreement(*c, s, dram, label + "pads " + std::to_string(p.y0) + std::to_string(p.y1) + std::to_string(p.x0) +
                                      std::to_string(p.x1));
  }
}

// Rows the store module writes, read back by a later LOAD that waits for them through
// the tokens (STORE -> compute -> load): the rows land at their completion, and the
// STORE completes with its last row, so the LOAD cannot overtake them.
TEST_P(FpgaRtl, ALoadAfterAStoreReadsWhatItStored) {
  const AccelConfig& c = config;
  ASSERT_EQ(c.inp_entry_bytes(), c.out_entry_bytes());
  const int64_t acc_e = c.acc_entry_bytes(), out_e = c.out_entry_bytes(), wgt_e = c.wgt_entry_bytes();
  auto align = [](int64_t v, int64_t to) { return (v + to - 1) / to * to; };
  const int64_t uop_at = 4 * acc_e, wgt_at = align(uop_at + 8, wgt_e), a_at = align(wgt_at + wgt_e, out_e),
                b_at = a_at + 8 * out_e;
  std::vector<uint8_t> dram(size_t(b_at + 4 * out_e), 0);
  for (int64_t b = 0; b < uop_at; ++b) dram[size_t(b)] = uint8_t(b * 29 + 3);
  for (int64_t b = wgt_at; b < wgt_at + wgt_e; ++b) dram[size_t(b)] = uint8_t(b * 13 + 5);
  for (uint32_t u = 0; u < 2; ++u) {
    uint32_t bits = *encode(Uop{8 * u, 0, 0});
    std::memcpy(&dram[size_t(uop_at + 4 * u)], &bits, 4);
  }
  auto loop4 = [](Instruction i) {
    i.iter_out = 4, i.dst_out = 1, i.src_out = 1;
    return i;
  };
  Instruction copy = loop4(make_alu(AluOp::kAdd, 0, 1, 1, 1));  // OUT = the accumulators' low bytes
  copy.use_imm = true;
  copy.push_next = true;
  Instruction store = make_store(0, uint32_t(a_at / out_e), 4, 1, 2);
  store.pop_prev = store.push_prev = true;
  Instruction relay = make_alu(AluOp::kAdd, 0, 1, 1, 1);  // waits for the STORE, tells load
  relay.use_imm = true;
  relay.pop_next = relay.push_prev = true;
  Instruction reload = make_load(Buffer::kInp, 0, uint32_t(a_at / c.inp_entry_bytes()), 4, 1, 2);
  reload.pop_next = reload.push_next = true;
  Instruction reset = loop4(make_gemm(1, 2, 1, 1));
  reset.reset = true;
  Instruction gemm = loop4(make_gemm(1, 2, 1, 1));
  gemm.pop_prev = gemm.push_next = true;
  Instruction result = make_store(8, uint32_t(b_at / out_e), 4, 1, 1);
  result.pop_prev = result.push_prev = true;
  Instruction finish = make_finish();
  finish.pop_next = true;
  std::vector<Instruction> s = {make_load(Buffer::kAcc, 0, 0, 4, 1, 1),
                                make_load(Buffer::kUop, 0, uint32_t(uop_at / 4), 1, 2, 2),
                                copy,
                                store,
                                relay,
                                make_load(Buffer::kWgt, 0, uint32_t(wgt_at / wgt_e), 1, 1, 1),
                                reload,
                                reset,
                                gemm,
                                result,
                                finish};
  expect_agreement(c, s, dram, label + "store, then load it");
  std::vector<uint8_t> after = dram;
  ASSERT_TRUE(simulate(c, s, after).ok());
  EXPECT_NE(std::count(after.begin() + b_at, after.end(), 0), 4 * out_e) << "the GEMM read back nothing";
}

// The hand-counted stream of fsim's test (tests/fpga_fsim_test.cc): two 64-byte rows
// complete at 50 with requests in flight together, 82 one at a time.
TEST(FpgaRtlTiming, TwoRowsByHand) {
  if (!built_for("zynq7020-1x16x16.json")) GTEST_SKIP() << "no RTL model";
  AccelConfig c = default_accel_config();
  std::vector<uint8_t> dram(128, 0);
  const std::vector<Instruction> two_rows = {make_load(Buffer::kAcc, 0, 0, 2, 1, 1), make_finish()};
  Expected<SimulationResult> r = simulate_rtl(c, two_rows, dram);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->cycles, 51);
  c.dram_max_outstanding = 1;
  r = simulate_rtl(c, two_rows, dram);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->cycles, 83);
}

// One step of the GEMM core's two-products-per-DSP chain (pair_mac in
// codegen/fpga/rtl/compute.sv), bit for bit on every int8 x, w1, w2 and accumulators at
// int32's edges: P = h * 2^16 + 2^15 + x * (w1 * 2^16 + w2) mod 2^48, the packed weight
// within the DSP48E1's 25-bit port; P[47:16] is h + x * w1 wrapped to int32 and P[15:0]
// is x * w2 + 2^15.
TEST(FpgaRtlDsp, TwoProductsFromOneMultiplyAreExact) {
  int64_t wrong = 0;
  for (const uint32_t h : {0u, 1u, 0x7fffffffu, 0x80000000u, 0xffffffffu, 0x12345678u})
    for (int x = -128; x < 128; ++x)
      for (int w1 = -128; w1 < 128; ++w1)
        for (int w2 = -128; w2 < 128; ++w2) {
          const int64_t w = int64_t(w1) * 65536 + w2;
          if (w < -(1 << 24) || w >= (1 << 24)) ++wrong;
          const uint64_t c = (uint64_t(h) << 16) | 0x8000;
          const uint64_t p = (c + uint64_t(int64_t(x) * w)) & ((uint64_t(1) << 48) - 1);
          if (uint32_t(p >> 16) != h + uint32_t(x * w1) || int64_t(p & 0xffff) != x * w2 + 0x8000) ++wrong;
        }
  EXPECT_EQ(wrong, 0);
}

TEST(FpgaRtl, MoreRequestsInFlightThanBuiltIsUnimplemented) {
  if (!built_for("small-1x8x8.json")) GTEST_SKIP() << "no RTL model";
  Expected<AccelConfig> c = load_accel_config(kConfigs + "small-1x8x8.json");
  ASSERT_TRUE(c.ok());
  c->dram_max_outstanding = 2;  // its row engines are built for 1
  std::vector<uint8_t> dram(64, 0);
  Expected<SimulationResult> r = simulate_rtl(*c, {make_finish()}, dram);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("dram_max_outstanding"), std::string::npos) << r.status().message();
}

TEST(FpgaRtl, AnUnbuiltDesignIsUnimplemented) {
  AccelConfig c = default_accel_config();
  c.command_queue_depth = 8;
  std::vector<uint8_t> dram(64, 0);
  Expected<SimulationResult> r = simulate_rtl(c, {make_finish()}, dram);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("RTL model"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace tensorgym::fpga
