// The accelerator's parameters: the GEMM core's shape, the on-chip buffers, the clock,
// DRAM and the queues. One configuration names one concrete design; the compiler, both
// simulators and the RTL read the same one (codegen/fpga/configs/*.json, docs/fpga.md).
#pragma once

#include <cstdint>
#include <string>

#include "support/status.h"

namespace tensorgym::fpga {

struct AccelConfig {
  std::string name = "zynq7020-1x16x16";
  // The GEMM core: BATCH x BLOCK_IN x BLOCK_OUT int8 multiply-accumulates into int32
  // each cycle.
  int batch = 1;
  int block_in = 16;
  int block_out = 16;
  // On-chip buffers, in bytes (each a whole number of entries; see *_entry_bytes).
  int64_t inp_buffer_bytes = 32 << 10;
  int64_t wgt_buffer_bytes = 256 << 10;
  int64_t acc_buffer_bytes = 128 << 10;
  int64_t uop_buffer_bytes = 32 << 10;
  double clock_mhz = 100;
  // DRAM: one port shared by the three modules, first come first served; a request of
  // B bytes issued at t completes at max(t + dram_latency_cycles, the port free) +
  // ceil(B / dram_bytes_per_cycle), the port busy until then.
  int dram_bytes_per_cycle = 8;
  int dram_latency_cycles = 32;
  // Row requests a module may have in flight (AXI's outstanding transactions); it
  // issues at most one a cycle. 1: each row waits for the previous one's data.
  int dram_max_outstanding = 8;
  // Cycles from a GEMM / ALU instruction's last iteration to its last write.
  int gemm_pipeline_cycles = 4;
  int alu_pipeline_cycles = 3;
  // Instructions the fetch module may queue ahead of each module.
  int command_queue_depth = 64;
  // The part the design is synthesized for, and its budget (yosys reports against it).
  std::string fpga_part = "xc7z020clg400-1";

  // One entry of each buffer: what one index addresses.
  int64_t inp_entry_bytes() const { return int64_t(batch) * block_in; }               // int8
  int64_t wgt_entry_bytes() const { return int64_t(block_out) * block_in; }           // int8
  int64_t acc_entry_bytes() const { return int64_t(batch) * block_out * 4; }          // int32
  int64_t out_entry_bytes() const { return int64_t(batch) * block_out; }              // int8
  static constexpr int64_t kUopBytes = 4;
  int64_t inp_depth() const { return inp_buffer_bytes / inp_entry_bytes(); }
  int64_t wgt_depth() const { return wgt_buffer_bytes / wgt_entry_bytes(); }
  int64_t acc_depth() const { return acc_buffer_bytes / acc_entry_bytes(); }  // OUT has as many
  int64_t uop_depth() const { return uop_buffer_bytes / kUopBytes; }
  // Multiply-accumulates per GEMM iteration.
  int64_t macs_per_cycle() const { return int64_t(batch) * block_in * block_out; }
};

// Whether the parameters make a design the ISA can address (isa.h): powers of two,
// whole entries, buffers within the instruction fields' ranges. Says which one is wrong.
Status validate(const AccelConfig& config);

// The default design (the values above).
const AccelConfig& default_accel_config();

// Reads a configuration from JSON text: every key of AccelConfig by name; a missing key
// keeps its default, an unknown key is an error (a misspelt parameter must not be ignored).
Expected<AccelConfig> parse_accel_config(const std::string& json_text);
Expected<AccelConfig> load_accel_config(const std::string& path);
// The file's configuration, or the default design where `path` is empty (command lines).
Expected<AccelConfig> accel_config_or_default(const std::string& path);
std::string to_json(const AccelConfig& config);

}  // namespace tensorgym::fpga
