#include "codegen/fpga/isa.h"

#include <fmt/format.h>

#include "codegen/fpga/accel_config.h"

namespace tensorgym::fpga {
namespace {

using Bits = unsigned __int128;

// An unsigned field of an instruction at a bit offset.
struct Field {
  const char* name;
  int offset;
  int width;
  uint32_t Instruction::*member;
};

// LOAD / STORE after the common bits (opcode 0..2, flags 3..6) and the buffer (7..9).
const Field kMemoryFields[] = {
    {"sram_base", 10, 16, &Instruction::sram_base}, {"dram_base", 26, 32, &Instruction::dram_base},
    {"y_size", 58, 16, &Instruction::y_size},       {"x_size", 74, 16, &Instruction::x_size},
    {"x_stride", 90, 16, &Instruction::x_stride},   {"y_pad0", 106, 4, &Instruction::y_pad0},
    {"y_pad1", 110, 4, &Instruction::y_pad1},       {"x_pad0", 114, 4, &Instruction::x_pad0},
    {"x_pad1", 118, 4, &Instruction::x_pad1},
};
// GEMM and ALU after the common bits and reset (7).
const Field kLoopFields[] = {
    {"uop_begin", 8, 13, &Instruction::uop_begin}, {"uop_end", 21, 14, &Instruction::uop_end},
    {"iter_out", 35, 14, &Instruction::iter_out},  {"iter_in", 49, 14, &Instruction::iter_in},
    {"dst_out", 63, 11, &Instruction::dst_out},    {"dst_in", 74, 11, &Instruction::dst_in},
    {"src_out", 85, 11, &Instruction::src_out},    {"src_in", 96, 11, &Instruction::src_in},
};
const Field kGemmFields[] = {{"wgt_out", 107, 10, &Instruction::wgt_out}, {"wgt_in", 117, 10, &Instruction::wgt_in}};
constexpr int kAluOpOffset = 107, kUseImmOffset = 110, kImmOffset = 111, kImmBits = 16;

Bits mask(int width) { return (Bits(1) << width) - 1; }
uint32_t get(Bits b, int offset, int width) { return uint32_t((b >> offset) & mask(width)); }
void put(Bits& b, int offset, int width, uint64_t v) { b |= (Bits(v) & mask(width)) << offset; }

Status put_checked(Bits& b, const Field& f, uint32_t v) {
  if (uint64_t(v) > uint64_t(mask(f.width)))
    return invalid_argument(fmt::format("{} = {} does not fit its {} bits (at most {})", f.name, v, f.width,
                                        uint64_t(mask(f.width))));
  put(b, f.offset, f.width, v);
  return Status();
}

bool is_memory(Opcode op) { return op == Opcode::kLoad || op == Opcode::kStore; }
bool is_loop(Opcode op) { return op == Opcode::kGemm || op == Opcode::kAlu; }

std::string flags_text(const Instruction& i) {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (on) s += s.empty() ? name : fmt::format(" {}", name);
  };
  add(i.pop_prev, "pop_prev");
  add(i.pop_next, "pop_next");
  add(i.push_prev, "push_prev");
  add(i.push_next, "push_next");
  return s.empty() ? s : " [" + s + "]";
}

int64_t depth_of(const AccelConfig& c, Buffer b) {
  switch (b) {
    case Buffer::kUop: return c.uop_depth();
    case Buffer::kWgt: return c.wgt_depth();
    case Buffer::kInp: return c.inp_depth();
    case Buffer::kAcc:
    case Buffer::kOut: return c.acc_depth();
  }
  return 0;
}

enum Queue { kLoadToCompute, kComputeToLoad, kComputeToStore, kStoreToCompute };

}  // namespace

const char* opcode_name(Opcode op) {
  switch (op) {
    case Opcode::kLoad: return "LOAD";
    case Opcode::kStore: return "STORE";
    case Opcode::kGemm: return "GEMM";
    case Opcode::kFinish: return "FINISH";
    case Opcode::kAlu: return "ALU";
  }
  return "?";
}

const char* buffer_name(Buffer b) {
  switch (b) {
    case Buffer::kUop: return "UOP";
    case Buffer::kWgt: return "WGT";
    case Buffer::kInp: return "INP";
    case Buffer::kAcc: return "ACC";
    case Buffer::kOut: return "OUT";
  }
  return "?";
}

const char* alu_op_name(AluOp op) {
  switch (op) {
    case AluOp::kMin: return "MIN";
    case AluOp::kMax: return "MAX";
    case AluOp::kAdd: return "ADD";
    case AluOp::kShr: return "SHR";
    case AluOp::kMul: return "MUL";
    case AluOp::kClip: return "CLIP";
    case AluOp::kRequant: return "REQ";
  }
  return "?";
}

int32_t requant_imm(int shift, bool relu) { return (shift & 31) | (relu ? 32 : 0); }

const char* module_name(Module m) {
  switch (m) {
    case Module::kLoad: return "load";
    case Module::kCompute: return "compute";
    case Module::kStore: return "store";
  }
  return "?";
}

const char* token_queue_name(int queue) {
  static const char* const kNames[kTokenQueues] = {"load -> compute", "compute -> load", "compute -> store",
                                                   "store -> compute"};
  return queue >= 0 && queue < kTokenQueues ? kNames[queue] : "?";
}

int popped_queue(Module m, bool prev) {
  if (prev) return m == Module::kCompute ? kLoadToCompute : kComputeToStore;
  return m == Module::kLoad ? kComputeToLoad : kStoreToCompute;
}

int pushed_queue(Module m, bool prev) {
  if (prev) return m == Module::kCompute ? kComputeToLoad : kStoreToCompute;
  return m == Module::kLoad ? kLoadToCompute : kComputeToStore;
}

Module consumer_of(int queue) {
  switch (queue) {
    case kLoadToCompute:
    case kStoreToCompute: return Module::kCompute;
    case kComputeToLoad: return Module::kLoad;
    default: return Module::kStore;
  }
}

Module module_of(const Instruction& inst) {
  if (inst.opcode == Opcode::kStore) return Module::kStore;
  if (inst.opcode == Opcode::kLoad && (inst.buffer == Buffer::kInp || inst.buffer == Buffer::kWgt))
    return Module::kLoad;
  return Module::kCompute;
}

Expected<EncodedInstruction> encode(const Instruction& inst) {
  Bits b = 0;
  put(b, 0, 3, uint8_t(inst.opcode));
  put(b, 3, 1, inst.pop_prev);
  put(b, 4, 1, inst.pop_next);
  put(b, 5, 1, inst.push_prev);
  put(b, 6, 1, inst.push_next);
  if (is_memory(inst.opcode)) {
    put(b, 7, 3, uint8_t(inst.buffer));
    for (const Field& f : kMemoryFields) TG_RETURN_IF_ERROR(put_checked(b, f, inst.*f.member));
  } else if (is_loop(inst.opcode)) {
    put(b, 7, 1, inst.reset);
    for (const Field& f : kLoopFields) TG_RETURN_IF_ERROR(put_checked(b, f, inst.*f.member));
    if (inst.opcode == Opcode::kGemm) {
      for (const Field& f : kGemmFields) TG_RETURN_IF_ERROR(put_checked(b, f, inst.*f.member));
    } else {
      put(b, kAluOpOffset, 3, uint8_t(inst.alu_op));
      put(b, kUseImmOffset, 1, inst.use_imm);
      if (inst.imm < -(1 << (kImmBits - 1)) || inst.imm >= (1 << (kImmBits - 1)))
        return invalid_argument(fmt::format("imm = {} does not fit its {} signed bits", inst.imm, kImmBits));
      put(b, kImmOffset, kImmBits, uint32_t(inst.imm));
    }
  } else if (inst.opcode != Opcode::kFinish) {
    return invalid_argument(fmt::format("opcode {} is not an instruction", int(inst.opcode)));
  }
  return EncodedInstruction{uint64_t(b), uint64_t(b >> 64)};
}

Expected<Instruction> decode(EncodedInstruction e) {
  Bits b = (Bits(e.hi) << 64) | e.lo;
  Instruction i;
  uint32_t op = get(b, 0, 3);
  if (op > uint32_t(Opcode::kAlu)) return invalid_argument(fmt::format("opcode {} is not an instruction", op));
  i.opcode = Opcode(op);
  i.pop_prev = get(b, 3, 1);
  i.pop_next = get(b, 4, 1);
  i.push_prev = get(b, 5, 1);
  i.push_next = get(b, 6, 1);
  if (is_memory(i.opcode)) {
    uint32_t buffer = get(b, 7, 3);
    if (buffer > uint32_t(Buffer::kOut)) return invalid_argument(fmt::format("buffer {} does not exist", buffer));
    i.buffer = Buffer(buffer);
    for (const Field& f : kMemoryFields) i.*f.member = get(b, f.offset, f.width);
  } else if (is_loop(i.opcode)) {
    i.reset = get(b, 7, 1);
    for (const Field& f : kLoopFields) i.*f.member = get(b, f.offset, f.width);
    if (i.opcode == Opcode::kGemm) {
      for (const Field& f : kGemmFields) i.*f.member = get(b, f.offset, f.width);
    } else {
      uint32_t alu = get(b, kAluOpOffset, 3);
      if (alu > uint32_t(AluOp::kRequant)) return invalid_argument(fmt::format("ALU operation {} does not exist", alu));
      i.alu_op = AluOp(alu);
      i.use_imm = get(b, kUseImmOffset, 1);
      i.imm = int32_t(int16_t(uint16_t(get(b, kImmOffset, kImmBits))));
    }
  }
  return i;
}

Expected<uint32_t> encode(const Uop& u) {
  if (u.dst >= kMaxAccDepth || u.src >= kMaxAccDepth || u.wgt >= kMaxWgtDepth)
    return invalid_argument(fmt::format("micro-op dst {} src {} wgt {} exceeds its fields (11, 11, 10 bits)", u.dst,
                                        u.src, u.wgt));
  return u.dst | (u.src << 11) | (u.wgt << 22);
}

Uop decode_uop(uint32_t bits) { return Uop{bits & 0x7ff, (bits >> 11) & 0x7ff, bits >> 22}; }

Expected<std::vector<uint8_t>> encode_stream(const std::vector<Instruction>& stream) {
  std::vector<uint8_t> bytes;
  bytes.reserve(stream.size() * 16);
  for (size_t n = 0; n < stream.size(); ++n) {
    Expected<EncodedInstruction> e = encode(stream[n]);
    if (!e.ok()) return e.status().with_context(fmt::format("instruction {}", n));
    for (uint64_t word : {e->lo, e->hi})
      for (int k = 0; k < 8; ++k) bytes.push_back(uint8_t(word >> (8 * k)));
  }
  return bytes;
}

Expected<std::vector<Instruction>> decode_stream(const std::vector<uint8_t>& bytes) {
  if (bytes.size() % 16 != 0)
    return invalid_argument(fmt::format("an instruction stream is a multiple of 16 bytes, not {}", bytes.size()));
  std::vector<Instruction> stream;
  for (size_t at = 0; at < bytes.size(); at += 16) {
    EncodedInstruction e;
    for (int k = 0; k < 8; ++k) {
      e.lo |= uint64_t(bytes[at + k]) << (8 * k);
      e.hi |= uint64_t(bytes[at + 8 + k]) << (8 * k);
    }
    Expected<Instruction> i = decode(e);
    if (!i.ok()) return i.status().with_context(fmt::format("instruction {}", at / 16));
    stream.push_back(*i);
  }
  return stream;
}

std::string to_string(const Instruction& i) {
  switch (i.opcode) {
    case Opcode::kLoad:
    case Opcode::kStore: {
      std::string s = fmt::format("{} {} sram {} dram {} y {} x {} stride {}", opcode_name(i.opcode),
                                  buffer_name(i.buffer), i.sram_base, i.dram_base, i.y_size, i.x_size, i.x_stride);
      if (i.y_pad0 || i.y_pad1 || i.x_pad0 || i.x_pad1)
        s += fmt::format(" pad {},{},{},{}", i.y_pad0, i.y_pad1, i.x_pad0, i.x_pad1);
      return s + flags_text(i);
    }
    case Opcode::kGemm:
    case Opcode::kAlu: {
      std::string s = i.opcode == Opcode::kGemm ? std::string("GEMM") : fmt::format("ALU {}", alu_op_name(i.alu_op));
      s += fmt::format(" uop {}..{} iter {}x{} dst {},{}", i.uop_begin, i.uop_end, i.iter_out, i.iter_in, i.dst_out,
                       i.dst_in);
      if (i.opcode == Opcode::kGemm) {
        s += fmt::format(" src {},{} wgt {},{}", i.src_out, i.src_in, i.wgt_out, i.wgt_in);
        if (i.reset) s += " reset";
      } else {
        s += i.use_imm ? fmt::format(" imm {}", i.imm) : fmt::format(" src {},{}", i.src_out, i.src_in);
        // REQ's immediate packs two fields; spell them out for the reader.
        if (i.alu_op == AluOp::kRequant && i.use_imm && i.imm >= 0 && i.imm < 64)
          s += fmt::format(" (shift {}{})", i.imm & 31, i.imm & 32 ? " relu" : "");
      }
      return s + flags_text(i);
    }
    case Opcode::kFinish: return "FINISH" + flags_text(i);
  }
  return "?";
}

std::string to_text(const std::vector<Instruction>& stream) {
  std::string s;
  for (size_t n = 0; n < stream.size(); ++n) s += fmt::format("{:5}  {}\n", n, to_string(stream[n]));
  return s;
}

Status check_stream(const AccelConfig& c, const std::vector<Instruction>& stream) {
  if (stream.empty() || stream.back().opcode != Opcode::kFinish)
    return invalid_argument("an instruction stream ends with FINISH");
  int64_t tokens[kTokenQueues] = {};
  for (size_t n = 0; n < stream.size(); ++n) {
    const Instruction& i = stream[n];
    auto fail = [&](const std::string& why) {
      return invalid_argument(fmt::format("instruction {} ({}): {}", n, to_string(i), why));
    };
    if (i.opcode == Opcode::kFinish && n + 1 != stream.size()) return fail("FINISH before the end of the stream");
    if (is_memory(i.opcode)) {
      if (i.opcode == Opcode::kLoad && i.buffer == Buffer::kOut) return fail("LOAD cannot write the OUT buffer");
      if (i.opcode == Opcode::kStore && i.buffer != Buffer::kOut) return fail("STORE reads only the OUT buffer");
      if (i.y_size == 0 || i.x_size == 0) return fail("an empty block");
      if (i.x_stride < i.x_size) return fail("x_stride is smaller than x_size: rows overlap in DRAM");
      bool padded = i.y_pad0 || i.y_pad1 || i.x_pad0 || i.x_pad1;
      if (padded && (i.opcode == Opcode::kStore || i.buffer == Buffer::kUop))
        return fail("only LOADs of INP, WGT and ACC pad");
      int64_t entries = int64_t(i.y_pad0 + i.y_size + i.y_pad1) * (i.x_pad0 + i.x_size + i.x_pad1);
      int64_t depth = depth_of(c, i.buffer);
      if (i.sram_base + entries > depth)
        return fail(fmt::format("entries {}..{} are outside the {}-entry {} buffer", i.sram_base,
                                i.sram_base + entries - 1, depth, buffer_name(i.buffer)));
    } else if (is_loop(i.opcode)) {
      if (i.uop_end <= i.uop_begin) return fail("no micro-ops (uop_end <= uop_begin)");
      if (i.uop_end > c.uop_depth())
        return fail(fmt::format("micro-ops past the {}-entry UOP buffer", c.uop_depth()));
      if (i.iter_out == 0 || i.iter_in == 0) return fail("a loop of no iterations");
      if (i.opcode == Opcode::kAlu && i.alu_op == AluOp::kClip && i.use_imm && i.imm < 0)
        return fail("CLIP's bound is negative");
      // Bits above REQ's two fields would be ignored silently: refuse them.
      if (i.opcode == Opcode::kAlu && i.alu_op == AluOp::kRequant && i.use_imm && (i.imm < 0 || i.imm > 63))
        return fail(fmt::format("REQ's immediate {} is outside 0..63 (the shift in bits 0..4, ReLU in bit 5)", i.imm));
    }
    Module m = module_of(i);
    if (m == Module::kLoad && (i.pop_prev || i.push_prev)) return fail("the load module has no previous module");
    if (m == Module::kStore && (i.pop_next || i.push_next)) return fail("the store module has no next module");
    for (auto [flag, prev] : {std::pair{i.pop_prev, true}, std::pair{i.pop_next, false}}) {
      if (!flag) continue;
      int q = popped_queue(m, prev);
      if (tokens[q] == 0)
        return fail(fmt::format("pops the {} queue, which no earlier instruction pushed: the stream deadlocks",
                                token_queue_name(q)));
      --tokens[q];
    }
    if (i.push_prev) ++tokens[pushed_queue(m, true)];
    if (i.push_next) ++tokens[pushed_queue(m, false)];
  }
  return Status();
}

Instruction make_load(Buffer buffer, uint32_t sram_base, uint32_t dram_base, uint32_t y_size, uint32_t x_size,
                      uint32_t x_stride) {
  Instruction i;
  i.opcode = Opcode::kLoad;
  i.buffer = buffer;
  i.sram_base = sram_base;
  i.dram_base = dram_base;
  i.y_size = y_size;
  i.x_size = x_size;
  i.x_stride = x_stride;
  return i;
}

Instruction make_store(uint32_t sram_base, uint32_t dram_base, uint32_t y_size, uint32_t x_size, uint32_t x_stride) {
  Instruction i = make_load(Buffer::kOut, sram_base, dram_base, y_size, x_size, x_stride);
  i.opcode = Opcode::kStore;
  return i;
}

Instruction make_gemm(uint32_t uop_begin, uint32_t uop_end, uint32_t iter_out, uint32_t iter_in) {
  Instruction i;
  i.opcode = Opcode::kGemm;
  i.uop_begin = uop_begin;
  i.uop_end = uop_end;
  i.iter_out = iter_out;
  i.iter_in = iter_in;
  return i;
}

Instruction make_alu(AluOp op, uint32_t uop_begin, uint32_t uop_end, uint32_t iter_out, uint32_t iter_in) {
  Instruction i = make_gemm(uop_begin, uop_end, iter_out, iter_in);
  i.opcode = Opcode::kAlu;
  i.alu_op = op;
  return i;
}

Instruction make_finish() { return Instruction{}; }

}  // namespace tensorgym::fpga
