#include "codegen/fpga/fsim.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <deque>

namespace tensorgym::fpga {
namespace {

constexpr int64_t kNever = INT64_MAX;

// The on-chip buffers and what the instructions do to them.
class Datapath {
 public:
  Datapath(const AccelConfig& c, std::vector<uint8_t>& dram, bool functional)
      : c_(c), dram_(dram), functional_(functional) {
    inp_.assign(size_t(c.inp_depth() * c.inp_entry_bytes()), 0);
    wgt_.assign(size_t(c.wgt_depth() * c.wgt_entry_bytes()), 0);
    acc_.assign(size_t(c.acc_depth() * c.batch * c.block_out), 0);
    out_.assign(acc_.size(), 0);
    uop_.assign(size_t(c.uop_depth()), 0);
  }

  Status execute(const Instruction& i, SimulationResult& r) {
    switch (i.opcode) {
      case Opcode::kLoad: return load(i, r);
      case Opcode::kStore: return store(i, r);
      case Opcode::kGemm: return gemm(i, r);
      case Opcode::kAlu: return alu(i, r);
      case Opcode::kFinish: return Status();
    }
    return Status();
  }

  int64_t entry_bytes(Buffer b) const {
    switch (b) {
      case Buffer::kUop: return AccelConfig::kUopBytes;
      case Buffer::kWgt: return c_.wgt_entry_bytes();
      case Buffer::kInp: return c_.inp_entry_bytes();
      case Buffer::kAcc: return c_.acc_entry_bytes();
      case Buffer::kOut: return c_.out_entry_bytes();
    }
    return 0;
  }

 private:
  Status check_dram(const Instruction& i) const {
    int64_t entry = entry_bytes(i.buffer);
    int64_t end = (int64_t(i.dram_base) + int64_t(i.y_size - 1) * i.x_stride + i.x_size) * entry;
    if (end > int64_t(dram_.size()))
      return invalid_argument(fmt::format("reads or writes DRAM bytes up to {}, past the {}-byte image", end,
                                          dram_.size()));
    return Status();
  }

  Status load(const Instruction& i, SimulationResult& r) {
    TG_RETURN_IF_ERROR(check_dram(i));
    int64_t entry = entry_bytes(i.buffer);
    r.dram_read_bytes += int64_t(i.y_size) * i.x_size * entry;
    if (!functional_ && i.buffer != Buffer::kUop) return Status();
    uint32_t width = i.x_pad0 + i.x_size + i.x_pad1, rows = i.y_pad0 + i.y_size + i.y_pad1;
    for (uint32_t y = 0; y < rows; ++y) {
      for (uint32_t x = 0; x < width; ++x) {
        int64_t index = int64_t(i.sram_base) + int64_t(y) * width + x;
        bool data = y >= i.y_pad0 && y < i.y_pad0 + i.y_size && x >= i.x_pad0 && x < i.x_pad0 + i.x_size;
        const uint8_t* from =
            data ? &dram_[size_t((int64_t(i.dram_base) + int64_t(y - i.y_pad0) * i.x_stride + (x - i.x_pad0)) * entry)]
                 : nullptr;
        uint8_t* to = nullptr;
        switch (i.buffer) {
          case Buffer::kUop: to = reinterpret_cast<uint8_t*>(&uop_[size_t(index)]); break;
          case Buffer::kWgt: to = reinterpret_cast<uint8_t*>(&wgt_[size_t(index * entry)]); break;
          case Buffer::kInp: to = reinterpret_cast<uint8_t*>(&inp_[size_t(index * entry)]); break;
          case Buffer::kAcc: to = reinterpret_cast<uint8_t*>(&acc_[size_t(index * c_.batch * c_.block_out)]); break;
          case Buffer::kOut: break;  // check_stream refuses it
        }
        if (from) std::memcpy(to, from, size_t(entry));  // DRAM and the host are little-endian
        else std::memset(to, 0, size_t(entry));
      }
    }
    return Status();
  }

  Status store(const Instruction& i, SimulationResult& r) {
    TG_RETURN_IF_ERROR(check_dram(i));
    int64_t entry = c_.out_entry_bytes();
    r.dram_write_bytes += int64_t(i.y_size) * i.x_size * entry;
    if (!functional_) return Status();
    for (uint32_t y = 0; y < i.y_size; ++y)
      for (uint32_t x = 0; x < i.x_size; ++x) {
        int64_t index = int64_t(i.sram_base) + int64_t(y) * i.x_size + x;
        std::memcpy(&dram_[size_t((int64_t(i.dram_base) + int64_t(y) * i.x_stride + x) * entry)],
                    &out_[size_t(index * entry)], size_t(entry));
      }
    return Status();
  }

  // The largest index an operand reaches: its largest micro-op field plus both loops'
  // last strides (the factors are unsigned).
  struct Reach {
    int64_t dst = 0, src = 0, wgt = 0;
  };
  Reach reach(const Instruction& i) const {
    Reach m;
    for (uint32_t u = i.uop_begin; u < i.uop_end; ++u) {
      Uop op = decode_uop(uop_[u]);
      m.dst = std::max<int64_t>(m.dst, op.dst);
      m.src = std::max<int64_t>(m.src, op.src);
      m.wgt = std::max<int64_t>(m.wgt, op.wgt);
    }
    int64_t o = i.iter_out - 1, n = i.iter_in - 1;
    m.dst += o * i.dst_out + n * i.dst_in;
    m.src += o * i.src_out + n * i.src_in;
    m.wgt += o * i.wgt_out + n * i.wgt_in;
    return m;
  }

  static Status within(const char* what, int64_t index, int64_t depth, const char* buffer) {
    if (index < depth) return Status();
    return invalid_argument(
        fmt::format("{} index {} is outside the {}-entry {} buffer", what, index, depth, buffer));
  }

  Status gemm(const Instruction& i, SimulationResult& r) {
    Reach m = reach(i);
    TG_RETURN_IF_ERROR(within("accumulator", m.dst, c_.acc_depth(), "ACC"));
    if (!i.reset) {
      TG_RETURN_IF_ERROR(within("input", m.src, c_.inp_depth(), "INP"));
      TG_RETURN_IF_ERROR(within("weight", m.wgt, c_.wgt_depth(), "WGT"));
      r.macs += i.iterations() * c_.macs_per_cycle();
    }
    r.gemm_iterations += i.iterations();
    if (!functional_) return Status();
    const int B = c_.batch, BI = c_.block_in, BO = c_.block_out;
    for (uint32_t o = 0; o < i.iter_out; ++o)
      for (uint32_t n = 0; n < i.iter_in; ++n)
        for (uint32_t u = i.uop_begin; u < i.uop_end; ++u) {
          Uop op = decode_uop(uop_[u]);
          int64_t a = op.dst + int64_t(o) * i.dst_out + int64_t(n) * i.dst_in;
          int32_t* acc = &acc_[size_t(a * B * BO)];
          int8_t* out = &out_[size_t(a * B * BO)];
          if (i.reset) {
            std::fill(acc, acc + B * BO, 0);
            std::fill(out, out + B * BO, 0);
            continue;
          }
          int64_t s = op.src + int64_t(o) * i.src_out + int64_t(n) * i.src_in;
          int64_t w = op.wgt + int64_t(o) * i.wgt_out + int64_t(n) * i.wgt_in;
          const int8_t* in = &inp_[size_t(s * B * BI)];
          const int8_t* wt = &wgt_[size_t(w * BO * BI)];
          for (int b = 0; b < B; ++b)
            for (int f = 0; f < BO; ++f) {
              int32_t sum = 0;
              for (int k = 0; k < BI; ++k) sum += int32_t(in[b * BI + k]) * int32_t(wt[f * BI + k]);
              // int32 wraps as the RTL's adder does.
              acc[b * BO + f] = int32_t(uint32_t(acc[b * BO + f]) + uint32_t(sum));
              out[b * BO + f] = int8_t(uint8_t(uint32_t(acc[b * BO + f])));
            }
        }
    return Status();
  }

  static int32_t apply(AluOp op, int32_t a, int32_t s) {
    switch (op) {
      case AluOp::kMin: return std::min(a, s);
      case AluOp::kMax: return std::max(a, s);
      case AluOp::kAdd: return int32_t(uint32_t(a) + uint32_t(s));
      case AluOp::kShr:
        if (s >= 0) return a >> std::min(s, 31);
        return int32_t(uint32_t(a) << std::min(-int64_t(s), int64_t(31)));
      case AluOp::kMul: return int32_t(uint32_t(a) * uint32_t(s));
      case AluOp::kClip: {
        int32_t low = ~s;  // -s - 1
        return a > s ? s : a < low ? low : a;
      }
      case AluOp::kRequant: {  // SHR (s & 31), CLIP 127, and MAX 0 if bit 5
        int32_t v = a >> (s & 31), low = s & 32 ? 0 : -128;
        return v > 127 ? 127 : v < low ? low : v;
      }
    }
    return a;
  }

  Status alu(const Instruction& i, SimulationResult& r) {
    Reach m = reach(i);
    TG_RETURN_IF_ERROR(within("destination accumulator", m.dst, c_.acc_depth(), "ACC"));
    if (!i.use_imm) TG_RETURN_IF_ERROR(within("source accumulator", m.src, c_.acc_depth(), "ACC"));
    r.alu_iterations += i.iterations();
    if (!functional_) return Status();
    const int lanes = c_.batch * c_.block_out;
    for (uint32_t o = 0; o < i.iter_out; ++o)
      for (uint32_t n = 0; n < i.iter_in; ++n)
        for (uint32_t u = i.uop_begin; u < i.uop_end; ++u) {
          Uop op = decode_uop(uop_[u]);
          int64_t d = op.dst + int64_t(o) * i.dst_out + int64_t(n) * i.dst_in;
          int64_t s = op.src + int64_t(o) * i.src_out + int64_t(n) * i.src_in;
          for (int l = 0; l < lanes; ++l) {
            int32_t src = i.use_imm ? i.imm : acc_[size_t(s * lanes + l)];
            int32_t v = apply(i.alu_op, acc_[size_t(d * lanes + l)], src);
            acc_[size_t(d * lanes + l)] = v;
            out_[size_t(d * lanes + l)] = int8_t(uint8_t(uint32_t(v)));
          }
        }
    return Status();
  }

  const AccelConfig& c_;
  std::vector<uint8_t>& dram_;
  bool functional_;
  std::vector<int8_t> inp_, wgt_, out_;
  std::vector<int32_t> acc_;
  std::vector<uint32_t> uop_;
};

// One of the three modules as the event loop sees it.
struct ModuleState {
  std::deque<size_t> queue;  // fetched, not started
  bool executing = false;
  bool draining = false;     // the instruction's work is done; it completes at `next`
  size_t current = 0;
  uint32_t row = 0;          // LOAD / STORE: the next row to request
  int64_t started = 0;       // LOAD / STORE: when it started, and its transfer cycles so far
  int64_t transferred = 0;
  std::deque<int64_t> in_flight;  // completion cycles of its latest requests
  int64_t next = kNever;     // its next event
  int64_t waiting_since = -1;  // for a token, since
};

class EventLoop {
 public:
  EventLoop(const AccelConfig& c, const std::vector<Instruction>& stream, Datapath& datapath)
      : c_(c), stream_(stream), datapath_(datapath), fetched_at_(stream.size(), 0) {}

  Expected<SimulationResult> run() {
    fetch_next_ = 0;
    while (!finished_) {
      // The earliest event; at a tie fetch, then load, compute, store.
      int agent = -1;
      int64_t t = kNever;
      if (fetch_next_ < t) agent = 0, t = fetch_next_;
      for (int m = 0; m < 3; ++m)
        if (modules_[m].next < t) agent = m + 1, t = modules_[m].next;
      if (agent < 0) return deadlock();
      Status s = agent == 0 ? fetch(t) : step(Module(agent - 1), t);
      if (!s.ok()) return s;
    }
    // Same-cycle completions of the other modules still count.
    for (int m = 0; m < 3; ++m)
      while (modules_[m].next <= result_.cycles && modules_[m].executing && modules_[m].draining)
        TG_RETURN_IF_ERROR(step(Module(m), modules_[m].next));
    for (int m = 0; m < 3; ++m) {
      const ModuleState& s = modules_[m];
      if (s.executing || !s.queue.empty())
        return failed_precondition(fmt::format(
            "FINISH completed at cycle {} while the {} module still had instruction {} ({}) to do: FINISH must "
            "pop a token from the work it waits for",
            result_.cycles, module_name(Module(m)), s.executing ? s.current : s.queue.front(),
            to_string(stream_[s.executing ? s.current : s.queue.front()])));
    }
    for (ModuleCycles& m : result_.modules) m.idle = result_.cycles - m.busy - m.dependency_stall - m.dram_stall;
    result_.instructions = int64_t(stream_.size());
    result_.seconds = double(result_.cycles) / (c_.clock_mhz * 1e6);
    return result_;
  }

 private:
  Status fetch(int64_t t) {
    if (next_instruction_ == stream_.size()) {
      fetch_next_ = kNever;
      return Status();
    }
    Module m = module_of(stream_[next_instruction_]);
    ModuleState& s = modules_[int(m)];
    if (int64_t(s.queue.size()) >= c_.command_queue_depth) {
      fetch_blocked_on_ = int(m);
      fetch_next_ = kNever;
      return Status();
    }
    fetched_at_[next_instruction_] = t;
    s.queue.push_back(next_instruction_++);
    if (!s.executing && s.queue.size() == 1) s.next = t + 1;  // it was idle, waiting for work
    last_fetch_ = t;
    fetch_next_ = t + 1;
    return Status();
  }

  Status step(Module m, int64_t t) {
    ModuleState& s = modules_[int(m)];
    ModuleCycles& cycles = result_.modules[int(m)];
    if (!s.executing) return start(m, t);
    const Instruction& i = stream_[s.current];
    if (s.draining) return complete(m, t);
    // The next row of a LOAD or STORE: a DRAM request. A module keeps at most
    // dram_max_outstanding requests in flight and issues at most one a cycle.
    int64_t bytes = int64_t(i.x_size) * datapath_.entry_bytes(i.buffer);
    int64_t transfer = (bytes + c_.dram_bytes_per_cycle - 1) / c_.dram_bytes_per_cycle;
    int64_t done = std::max(t + c_.dram_latency_cycles, dram_free_) + transfer;
    dram_free_ = done;
    cycles.busy += transfer;
    s.transferred += transfer;
    s.in_flight.push_back(done);
    if (int64_t(s.in_flight.size()) > c_.dram_max_outstanding) s.in_flight.pop_front();
    if (++s.row < i.y_size) {
      s.next = int64_t(s.in_flight.size()) < c_.dram_max_outstanding ? t + 1 : std::max(t + 1, s.in_flight.front());
      return Status();
    }
    int64_t pads = int64_t(i.y_pad0 + i.y_size + i.y_pad1) * (i.x_pad0 + i.x_size + i.x_pad1) -
                   int64_t(i.y_size) * i.x_size;
    cycles.busy += pads;  // zero entries, one a cycle
    s.draining = true;
    s.next = done + pads;  // the port serves in order: the last request completes last
    // What the instruction did not spend decoding, transferring or padding, it waited for DRAM.
    cycles.dram_stall += s.next - s.started - (1 + pads + s.transferred);
    return Status();
  }

  Status start(Module m, int64_t t) {
    ModuleState& s = modules_[int(m)];
    ModuleCycles& cycles = result_.modules[int(m)];
    size_t n = s.queue.front();
    const Instruction& i = stream_[n];
    for (auto [flag, prev] : {std::pair{i.pop_prev, true}, std::pair{i.pop_next, false}}) {
      if (flag && tokens_[popped_queue(m, prev)] == 0) {
        if (s.waiting_since < 0) s.waiting_since = t;
        s.next = kNever;
        return Status();
      }
    }
    if (s.waiting_since >= 0) cycles.dependency_stall += t - s.waiting_since;
    s.waiting_since = -1;
    if (i.pop_prev) --tokens_[popped_queue(m, true)];
    if (i.pop_next) --tokens_[popped_queue(m, false)];
    s.queue.pop_front();
    if (fetch_blocked_on_ == int(m)) {
      fetch_blocked_on_ = -1;
      fetch_next_ = std::max(t + 1, last_fetch_ + 1);
    }
    Status status = datapath_.execute(i, result_);
    if (!status.ok()) return status.with_context(fmt::format("instruction {} ({})", n, to_string(i)));
    ++cycles.instructions;
    s.executing = true;
    s.current = n;
    cycles.busy += 1;  // decode
    if (i.opcode == Opcode::kLoad || i.opcode == Opcode::kStore) {
      s.row = 0;
      s.started = t;
      s.transferred = 0;
      s.in_flight.clear();
      s.draining = false;
      s.next = t + 1;
      return Status();
    }
    int64_t work = i.opcode == Opcode::kGemm  ? i.iterations() + c_.gemm_pipeline_cycles
                   : i.opcode == Opcode::kAlu ? i.iterations() + c_.alu_pipeline_cycles
                                              : 0;
    cycles.busy += work;
    s.draining = true;
    s.next = t + 1 + work;
    return Status();
  }

  Status complete(Module m, int64_t t) {
    ModuleState& s = modules_[int(m)];
    const Instruction& i = stream_[s.current];
    for (auto [flag, prev] : {std::pair{i.push_prev, true}, std::pair{i.push_next, false}}) {
      if (!flag) continue;
      int q = pushed_queue(m, prev);
      ++tokens_[q];
      ModuleState& consumer = modules_[int(consumer_of(q))];
      if (consumer.waiting_since >= 0) consumer.next = t;
    }
    s.executing = false;
    s.draining = false;
    if (i.opcode == Opcode::kFinish) {
      finished_ = true;
      result_.cycles = t;
    }
    s.next = s.queue.empty() ? kNever : std::max(t, fetched_at_[s.queue.front()] + 1);
    return Status();
  }

  Status deadlock() const {
    std::string waits;
    for (int m = 0; m < 3; ++m) {
      const ModuleState& s = modules_[m];
      if (s.waiting_since < 0) continue;
      size_t n = s.queue.front();
      waits += fmt::format("; the {} module waits since cycle {} with instruction {} ({})", module_name(Module(m)),
                           s.waiting_since, n, to_string(stream_[n]));
    }
    if (fetch_blocked_on_ >= 0)
      waits += fmt::format("; fetch waits for room in the {} module's command queue (depth {}) with instruction {}",
                           module_name(Module(fetch_blocked_on_)), c_.command_queue_depth, next_instruction_);
    return failed_precondition("the stream deadlocks" + waits);
  }

  const AccelConfig& c_;
  const std::vector<Instruction>& stream_;
  Datapath& datapath_;
  std::vector<int64_t> fetched_at_;
  std::array<ModuleState, 3> modules_;
  std::array<int64_t, kTokenQueues> tokens_{};
  size_t next_instruction_ = 0;
  int64_t fetch_next_ = 0, last_fetch_ = -1;
  int fetch_blocked_on_ = -1;
  int64_t dram_free_ = 0;
  bool finished_ = false;
  SimulationResult result_;
};

}  // namespace

Expected<SimulationResult> simulate(const AccelConfig& config, const std::vector<Instruction>& stream,
                                    std::vector<uint8_t>& dram, const SimulateOptions& options) {
  TG_RETURN_IF_ERROR(validate(config));
  TG_RETURN_IF_ERROR(check_stream(config, stream));
  Datapath datapath(config, dram, options.functional);
  return EventLoop(config, stream, datapath).run();
}

std::string summary(const SimulationResult& r, const AccelConfig& c) {
  std::string s = fmt::format("cycles {} ({:.2f} us at {} MHz), {} instructions, {} MACs", r.cycles, r.seconds * 1e6,
                              c.clock_mhz, r.instructions, r.macs);
  for (int m = 0; m < 3; ++m) {
    const ModuleCycles& mc = r.modules[m];
    double total = std::max<double>(1, double(r.cycles));
    s += fmt::format("; {}: busy {:.0f}%, dependency {:.0f}%, dram {:.0f}%", module_name(Module(m)),
                     100 * mc.busy / total, 100 * mc.dependency_stall / total, 100 * mc.dram_stall / total);
  }
  return s;
}

}  // namespace tensorgym::fpga
