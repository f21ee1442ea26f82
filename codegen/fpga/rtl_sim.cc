#include "codegen/fpga/rtl_sim.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>

#ifdef TENSORGYM_HAVE_RTL
#include <verilated.h>

#include "rtl_models.h"
#endif

namespace tensorgym::fpga {
namespace {

#ifdef TENSORGYM_HAVE_RTL

// Whether two configurations describe the same hardware (DRAM is the testbench's).
bool same_design(const AccelConfig& a, const AccelConfig& b) {
  return a.batch == b.batch && a.block_in == b.block_in && a.block_out == b.block_out &&
         a.inp_buffer_bytes == b.inp_buffer_bytes && a.wgt_buffer_bytes == b.wgt_buffer_bytes &&
         a.acc_buffer_bytes == b.acc_buffer_bytes && a.uop_buffer_bytes == b.uop_buffer_bytes &&
         a.gemm_pipeline_cycles == b.gemm_pipeline_cycles && a.alu_pipeline_cycles == b.alu_pipeline_cycles &&
         a.command_queue_depth == b.command_queue_depth;
}

// The RTL's row engines are sized for the built design's dram_max_outstanding; a run
// may allow fewer (the model takes the limit as an input, as a control register).
Status too_many_in_flight(const AccelConfig& config, const AccelConfig& built) {
  return unimplemented(fmt::format(
      "configuration '{}' allows {} DRAM requests in flight (dram_max_outstanding); the RTL model of design '{}' "
      "was built for at most {}",
      config.name, config.dram_max_outstanding, built.name, built.dram_max_outstanding));
}

// Bytes into and out of Verilator's port types, little-endian (byte i at bits 8i..8i+7).
template <class T>
void put_bytes(T& signal, const uint8_t* bytes, size_t n) {
  uint64_t v = 0;
  std::memcpy(&v, bytes, std::min(n, sizeof v));
  signal = T(v);
}
template <std::size_t N>
void put_bytes(VlWide<N>& signal, const uint8_t* bytes, size_t n) {
  uint32_t words[N] = {};
  std::memcpy(words, bytes, std::min(n, sizeof words));
  for (std::size_t w = 0; w < N; ++w) signal[w] = words[w];
}
template <class T>
void get_bytes(const T& signal, uint8_t* bytes, size_t n) {
  uint64_t v = signal;
  std::memcpy(bytes, &v, std::min(n, sizeof v));
}
template <std::size_t N>
void get_bytes(const VlWide<N>& signal, uint8_t* bytes, size_t n) {
  uint32_t words[N];
  for (std::size_t w = 0; w < N; ++w) words[w] = signal[w];
  std::memcpy(bytes, words, std::min(n, sizeof words));
}

// One outstanding row request of a module.
struct Request {
  bool write = false;
  int64_t issued = 0, done = 0;  // completes at the end of cycle done - 1
  uint64_t addr = 0;
  int64_t bytes = 0, beat_bytes = 0, beats = 0;
  std::vector<uint8_t> data;  // read: the row; write: what the store module sent
};

template <class V>
class Testbench {
 public:
  Testbench(const AccelConfig& c, const std::vector<Instruction>& stream, std::vector<uint8_t>& dram)
      : c_(c), stream_(stream), dram_(dram) {
    top_ = std::make_unique<V>(&context_, "accel");
  }

  Expected<SimulationResult> run(const std::vector<uint8_t>& code, const RtlOptions& options) {
    V& t = *top_;
    t.dram_max_outstanding = uint8_t(c_.dram_max_outstanding);
    t.rst = 1;
    t.clk = 0;
    t.eval();
    t.clk = 1;
    t.eval();
    t.rst = 0;
    size_t next = 0;
    const size_t n = stream_.size();
    for (int64_t cycle = 0; cycle < options.max_cycles; ++cycle) {
      t.clk = 0;
      t.insn_valid = next < n;
      if (next < n) put_bytes(t.insn_data, &code[next * 16], 16);
      drive(0, cycle, t.ld_resp_done, t.ld_rd_valid, t.ld_rd_data);
      drive(1, cycle, t.cp_resp_done, t.cp_rd_valid, t.cp_rd_data);
      uint8_t no_data = 0;
      uint64_t unused = 0;
      drive(2, cycle, t.st_resp_done, no_data, unused);
      t.eval();
      if (t.finished) {
        finish_breakdown(cycle);
        if (!t.idle)
          return failed_precondition(fmt::format(
              "FINISH completed at cycle {} while another module still worked or had instructions queued: FINISH "
              "must pop a token from the work it waits for",
              cycle));
        result_.cycles = cycle;
        result_.seconds = double(cycle) / (c_.clock_mhz * 1e6);
        result_.instructions = int64_t(n);
        return result_;
      }
      if (t.insn_valid && t.insn_ready) ++next;
      observe(0, t.ld_stat);
      observe(1, t.cp_stat);
      observe(2, t.st_stat);
      TG_RETURN_IF_ERROR(request(0, cycle, t.ld_req_valid, t.ld_req_write, t.ld_req_addr, t.ld_req_bytes,
                                 t.ld_req_buf));
      TG_RETURN_IF_ERROR(request(1, cycle, t.cp_req_valid, t.cp_req_write, t.cp_req_addr, t.cp_req_bytes,
                                 t.cp_req_buf));
      TG_RETURN_IF_ERROR(request(2, cycle, t.st_req_valid, t.st_req_write, t.st_req_addr, t.st_req_bytes,
                                 t.st_req_buf));
      if (t.st_wr_valid) TG_RETURN_IF_ERROR(take_store_entry(cycle, t.st_wr_data));
      TG_RETURN_IF_ERROR(retire(cycle));
      t.clk = 1;
      t.eval();
    }
    return Status(StatusCode::kDeadlineExceeded, fmt::format("the RTL did not finish within {} cycles", options.max_cycles));
  }

 private:
  // The inputs of port `p` for `cycle`: its oldest request's completion in the cycle
  // before `done`, a LOAD's beats in the cycles before that (one per cycle, the last at
  // done - 1). Requests complete in order, and a request's beats come after the
  // previous one's completion (request() checks), so only the oldest drives the port.
  template <class D>
  void drive(int p, int64_t cycle, uint8_t& resp_done, uint8_t& rd_valid, D& rd_data) {
    resp_done = 0;
    rd_valid = 0;
    if (queue_[p].empty()) return;
    const Request& r = queue_[p].front();
    resp_done = cycle == r.done - 1;
    int64_t k = cycle - (r.done - r.beats);
    rd_valid = !r.write && k >= 0 && k < r.beats;
    if (rd_valid) {
      int64_t from = k * r.beat_bytes;
      put_bytes(rd_data, &r.data[size_t(from)], size_t(std::min(r.beat_bytes, r.bytes - from)));
    }
  }

  int64_t beat_bytes(int buffer) const {
    switch (Buffer(buffer)) {
      case Buffer::kUop: return 8;  // two micro-ops a beat
      case Buffer::kWgt: return c_.wgt_entry_bytes();
      case Buffer::kInp: return c_.inp_entry_bytes();
      case Buffer::kAcc: return c_.acc_entry_bytes();
      case Buffer::kOut: return c_.out_entry_bytes();
    }
    return 1;
  }

  Status request(int p, int64_t cycle, uint8_t valid, uint8_t write, uint64_t addr, uint32_t bytes, uint8_t buffer) {
    if (!valid) return Status();
    std::deque<Request>& queue = queue_[p];
    if (int64_t(queue.size()) >= c_.dram_max_outstanding)
      return internal_error(fmt::format("the {} module requested DRAM at cycle {} with {} requests in flight, the "
                                        "most dram_max_outstanding allows",
                                        module_name(Module(p)), cycle, queue.size()));
    if (addr + bytes > dram_.size())
      return invalid_argument(fmt::format("the {} module's request at cycle {} reaches DRAM byte {}, past the "
                                          "{}-byte image",
                                          module_name(Module(p)), cycle, addr + bytes, dram_.size()));
    int64_t transfer = (int64_t(bytes) + c_.dram_bytes_per_cycle - 1) / c_.dram_bytes_per_cycle;
    transfer_cycles_[p] += transfer;
    Request r;
    r.write = write;
    r.issued = cycle;
    r.done = std::max(cycle + c_.dram_latency_cycles, port_free_) + transfer;
    port_free_ = r.done;
    r.addr = addr;
    r.bytes = bytes;
    r.beat_bytes = beat_bytes(buffer);
    r.beats = (r.bytes + r.beat_bytes - 1) / r.beat_bytes;
    if (r.done - r.beats <= cycle || r.done - 1 <= cycle || (!queue.empty() && r.done - r.beats < queue.back().done))
      return unimplemented(fmt::format("a row of {} bytes in {}-byte beats does not fit between its request (or the "
                                       "previous row's completion) and its completion (DRAM latency {}, {} bytes a "
                                       "cycle)",
                                       bytes, r.beat_bytes, c_.dram_latency_cycles, c_.dram_bytes_per_cycle));
    if (write) {
      result_.dram_write_bytes += bytes;
    } else {
      result_.dram_read_bytes += bytes;
      r.data.assign(dram_.begin() + int64_t(addr), dram_.begin() + int64_t(addr + bytes));
    }
    queue.push_back(std::move(r));
    return Status();
  }

  // A module's activity in a cycle (the RTL's stat: bit 0 waits for a token, 1 decodes,
  // 2 iterates or drains a GEMM / ALU, 3 requests rows or waits for them, 4 writes a
  // zero entry), counted as fsim's ModuleCycles.
  void observe(int p, uint8_t stat) {
    ModuleCycles& m = result_.modules[p];
    m.dependency_stall += stat & 1;
    m.instructions += (stat >> 1) & 1;
    m.busy += ((stat >> 1) & 1) + ((stat >> 2) & 1) + ((stat >> 4) & 1);
    xfer_cycles_[p] += (stat >> 3) & 1;
  }

  // Of the cycles a LOAD or STORE spent on its rows, the port's transfers are busy and
  // the rest waited for DRAM (latency, other modules' transfers), as fsim counts them.
  void finish_breakdown(int64_t cycles) {
    for (int p = 0; p < 3; ++p) {
      ModuleCycles& m = result_.modules[p];
      m.busy += transfer_cycles_[p];
      m.dram_stall = xfer_cycles_[p] - transfer_cycles_[p];
      m.idle = cycles - m.busy - m.dependency_stall - m.dram_stall;
    }
  }

  // An OUT entry the store module sent: it belongs to the oldest row still short of data.
  template <class D>
  Status take_store_entry(int64_t cycle, const D& wr_data) {
    for (Request& r : queue_[2]) {
      if (int64_t(r.data.size()) >= r.bytes) continue;
      size_t at = r.data.size();
      r.data.resize(at + size_t(c_.out_entry_bytes()));
      get_bytes(wr_data, &r.data[at], size_t(c_.out_entry_bytes()));
      return Status();
    }
    return internal_error(fmt::format("the store module sent an entry at cycle {} with no row request to take it",
                                      cycle));
  }

  // The requests that complete at the end of `cycle`; a STORE's row lands in DRAM.
  Status retire(int64_t cycle) {
    for (std::deque<Request>& queue : queue_) {
      if (queue.empty() || cycle != queue.front().done - 1) continue;
      const Request& r = queue.front();
      if (r.write) {
        if (int64_t(r.data.size()) != r.bytes)
          return internal_error(fmt::format("the store module sent {} of a row's {} bytes by cycle {}", r.data.size(),
                                            r.bytes, cycle));
        std::memcpy(&dram_[r.addr], r.data.data(), r.data.size());
      }
      queue.pop_front();
    }
    return Status();
  }

  const AccelConfig& c_;
  const std::vector<Instruction>& stream_;
  std::vector<uint8_t>& dram_;
  VerilatedContext context_;
  std::unique_ptr<V> top_;
  std::deque<Request> queue_[3];  // each module's requests in flight, oldest first
  int64_t port_free_ = 0;
  int64_t transfer_cycles_[3] = {}, xfer_cycles_[3] = {};
  SimulationResult result_;
};

#endif  // TENSORGYM_HAVE_RTL

}  // namespace

std::vector<std::string> rtl_config_files() {
  std::vector<std::string> files;
#ifdef TENSORGYM_HAVE_RTL
#define TG_RTL_FILE(model, file) files.push_back(file);
  TG_RTL_MODELS(TG_RTL_FILE)
#undef TG_RTL_FILE
#endif
  return files;
}

Expected<SimulationResult> simulate_rtl(const AccelConfig& config, const std::vector<Instruction>& stream,
                                        std::vector<uint8_t>& dram, const RtlOptions& options) {
  TG_RETURN_IF_ERROR(validate(config));
  TG_RETURN_IF_ERROR(check_stream(config, stream));
  TG_ASSIGN_OR_RETURN(std::vector<uint8_t> code, encode_stream(stream));
#ifdef TENSORGYM_HAVE_RTL
#define TG_RTL_RUN(model, file)                                                 \
  {                                                                             \
    Expected<AccelConfig> built = load_accel_config(file);                     \
    if (built.ok() && same_design(*built, config)) {                           \
      if (config.dram_max_outstanding > built->dram_max_outstanding)           \
        return too_many_in_flight(config, *built);                             \
      return Testbench<model>(config, stream, dram).run(code, options);        \
    }                                                                          \
  }
  TG_RTL_MODELS(TG_RTL_RUN)
#undef TG_RTL_RUN
  std::string built;
  for (const std::string& f : rtl_config_files()) built += (built.empty() ? "" : ", ") + f;
  return unimplemented(fmt::format("no RTL model was built for the design of configuration '{}' (built: {})",
                                   config.name, built.empty() ? "none" : built));
#else
  (void)options;
  return unimplemented("this build has no RTL models (Verilator was not found at configure time)");
#endif
}

}  // namespace tensorgym::fpga
