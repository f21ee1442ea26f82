#include "codegen/fpga/sample_programs.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "support/random.h"

namespace tensorgym::fpga {
namespace {

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

}  // namespace

Expected<SampleProgram> make_gemm_program(const AccelConfig& c, const GemmProgramOptions& o) {
  const int64_t B = c.batch, BI = c.block_in, BO = c.block_out;
  if (o.m <= 0 || o.n <= 0 || o.k <= 0 || o.m % B || o.k % BI || o.n % BO)
    return invalid_argument(fmt::format("a {}x{}x{} GEMM is not made of whole {}x{}x{} blocks", o.m, o.n, o.k, B,
                                        BI, BO));
  if (o.slots < 1 || o.slots > 2) return invalid_argument("slots is 1 or 2");
  if (o.shift < 0 || o.shift > 31) return invalid_argument("shift is in 0..31");
  const int64_t MB = o.m / B, KB = o.k / BI, NB = o.n / BO, S = o.slots;
  if (MB * KB > c.inp_depth() || S * KB > c.wgt_depth() || S * MB > c.acc_depth() || S * MB > c.uop_depth() ||
      MB * KB > 65535 || KB >= (1 << 14) || NB > 65535)
    return invalid_argument(fmt::format("a {}x{}x{} GEMM in {} slots does not fit on chip", o.m, o.n, o.k, S));

  // DRAM: A's input entries (mb, kb), W's weight entries (nb, kb), C's output entries
  // (mb, nb), then the micro-ops; each region aligned to its entry.
  const int64_t a_at = 0;
  const int64_t w_at = round_up(a_at + MB * KB * c.inp_entry_bytes(), c.wgt_entry_bytes());
  const int64_t c_at = round_up(w_at + NB * KB * c.wgt_entry_bytes(), c.out_entry_bytes());
  const int64_t u_at = round_up(c_at + MB * NB * c.out_entry_bytes(), AccelConfig::kUopBytes);
  SampleProgram p;
  p.dram.assign(size_t(u_at + S * MB * AccelConfig::kUopBytes), 0);
  p.output_offset = c_at;

  Rng rng(o.seed);
  std::vector<int8_t> a(size_t(o.m * o.k)), w(size_t(o.n * o.k));
  for (int8_t& v : a) v = int8_t(rng.range(-128, 127));
  for (int8_t& v : w) v = int8_t(rng.range(-128, 127));
  for (int64_t m = 0; m < o.m; ++m)
    for (int64_t k = 0; k < o.k; ++k)
      p.dram[size_t(a_at + ((m / B) * KB + k / BI) * c.inp_entry_bytes() + (m % B) * BI + k % BI)] =
          uint8_t(a[size_t(m * o.k + k)]);
  for (int64_t n = 0; n < o.n; ++n)
    for (int64_t k = 0; k < o.k; ++k)
      p.dram[size_t(w_at + ((n / BO) * KB + k / BI) * c.wgt_entry_bytes() + (n % BO) * BI + k % BI)] =
          uint8_t(w[size_t(n * o.k + k)]);
  // Slot s's micro-ops: accumulator s*MB + mb, input row mb, weights of slot s.
  for (int64_t s = 0; s < S; ++s)
    for (int64_t mb = 0; mb < MB; ++mb) {
      TG_ASSIGN_OR_RETURN(uint32_t bits, encode(Uop{uint32_t(s * MB + mb), uint32_t(mb * KB), uint32_t(s * KB)}));
      std::memcpy(&p.dram[size_t(u_at + (s * MB + mb) * 4)], &bits, 4);
    }

  std::vector<Instruction>& st = p.stream;
  st.push_back(make_load(Buffer::kUop, 0, uint32_t(u_at / 4), 1, uint32_t(S * MB), uint32_t(S * MB)));
  st.push_back(make_load(Buffer::kInp, 0, uint32_t(a_at / c.inp_entry_bytes()), 1, uint32_t(MB * KB),
                         uint32_t(MB * KB)));
  for (int64_t nb = 0; nb < NB; ++nb) {
    const int64_t s = nb % S;
    const uint32_t ub = uint32_t(s * MB), ue = uint32_t((s + 1) * MB);
    Instruction wl = make_load(Buffer::kWgt, uint32_t(s * KB), uint32_t(w_at / c.wgt_entry_bytes() + nb * KB), 1,
                               uint32_t(KB), uint32_t(KB));
    wl.pop_next = nb >= S;  // the slot's previous weights are used up
    wl.push_next = true;
    st.push_back(wl);

    Instruction reset = make_gemm(ub, ue, 1, 1);
    reset.reset = true;
    reset.pop_prev = true;
    reset.pop_next = nb >= S;  // the slot's previous outputs are stored
    st.push_back(reset);
    Instruction gemm = make_gemm(ub, ue, uint32_t(KB), 1);
    gemm.src_out = 1;
    gemm.wgt_out = 1;
    st.push_back(gemm);
    // The output stage in one pass: shift, clamp to int8, ReLU.
    Instruction req = make_alu(AluOp::kRequant, ub, ue, 1, 1);
    req.use_imm = true;
    req.imm = requant_imm(o.shift, o.relu);
    st.push_back(req);
    st.back().push_prev = nb + S < NB;  // the weight slot is free
    st.back().push_next = true;

    Instruction store = make_store(ub, uint32_t(c_at / c.out_entry_bytes() + nb), uint32_t(MB), 1, uint32_t(NB));
    store.pop_prev = true;
    store.push_prev = nb + S < NB || nb == NB - 1;  // the next user of the slot, or FINISH
    st.push_back(store);
  }
  Instruction finish = make_finish();
  finish.pop_next = true;
  st.push_back(finish);

  p.expected.resize(size_t(o.m * o.n));
  for (int64_t m = 0; m < o.m; ++m)
    for (int64_t n = 0; n < o.n; ++n) {
      int32_t sum = 0;
      for (int64_t k = 0; k < o.k; ++k) sum += int32_t(a[size_t(m * o.k + k)]) * int32_t(w[size_t(n * o.k + k)]);
      int32_t v = std::clamp(sum >> o.shift, -128, 127);
      if (o.relu) v = std::max(v, 0);
      p.expected[size_t((((m / B) * NB + n / BO) * B + m % B) * BO + n % BO)] = int8_t(v);
    }
  return p;
}

std::vector<int8_t> output_of(const SampleProgram& p, const std::vector<uint8_t>& dram) {
  std::vector<int8_t> out(p.expected.size());
  std::memcpy(out.data(), dram.data() + p.output_offset, out.size());
  return out;
}

std::vector<GemmProgramOptions> sample_gemm_options(const AccelConfig& config, int slots, bool relu) {
  std::vector<GemmProgramOptions> gemms;
  for (auto [m, n, k] : {std::array<int64_t, 3>{16, 64, 64}, {3, 48, 32}, {40, 16, 80}}) {
    GemmProgramOptions o;
    o.m = m, o.n = n - n % config.block_out, o.k = k - k % config.block_in;
    o.slots = slots;
    o.relu = relu;
    o.seed = uint64_t(m * 7 + n);
    gemms.push_back(o);
  }
  return gemms;
}

}  // namespace tensorgym::fpga
