// The accelerator's instruction set: five 128-bit instructions (LOAD, STORE, GEMM, ALU,
// FINISH) with dependency flags, and 32-bit micro-ops that GEMM and ALU loop over. The
// field layout is the one the RTL decodes (rtl/, docs/fpga.md "Instruction set").
//
// Three modules run concurrently: load (LOAD of INP and WGT), compute (LOAD of UOP and
// ACC, GEMM, ALU, FINISH) and store (STORE of OUT). Each pair of neighbours shares two
// token queues, one each way; an instruction waits for a token on each queue it pops
// (pop_prev: from its previous module, pop_next: from its next) before it starts, and
// pushes one when it ends. load's next is compute, compute's next is store.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/status.h"

namespace tensorgym::fpga {

struct AccelConfig;

enum class Opcode : uint8_t { kLoad = 0, kStore = 1, kGemm = 2, kFinish = 3, kAlu = 4 };
// The on-chip buffers: micro-ops, weights, inputs, accumulators (int32) and the int8
// output buffer that GEMM and ALU write beside each accumulator they change.
enum class Buffer : uint8_t { kUop = 0, kWgt = 1, kInp = 2, kAcc = 3, kOut = 4 };
// ALU operations on int32 lanes: dst = op(dst, src), src an accumulator or the immediate.
// kShr shifts right arithmetically (a negative amount shifts left); kClip saturates to
// [-src - 1, src] (src = 127: int8's range); ReLU is kMax with 0. kRequant is the output
// stage in one pass: clamp(dst >> shift, lo, 127), shift = src bits [4:0] (arithmetic),
// lo = 0 if src bit 5 (ReLU) else -128, higher bits ignored; an immediate lies in 0..63.
// It equals SHR shift, CLIP 127 and (ReLU) MAX 0.
enum class AluOp : uint8_t { kMin = 0, kMax = 1, kAdd = 2, kShr = 3, kMul = 4, kClip = 5, kRequant = 6 };
enum class Module : uint8_t { kLoad = 0, kCompute = 1, kStore = 2 };

const char* opcode_name(Opcode op);   // "LOAD"
const char* buffer_name(Buffer b);    // "INP"
const char* alu_op_name(AluOp op);    // "MAX"
// The immediate of a REQ: the shift (0..31) in bits [4:0], ReLU in bit 5.
int32_t requant_imm(int shift, bool relu);
const char* module_name(Module m);    // "load"

// The ISA's address ranges (the widths of the micro-op fields).
inline constexpr int64_t kMaxAccDepth = 1 << 11;
inline constexpr int64_t kMaxInpDepth = 1 << 11;
inline constexpr int64_t kMaxWgtDepth = 1 << 10;
inline constexpr int64_t kMaxUopDepth = 1 << 13;

struct Instruction {
  Opcode opcode = Opcode::kFinish;
  bool pop_prev = false, pop_next = false, push_prev = false, push_next = false;

  // LOAD / STORE: a 2-D block of y_size rows of x_size entries, rows x_stride entries
  // apart in DRAM from entry dram_base (in units of the buffer's entry), to or from
  // consecutive entries from sram_base; a LOAD writes zero entries around it (pads).
  Buffer buffer = Buffer::kInp;
  uint32_t sram_base = 0, dram_base = 0;
  uint32_t y_size = 0, x_size = 0, x_stride = 0;
  uint32_t y_pad0 = 0, y_pad1 = 0, x_pad0 = 0, x_pad1 = 0;

  // GEMM / ALU: for i in iter_out, j in iter_in, each micro-op u in [uop_begin, uop_end):
  //   acc index = u.dst + i * dst_out + j * dst_in, and likewise src (inp for GEMM, acc for
  //   ALU) and, for GEMM, wgt. reset: GEMM zeroes the accumulators instead.
  bool reset = false;
  uint32_t uop_begin = 0, uop_end = 0, iter_out = 1, iter_in = 1;
  uint32_t dst_out = 0, dst_in = 0, src_out = 0, src_in = 0, wgt_out = 0, wgt_in = 0;
  AluOp alu_op = AluOp::kAdd;
  bool use_imm = false;
  int32_t imm = 0;  // 16-bit signed

  // Iterations of the inner body: what GEMM and ALU take a cycle each for.
  int64_t iterations() const { return int64_t(iter_out) * iter_in * (int64_t(uop_end) - uop_begin); }
};

struct Uop {
  uint32_t dst = 0;  // accumulator entry (11 bits)
  uint32_t src = 0;  // GEMM: input entry; ALU: accumulator entry (11 bits)
  uint32_t wgt = 0;  // weight entry (10 bits)
};

// The module that executes an instruction.
Module module_of(const Instruction& inst);

// 128 bits as two little-endian words: bits 0..63, 64..127.
struct EncodedInstruction {
  uint64_t lo = 0, hi = 0;
};

// INVALID_ARGUMENT naming the field that does not fit its bits.
Expected<EncodedInstruction> encode(const Instruction& inst);
Expected<Instruction> decode(EncodedInstruction bits);
Expected<uint32_t> encode(const Uop& uop);
Uop decode_uop(uint32_t bits);

// The stream as bytes (16 per instruction), what fetch reads and the RTL's testbench
// loads; and back.
Expected<std::vector<uint8_t>> encode_stream(const std::vector<Instruction>& stream);
Expected<std::vector<Instruction>> decode_stream(const std::vector<uint8_t>& bytes);

// One line of assembly: "GEMM uop 0..16 iter 14x4 dst 1,16 src 18,1 wgt 0,4 [pop_prev push_next]".
std::string to_string(const Instruction& inst);
std::string to_text(const std::vector<Instruction>& stream);  // numbered lines

// The four dependency token queues, one each way between neighbours; the queue an
// instruction of module `m` pops from (pushes to) its previous or next neighbour.
inline constexpr int kTokenQueues = 4;
const char* token_queue_name(int queue);  // "load -> compute"
int popped_queue(Module m, bool prev);
int pushed_queue(Module m, bool prev);
// The module that pops what `queue` carries.
Module consumer_of(int queue);

// Whether a stream is well formed for a design: operands within the buffers, the right
// module for each buffer, dependency flags that name an existing neighbour, every pop
// matched by an earlier push of the neighbour (else the stream deadlocks), one FINISH
// at the end. The message names the instruction by index.
Status check_stream(const AccelConfig& config, const std::vector<Instruction>& stream);

// Builders for compilers and tests.
Instruction make_load(Buffer buffer, uint32_t sram_base, uint32_t dram_base, uint32_t y_size, uint32_t x_size,
                      uint32_t x_stride);
Instruction make_store(uint32_t sram_base, uint32_t dram_base, uint32_t y_size, uint32_t x_size, uint32_t x_stride);
Instruction make_gemm(uint32_t uop_begin, uint32_t uop_end, uint32_t iter_out, uint32_t iter_in);
Instruction make_alu(AluOp op, uint32_t uop_begin, uint32_t uop_end, uint32_t iter_out, uint32_t iter_in);
Instruction make_finish();

}  // namespace tensorgym::fpga
