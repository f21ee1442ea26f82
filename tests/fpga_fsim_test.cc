// The accelerator's configuration, instruction set and functional + cycle simulator
// (codegen/fpga): encodings, stream checks, bit-exact results on sample programs, and
// the cycle rules of docs/fpga.md.
#include <gtest/gtest.h>

#include <cstring>

#include "codegen/fpga/accel_config.h"
#include "codegen/fpga/fsim.h"
#include "codegen/fpga/isa.h"
#include "codegen/fpga/sample_programs.h"
#include "support/random.h"

namespace tensorgym::fpga {
namespace {

const std::string kConfigs = std::string(TENSORGYM_SOURCE_DIR) + "/codegen/fpga/configs/";

AccelConfig small_config() { return *load_accel_config(kConfigs + "small-1x8x8.json"); }

TEST(FpgaConfig, FilesParseAndTheDefaultMatchesItsFile) {
  Expected<AccelConfig> d = load_accel_config(kConfigs + "zynq7020-1x16x16.json");
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(to_json(*d), to_json(default_accel_config()));
  EXPECT_EQ(d->inp_depth(), 2048);
  EXPECT_EQ(d->wgt_depth(), 1024);
  EXPECT_EQ(d->acc_depth(), 2048);
  EXPECT_EQ(d->uop_depth(), 8192);
  Expected<AccelConfig> s = load_accel_config(kConfigs + "small-1x8x8.json");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->block_in, 8);
  Expected<AccelConfig> back = parse_accel_config(to_json(*s));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(to_json(*back), to_json(*s));
}

TEST(FpgaConfig, ErrorsNameTheParameter) {
  Expected<AccelConfig> typo = parse_accel_config(R"({"block_inn": 16})");
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(typo.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(typo.status().message().find("block_inn"), std::string::npos) << typo.status().message();
  Expected<AccelConfig> odd = parse_accel_config(R"({"block_in": 12})");
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("powers of two"), std::string::npos);
  Expected<AccelConfig> big = parse_accel_config(R"({"acc_buffer_bytes": 262144})");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("acc_buffer_bytes"), std::string::npos) << big.status().message();
  EXPECT_FALSE(parse_accel_config(R"({"clock_mhz": "fast"})").ok());
  EXPECT_FALSE(parse_accel_config("[1, 2]").ok());
  EXPECT_EQ(load_accel_config("/nonexistent/x.json").status().code(), StatusCode::kNotFound);
}

// Random instructions with every field within its bits survive encode and decode.
TEST(FpgaIsa, EncodingRoundTrips) {
  Rng rng(3);
  for (int n = 0; n < 2000; ++n) {
    Instruction i;
    i.opcode = Opcode(rng.below(5));
    i.pop_prev = rng.chance(0.5), i.pop_next = rng.chance(0.5);
    i.push_prev = rng.chance(0.5), i.push_next = rng.chance(0.5);
    if (i.opcode == Opcode::kLoad || i.opcode == Opcode::kStore) {
      i.buffer = Buffer(rng.below(5));
      i.sram_base = uint32_t(rng.below(1 << 16)), i.dram_base = uint32_t(rng.next());
      i.y_size = uint32_t(rng.below(1 << 16)), i.x_size = uint32_t(rng.below(1 << 16));
      i.x_stride = uint32_t(rng.below(1 << 16));
      i.y_pad0 = uint32_t(rng.below(16)), i.y_pad1 = uint32_t(rng.below(16));
      i.x_pad0 = uint32_t(rng.below(16)), i.x_pad1 = uint32_t(rng.below(16));
    } else if (i.opcode == Opcode::kGemm || i.opcode == Opcode::kAlu) {
      i.reset = rng.chance(0.5);
      i.uop_begin = uint32_t(rng.below(1 << 13)), i.uop_end = uint32_t(rng.below(1 << 14));
      i.iter_out = uint32_t(rng.below(1 << 14)), i.iter_in = uint32_t(rng.below(1 << 14));
      i.dst_out = uint32_t(rng.below(1 << 11)), i.dst_in = uint32_t(rng.below(1 << 11));
      i.src_out = uint32_t(rng.below(1 << 11)), i.src_in = uint32_t(rng.below(1 << 11));
      if (i.opcode == Opcode::kGemm) {
        i.wgt_out = uint32_t(rng.below(1 << 10)), i.wgt_in = uint32_t(rng.below(1 << 10));
      } else {
        i.alu_op = AluOp(rng.below(7));
        i.use_imm = rng.chance(0.5);
        i.imm = int32_t(rng.range(-32768, 32767));
      }
    }
    Expected<EncodedInstruction> e = encode(i);
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    Expected<Instruction> d = decode(*e);
    ASSERT_TRUE(d.ok()) << d.status().to_string();
    EXPECT_EQ(to_string(*d), to_string(i));
    Expected<EncodedInstruction> again = encode(*d);
    EXPECT_EQ(again->lo, e->lo);
    EXPECT_EQ(again->hi, e->hi);
  }
  for (Uop u : {Uop{0, 0, 0}, Uop{2047, 2047, 1023}, Uop{5, 1000, 17}}) {
    Uop back = decode_uop(*encode(u));
    EXPECT_EQ(back.dst, u.dst);
    EXPECT_EQ(back.src, u.src);
    EXPECT_EQ(back.wgt, u.wgt);
  }
}

TEST(FpgaIsa, FieldsThatDoNotFitAreNamed) {
  Instruction g = make_gemm(0, 1 << 14, 1, 1);
  Expected<EncodedInstruction> e = encode(g);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("uop_end"), std::string::npos) << e.status().message();
  Instruction a = make_alu(AluOp::kAdd, 0, 1, 1, 1);
  a.use_imm = true;
  a.imm = 40000;
  EXPECT_NE(encode(a).status().message().find("imm"), std::string::npos);
  EXPECT_FALSE(encode(Uop{2048, 0, 0}).ok());
  EXPECT_FALSE(decode_stream(std::vector<uint8_t>(17)).ok());
  Expected<std::vector<uint8_t>> bytes = encode_stream({make_gemm(0, 1, 2, 3), make_finish()});
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes->size(), 32u);
  EXPECT_EQ(to_text(*decode_stream(*bytes)), to_text({make_gemm(0, 1, 2, 3), make_finish()}));
}

TEST(FpgaIsa, MalformedStreamsAreRefusedWithTheInstruction) {
  const AccelConfig& c = default_accel_config();
  auto message = [&](const std::vector<Instruction>& s) { return check_stream(c, s).message(); };
  EXPECT_NE(message({make_gemm(0, 1, 1, 1)}).find("FINISH"), std::string::npos);
  Instruction pop = make_gemm(0, 1, 1, 1);
  pop.pop_prev = true;
  std::string m = message({pop, make_finish()});
  EXPECT_NE(m.find("instruction 0"), std::string::npos) << m;
  EXPECT_NE(m.find("deadlocks"), std::string::npos) << m;
  Instruction load = make_load(Buffer::kInp, 0, 0, 1, 1, 1);
  load.push_prev = true;
  EXPECT_NE(message({load, make_finish()}).find("no previous module"), std::string::npos);
  EXPECT_NE(message({make_load(Buffer::kInp, 2040, 0, 1, 16, 16), make_finish()}).find("2048-entry INP"),
            std::string::npos);
  EXPECT_NE(message({make_load(Buffer::kOut, 0, 0, 1, 1, 1), make_finish()}).find("OUT"), std::string::npos);
  EXPECT_NE(message({make_store(0, 0, 2, 4, 2), make_finish()}).find("x_stride"), std::string::npos);
  EXPECT_NE(message({make_finish(), make_finish()}).find("before the end"), std::string::npos);
  EXPECT_TRUE(check_stream(c, {make_load(Buffer::kInp, 0, 0, 1, 1, 1), make_finish()}).ok());
  // REQ's immediate holds only a shift (bits 0..4) and ReLU (bit 5).
  for (int32_t imm : {64, -1, 1000}) {
    Instruction req = make_alu(AluOp::kRequant, 0, 1, 1, 1);
    req.use_imm = true;
    req.imm = imm;
    std::string why = message({req, make_finish()});
    EXPECT_NE(why.find("instruction 0 (ALU REQ"), std::string::npos) << why;
    EXPECT_NE(why.find("0..63"), std::string::npos) << why;
  }
  Instruction req = make_alu(AluOp::kRequant, 0, 1, 1, 1);
  req.use_imm = true;
  req.imm = requant_imm(31, true);
  EXPECT_EQ(req.imm, 63);
  EXPECT_TRUE(check_stream(c, {req, make_finish()}).ok());
  EXPECT_NE(to_string(req).find("ALU REQ uop 0..1 iter 1x1 dst 0,0 imm 63 (shift 31 relu)"), std::string::npos)
      << to_string(req);
}

class FpgaGemm : public ::testing::TestWithParam<std::tuple<std::string, int, bool>> {};

// Sample GEMMs on both configurations, single and double buffered, with and without
// ReLU: the output is the reference's, bit for bit, and timing alone gives the same
// cycles.
TEST_P(FpgaGemm, OutputIsBitExactAndCyclesDoNotDependOnData) {
  auto [file, slots, relu] = GetParam();
  Expected<AccelConfig> c = load_accel_config(kConfigs + file);
  ASSERT_TRUE(c.ok());
  for (const GemmProgramOptions& o : sample_gemm_options(*c, slots, relu)) {
    Expected<SampleProgram> p = make_gemm_program(*c, o);
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    std::vector<uint8_t> dram = p->dram;
    Expected<SimulationResult> r = simulate(*c, p->stream, dram);
    ASSERT_TRUE(r.ok()) << r.status().to_string() << "\n" << to_text(p->stream);
    EXPECT_EQ(output_of(*p, dram), p->expected) << o.m << "x" << o.n << "x" << o.k;
    EXPECT_EQ(r->macs, int64_t(o.m) * o.n * o.k);
    EXPECT_EQ(r->dram_write_bytes, int64_t(o.m) * o.n);
    std::vector<uint8_t> other = p->dram;
    Expected<SimulationResult> timing = simulate(*c, p->stream, other, SimulateOptions{false});
    ASSERT_TRUE(timing.ok());
    EXPECT_EQ(timing->cycles, r->cycles);
    for (int mod = 0; mod < 3; ++mod) {
      const ModuleCycles& mc = r->modules[mod];
      EXPECT_GE(mc.idle, 0);
      EXPECT_EQ(mc.busy + mc.dependency_stall + mc.dram_stall + mc.idle, r->cycles);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Configs, FpgaGemm,
                         ::testing::Combine(::testing::Values("zynq7020-1x16x16.json", "small-1x8x8.json"),
                                            ::testing::Values(1, 2), ::testing::Bool()));

// Double buffering lets weight loads overlap compute: fewer cycles, same output.
TEST(FpgaTiming, DoubleBufferingHidesLoads) {
  const AccelConfig& c = default_accel_config();
  GemmProgramOptions o;
  o.m = 64, o.n = 256, o.k = 128;
  int64_t cycles[2];
  std::vector<int8_t> outputs[2];
  for (int slots : {1, 2}) {
    o.slots = slots;
    Expected<SampleProgram> p = make_gemm_program(c, o);
    ASSERT_TRUE(p.ok());
    std::vector<uint8_t> dram = p->dram;
    Expected<SimulationResult> r = simulate(c, p->stream, dram);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    cycles[slots - 1] = r->cycles;
    outputs[slots - 1] = output_of(*p, dram);
    EXPECT_EQ(outputs[slots - 1], p->expected);
  }
  EXPECT_LT(cycles[1], cycles[0]);
}

// The cycle rules on a stream small enough to count by hand (docs/fpga.md "Timing"):
// fetch dispatches one instruction a cycle; a module starts an instruction the cycle
// after it was fetched; a LOAD decodes for a cycle, then each row waits the DRAM
// latency and transfers; GEMM takes 1 + iterations + the pipeline.
TEST(FpgaTiming, CyclesOfASmallStreamByHand) {
  const AccelConfig& c = default_accel_config();  // latency 32, 8 bytes a cycle, GEMM pipeline 4
  std::vector<uint8_t> dram(128, 0);
  Instruction reset = make_gemm(0, 1, 1, 1);
  reset.reset = true;
  // LOAD UOP: fetched 0, starts 1, requests at 2, done 2 + 32 + ceil(4 / 8) = 35.
  // GEMM: starts 35, ends 35 + 1 + 1 + 4 = 41. FINISH: starts 41, ends 42.
  Expected<SimulationResult> r = simulate(c, {make_load(Buffer::kUop, 0, 0, 1, 1, 1), reset, make_finish()}, dram);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->cycles, 42);
  EXPECT_EQ(r->of(Module::kCompute).busy, 1 + 1 + 6 + 1);
  EXPECT_EQ(r->of(Module::kCompute).dram_stall, 32);
  // Two rows of 64 bytes. With requests in flight together (the default allows 8):
  // LOAD ACC starts 1; row 0 at 2: 2 + 32 + 8 = 42; row 1 at 3: max(3 + 32, 42) + 8 = 50.
  // FINISH 50..51.
  const std::vector<Instruction> two_rows = {make_load(Buffer::kAcc, 0, 0, 2, 1, 1), make_finish()};
  Expected<SimulationResult> rows = simulate(c, two_rows, dram);
  ASSERT_TRUE(rows.ok()) << rows.status().to_string();
  EXPECT_EQ(rows->cycles, 51);
  EXPECT_EQ(rows->of(Module::kCompute).dram_stall, 50 - 1 - 1 - 16);
  // One request at a time: row 1 at 42: 42 + 32 + 8 = 82. FINISH 82..83.
  AccelConfig one = c;
  one.dram_max_outstanding = 1;
  Expected<SimulationResult> serial = simulate(one, two_rows, dram);
  ASSERT_TRUE(serial.ok()) << serial.status().to_string();
  EXPECT_EQ(serial->cycles, 83);
}

// Two modules sharing the DRAM port: the later request waits for the earlier transfer.
TEST(FpgaTiming, TheDramPortIsShared) {
  const AccelConfig& c = default_accel_config();
  std::vector<uint8_t> dram(1 << 16, 0);
  // INP: 64 entries of 16 bytes = 128 transfer cycles; ACC: 16 entries of 64 bytes = 128.
  Instruction inp = make_load(Buffer::kInp, 0, 0, 1, 64, 64);
  inp.push_next = true;
  Instruction acc = make_load(Buffer::kAcc, 0, 0, 1, 16, 16);
  Instruction finish = make_finish();
  finish.pop_prev = true;
  Expected<SimulationResult> r = simulate(c, {inp, acc, finish}, dram);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  // inp fetched 0, requests at 2 (load module), done 2 + 32 + 128 = 162.
  // acc fetched 1, starts 2, requests at 3: max(3 + 32, 162) + 128 = 290. FINISH 290..291.
  EXPECT_EQ(r->cycles, 291);
  EXPECT_EQ(r->of(Module::kCompute).dram_stall, 290 - 3 - 128);
}

// Runs ALU instructions of one shape (micro-op 0: dst 0, src 1) over two accumulator entries
// (a, b) on the small design; returns the eight output bytes of entry 0 and the cycles.
std::pair<std::vector<int8_t>, int64_t> run_alu_steps(const std::vector<Instruction>& steps, const int32_t (&a)[8],
                                                      const int32_t (&b)[8]) {
  const AccelConfig c = small_config();
  std::vector<uint8_t> dram(size_t(3 * c.acc_entry_bytes()), 0);
  std::memcpy(dram.data(), a, sizeof a);
  std::memcpy(dram.data() + c.acc_entry_bytes(), b, sizeof b);
  uint32_t uop = *encode(Uop{0, 1, 0});
  const int64_t uop_at = 2 * c.acc_entry_bytes();
  std::memcpy(dram.data() + uop_at, &uop, 4);
  std::vector<Instruction> s = {make_load(Buffer::kAcc, 0, 0, 1, 2, 2),
                                make_load(Buffer::kUop, 0, uint32_t(uop_at / 4), 1, 1, 1)};
  s.insert(s.end(), steps.begin(), steps.end());
  s.back().push_next = true;
  Instruction store = make_store(0, uint32_t(uop_at / c.out_entry_bytes() + 1), 1, 1, 1);
  store.pop_prev = true;
  store.push_prev = true;
  Instruction finish = make_finish();
  finish.pop_next = true;
  s.push_back(store);
  s.push_back(finish);
  Expected<SimulationResult> r = simulate(c, s, dram);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  std::vector<int8_t> out(8);
  std::memcpy(out.data(), dram.data() + uop_at + c.out_entry_bytes(), 8);
  return {out, r.ok() ? r->cycles : -1};
}

TEST(FpgaAlu, EveryOperationMatchesItsDefinition) {
  const AccelConfig c = small_config();  // 8 lanes
  const int lanes = c.batch * c.block_out;
  const int32_t a[8] = {-300, -129, -128, -1, 0, 1, 127, 70000};
  const int32_t b[8] = {5, -3, 0, 2, -1, 31, 127, -2};
  struct Case {
    AluOp op;
    bool imm;
    int32_t value;
  };
  for (Case k : {Case{AluOp::kMin, false, 0}, Case{AluOp::kMax, false, 0}, Case{AluOp::kAdd, false, 0},
                 Case{AluOp::kShr, false, 0}, Case{AluOp::kMul, false, 0}, Case{AluOp::kClip, false, 0},
                 Case{AluOp::kShr, true, 2}, Case{AluOp::kShr, true, -3}, Case{AluOp::kClip, true, 127},
                 Case{AluOp::kMax, true, 0}, Case{AluOp::kAdd, true, -32768}, Case{AluOp::kRequant, false, 0},
                 Case{AluOp::kRequant, true, 35}}) {
    Instruction alu = make_alu(k.op, 0, 1, 1, 1);
    alu.use_imm = k.imm;
    alu.imm = k.value;
    const std::vector<int8_t> out = run_alu_steps({alu}, a, b).first;
    for (int l = 0; l < lanes; ++l) {
      int32_t x = a[l], y = k.imm ? k.value : b[l], want = 0;
      switch (k.op) {
        case AluOp::kMin: want = std::min(x, y); break;
        case AluOp::kMax: want = std::max(x, y); break;
        case AluOp::kAdd: want = x + y; break;
        case AluOp::kShr: want = y >= 0 ? x >> std::min(y, 31) : int32_t(uint32_t(x) << -y); break;
        case AluOp::kMul: want = int32_t(int64_t(x) * y); break;
        case AluOp::kClip: want = x > y ? y : x < -y - 1 ? -y - 1 : x; break;
        case AluOp::kRequant: want = std::clamp(x >> (y & 31), y & 32 ? 0 : -128, 127); break;
      }
      EXPECT_EQ(out[size_t(l)], int8_t(want))
          << alu_op_name(k.op) << " lane " << l << " a " << x << " b " << y;
    }
  }
}

Instruction alu_imm(AluOp op, int32_t imm) {
  Instruction i = make_alu(op, 0, 1, 1, 1);
  i.use_imm = true;
  i.imm = imm;
  return i;
}

// REQ against values worked out by hand: floor shifts of negatives, shift 0 and 31,
// saturation at both ends, with and without ReLU.
TEST(FpgaAlu, RequantByHand) {
  const int32_t a[8] = {INT32_MIN, INT32_MAX, -1, 1000, -1000, 255, -257, 40};
  const int32_t none[8] = {};
  struct Case {
    int shift;
    bool relu;
    std::vector<int8_t> want;
  };
  for (const Case& k : {Case{0, false, {-128, 127, -1, 127, -128, 127, -128, 40}},
                        Case{0, true, {0, 127, 0, 127, 0, 127, 0, 40}},
                        Case{3, false, {-128, 127, -1, 125, -125, 31, -33, 5}},
                        Case{3, true, {0, 127, 0, 125, 0, 31, 0, 5}},
                        Case{31, false, {-1, 0, -1, 0, -1, 0, -1, 0}},
                        Case{31, true, {0, 0, 0, 0, 0, 0, 0, 0}}}) {
    std::vector<int8_t> out = run_alu_steps({alu_imm(AluOp::kRequant, requant_imm(k.shift, k.relu))}, a, none).first;
    EXPECT_EQ(out, k.want) << "shift " << k.shift << (k.relu ? " relu" : "");
  }
  // An accumulator operand: bits 0..5 of each lane, the rest ignored (lane 1's 0xffffff80
  // is shift 0 without ReLU, lane 2's is shift 3).
  const int32_t b[8] = {35, int32_t(0xffffff80u), 3 | (1 << 20), 35, 3, 0, 32, 1};
  Instruction from_acc = make_alu(AluOp::kRequant, 0, 1, 1, 1);
  EXPECT_EQ(run_alu_steps({from_acc}, a, b).first, (std::vector<int8_t>{0, 127, -1, 125, -125, 127, 0, 20}));
}

// REQ is SHR, CLIP 127 and (ReLU) MAX 0 in one pass: the same bytes on int32's edges and
// a spread of values for every immediate, in the cycles of any one ALU pass.
TEST(FpgaAlu, RequantEqualsShiftClipRelu) {
  Rng rng(7);
  for (int round = 0; round < 64; ++round) {
    int32_t a[8];
    const int32_t edges[8] = {INT32_MIN, INT32_MAX, -1, 0, 127 << 5, -(129 << 5), (128 << 5) - 1, -(128 << 5)};
    for (int l = 0; l < 8; ++l) a[l] = round == 0 ? edges[l] : int32_t(uint32_t(rng.next())) >> (round % 32);
    const int32_t none[8] = {};
    for (int shift = 0; shift < 32; ++shift)
      for (bool relu : {false, true}) {
        std::vector<Instruction> chain = {alu_imm(AluOp::kShr, shift), alu_imm(AluOp::kClip, 127)};
        if (relu) chain.push_back(alu_imm(AluOp::kMax, 0));
        auto want = run_alu_steps(chain, a, none);
        auto got = run_alu_steps({alu_imm(AluOp::kRequant, requant_imm(shift, relu))}, a, none);
        EXPECT_EQ(got.first, want.first) << "round " << round << " shift " << shift << (relu ? " relu" : "");
        EXPECT_EQ(got.second, run_alu_steps({alu_imm(AluOp::kShr, shift)}, a, none).second);
      }
  }
}

// A padded LOAD writes zero entries around the block; the ALU copies the accumulators
// to OUT (ADD 0) and STORE writes them back, so the pad shows in DRAM.
TEST(FpgaLoad, PaddingWritesZeroEntries) {
  const AccelConfig c = small_config();
  const int64_t entry = c.acc_entry_bytes(), lanes = c.batch * c.block_out;
  // A 2x2 block of accumulator entries, padded 1 on every side: 4x4 entries.
  std::vector<uint8_t> dram(size_t(4 * entry + 17 * c.out_entry_bytes()), 0);
  for (int e = 0; e < 4; ++e)
    for (int l = 0; l < lanes; ++l) {
      int32_t v = 10 * (e + 1) + l;
      std::memcpy(&dram[size_t(e * entry + l * 4)], &v, 4);
    }
  const int64_t uop_at = 4 * entry;
  uint32_t uop = *encode(Uop{0, 0, 0});
  std::memcpy(&dram[size_t(uop_at)], &uop, 4);
  Instruction load = make_load(Buffer::kAcc, 0, 0, 2, 2, 2);
  load.y_pad0 = load.y_pad1 = load.x_pad0 = load.x_pad1 = 1;
  Instruction copy = make_alu(AluOp::kAdd, 0, 1, 16, 1);
  copy.dst_out = 1;
  copy.use_imm = true;
  copy.push_next = true;
  // The output after the micro-op, at the next whole output entry.
  const uint32_t out_entry = uint32_t((uop_at + c.out_entry_bytes()) / c.out_entry_bytes());
  Instruction store = make_store(0, out_entry, 4, 4, 4);
  store.pop_prev = true;
  store.push_prev = true;
  Instruction finish = make_finish();
  finish.pop_next = true;
  Expected<SimulationResult> r =
      simulate(c, {load, make_load(Buffer::kUop, 0, uint32_t(uop_at / 4), 1, 1, 1), copy, store, finish}, dram);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) {
      bool data = y >= 1 && y <= 2 && x >= 1 && x <= 2;
      int e = (y - 1) * 2 + (x - 1);
      for (int l = 0; l < lanes; ++l)
        EXPECT_EQ(int8_t(dram[size_t(out_entry * c.out_entry_bytes() + (y * 4 + x) * lanes + l)]),
                  data ? int8_t(10 * (e + 1) + l) : 0)
            << y << "," << x;
    }
  // 16 entries, 4 from DRAM: 12 zero entries at one a cycle.
  EXPECT_EQ(r->of(Module::kCompute).busy, 1 + 2 * 8 + 12 + 1 + 1 + (1 + 16 + 3) + 1);
}

TEST(FpgaErrors, OperandsOutsideBuffersOrDramNameTheInstruction) {
  const AccelConfig& c = default_accel_config();
  std::vector<uint8_t> dram(64, 0);
  uint32_t uop = *encode(Uop{2000, 0, 0});
  std::memcpy(dram.data(), &uop, 4);
  Instruction gemm = make_gemm(0, 1, 60, 1);
  gemm.reset = true;
  gemm.dst_out = 1;  // 2000 + 59 > 2047
  Expected<SimulationResult> r = simulate(c, {make_load(Buffer::kUop, 0, 0, 1, 1, 1), gemm, make_finish()}, dram);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("instruction 1"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("2059"), std::string::npos) << r.status().message();
  Expected<SimulationResult> past = simulate(c, {make_load(Buffer::kInp, 0, 4, 1, 1, 1), make_finish()}, dram);
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find("past the 64-byte image"), std::string::npos) << past.status().message();
}

TEST(FpgaErrors, FinishMustWaitForTheStoreModule) {
  const AccelConfig& c = default_accel_config();
  std::vector<uint8_t> dram(4096, 0);
  Instruction alu = make_alu(AluOp::kAdd, 0, 1, 1, 1);
  alu.use_imm = true;
  alu.push_next = true;
  Instruction store = make_store(0, 0, 1, 1, 1);
  store.pop_prev = true;
  Expected<SimulationResult> r = simulate(c, {make_load(Buffer::kUop, 0, 0, 1, 1, 1), alu, store, make_finish()}, dram);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("store module"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace tensorgym::fpga
