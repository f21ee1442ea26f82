#include "codegen/fpga/accel_config.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "codegen/fpga/isa.h"

namespace tensorgym::fpga {
namespace {

using Json = nlohmann::ordered_json;

bool power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

Status check_buffer(const char* name, int64_t bytes, int64_t entry_bytes, int64_t max_depth) {
  if (bytes <= 0 || bytes % entry_bytes != 0)
    return invalid_argument(fmt::format("{}_buffer_bytes = {} is not a positive multiple of its {}-byte entry", name,
                                        bytes, entry_bytes));
  if (bytes / entry_bytes > max_depth)
    return invalid_argument(fmt::format("{}_buffer_bytes = {} holds {} entries; the ISA addresses at most {}", name,
                                        bytes, bytes / entry_bytes, max_depth));
  return Status();
}

// The keys, in one place for parsing and printing.
template <class F>
void for_each_field(AccelConfig& c, F&& f) {
  f("name", c.name);
  f("batch", c.batch);
  f("block_in", c.block_in);
  f("block_out", c.block_out);
  f("inp_buffer_bytes", c.inp_buffer_bytes);
  f("wgt_buffer_bytes", c.wgt_buffer_bytes);
  f("acc_buffer_bytes", c.acc_buffer_bytes);
  f("uop_buffer_bytes", c.uop_buffer_bytes);
  f("clock_mhz", c.clock_mhz);
  f("dram_bytes_per_cycle", c.dram_bytes_per_cycle);
  f("dram_latency_cycles", c.dram_latency_cycles);
  f("dram_max_outstanding", c.dram_max_outstanding);
  f("gemm_pipeline_cycles", c.gemm_pipeline_cycles);
  f("alu_pipeline_cycles", c.alu_pipeline_cycles);
  f("command_queue_depth", c.command_queue_depth);
  f("fpga_part", c.fpga_part);
}

}  // namespace

Status validate(const AccelConfig& c) {
  if (!power_of_two(c.batch) || !power_of_two(c.block_in) || !power_of_two(c.block_out))
    return invalid_argument(fmt::format("batch {}, block_in {} and block_out {} must be powers of two", c.batch,
                                        c.block_in, c.block_out));
  if (c.block_in < 2 || c.block_out < 2 || c.block_in > 64 || c.block_out > 64 || c.batch > 16)
    return invalid_argument(fmt::format("the GEMM core {}x{}x{} is outside 1..16 x 2..64 x 2..64", c.batch,
                                        c.block_in, c.block_out));
  TG_RETURN_IF_ERROR(check_buffer("inp", c.inp_buffer_bytes, c.inp_entry_bytes(), kMaxInpDepth));
  TG_RETURN_IF_ERROR(check_buffer("wgt", c.wgt_buffer_bytes, c.wgt_entry_bytes(), kMaxWgtDepth));
  TG_RETURN_IF_ERROR(check_buffer("acc", c.acc_buffer_bytes, c.acc_entry_bytes(), kMaxAccDepth));
  TG_RETURN_IF_ERROR(check_buffer("uop", c.uop_buffer_bytes, AccelConfig::kUopBytes, kMaxUopDepth));
  if (!power_of_two(c.inp_depth()) || !power_of_two(c.wgt_depth()) || !power_of_two(c.acc_depth()) ||
      !power_of_two(c.uop_depth()))
    return invalid_argument("every buffer must hold a power-of-two number of entries (the RTL's address width)");
  if (!(c.clock_mhz > 0 && c.clock_mhz <= 1000))
    return invalid_argument(fmt::format("clock_mhz = {} is outside (0, 1000]", c.clock_mhz));
  if (!power_of_two(c.dram_bytes_per_cycle) || c.dram_bytes_per_cycle > 64)
    return invalid_argument(fmt::format("dram_bytes_per_cycle = {} must be a power of two up to 64",
                                        c.dram_bytes_per_cycle));
  if (c.dram_latency_cycles < 1 || c.dram_latency_cycles > 4096)
    return invalid_argument(fmt::format("dram_latency_cycles = {} is outside 1..4096", c.dram_latency_cycles));
  if (c.dram_max_outstanding < 1 || c.dram_max_outstanding > 64)
    return invalid_argument(fmt::format("dram_max_outstanding = {} is outside 1..64", c.dram_max_outstanding));
  if (c.gemm_pipeline_cycles < 1 || c.gemm_pipeline_cycles > 64 || c.alu_pipeline_cycles < 1 ||
      c.alu_pipeline_cycles > 64)
    return invalid_argument("gemm_pipeline_cycles and alu_pipeline_cycles must be in 1..64");
  if (!power_of_two(c.command_queue_depth) || c.command_queue_depth > 4096)
    return invalid_argument(fmt::format("command_queue_depth = {} must be a power of two up to 4096",
                                        c.command_queue_depth));
  return Status();
}

const AccelConfig& default_accel_config() {
  static const AccelConfig config;
  return config;
}

Expected<AccelConfig> parse_accel_config(const std::string& json_text) {
  Json j = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return invalid_argument("an accelerator configuration is a JSON object");
  AccelConfig c;
  std::string error;
  size_t known = 0;
  for_each_field(c, [&](const char* key, auto& field) {
    auto it = j.find(key);
    if (it == j.end() || !error.empty()) return;
    ++known;
    using T = std::decay_t<decltype(field)>;
    if constexpr (std::is_same_v<T, std::string>) {
      if (!it->is_string()) error = fmt::format("\"{}\" must be a string", key);
      else field = it->template get<std::string>();
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!it->is_number()) error = fmt::format("\"{}\" must be a number", key);
      else field = it->template get<T>();
    } else {
      if (!it->is_number_integer()) error = fmt::format("\"{}\" must be an integer", key);
      else field = T(it->template get<int64_t>());
    }
  });
  if (!error.empty()) return invalid_argument(error);
  if (known != j.size()) {
    AccelConfig probe;
    for (auto it = j.begin(); it != j.end(); ++it) {
      bool found = false;
      for_each_field(probe, [&](const char* key, auto&) { found = found || it.key() == key; });
      if (!found) return invalid_argument(fmt::format("unknown accelerator parameter \"{}\"", it.key()));
    }
  }
  TG_RETURN_IF_ERROR(validate(c));
  return c;
}

Expected<AccelConfig> load_accel_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) return not_found(fmt::format("cannot read the accelerator configuration {}", path));
  std::stringstream text;
  text << in.rdbuf();
  Expected<AccelConfig> c = parse_accel_config(text.str());
  if (!c.ok()) return c.status().with_context(path);
  return c;
}

Expected<AccelConfig> accel_config_or_default(const std::string& path) {
  if (path.empty()) return default_accel_config();
  return load_accel_config(path);
}

std::string to_json(const AccelConfig& config) {
  AccelConfig c = config;
  Json j = Json::object();
  for_each_field(c, [&](const char* key, auto& field) { j[key] = field; });
  return j.dump(2);
}

}  // namespace tensorgym::fpga
