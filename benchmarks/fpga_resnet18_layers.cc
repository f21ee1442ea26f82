// ResNet-18's convolutions on the accelerator in fsim: for each layer the cycles of a
// fixed rule's tiling with one and two virtual threads, the best of every legal tiling
// (timing-only, exhaustive), and the layer's roofline bound. Cycles are the simulator's
// (deterministic); the search's wall time is this machine's.
//
//   build/bin/fpga_resnet18_layers [--config codegen/fpga/configs/X.json] [--check]
//
// --check also runs each rule tiling functionally and compares it with the reference.
#include <fmt/format.h>

#include <chrono>
#include <CLI/CLI.hpp>
#include <string>

#include "codegen/fpga/conv2d_stream.h"
#include "codegen/fpga/fsim.h"

namespace tensorgym::fpga {
namespace {

Expected<int64_t> cycles_of(const AccelConfig& c, const Conv2dLayer& l, const Conv2dTiling& t) {
  TG_ASSIGN_OR_RETURN(SampleProgram p, make_conv2d_program(c, l, t, 1, false));
  TG_ASSIGN_OR_RETURN(SimulationResult r, simulate(c, p.stream, p.dram, SimulateOptions{false}));
  return r.cycles;
}

int run(const AccelConfig& c, bool check) {
  fmt::print("{} ({}x{}x{}, {} B/cycle DRAM, at {} MHz)\n\n", c.name, c.batch, c.block_in, c.block_out,
             c.dram_bytes_per_cycle, c.clock_mhz);
  fmt::print("| layer | rule tiling | vt1 cycles | vt2 cycles | best tiling (of N) | best cycles | bound "
             "(compute / DRAM) | best / bound | search s |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  int failures = 0;
  for (const Conv2dLayer& l : resnet18_layers()) {
    Expected<Conv2dTiling> expert = row_tiling(c, l);
    if (!expert.ok()) {
      fmt::print("| {} | {} |\n", l.name, expert.status().to_string());
      ++failures;
      continue;
    }
    Conv2dTiling rule = *expert, one = rule;
    one.virtual_threads = 1;
    Expected<int64_t> two_cycles = cycles_of(c, l, rule), one_cycles = cycles_of(c, l, one);
    if (!two_cycles.ok() || !one_cycles.ok()) {
      fmt::print("| {} | {} | {} |\n", l.name, to_string(rule), two_cycles.status().to_string());
      ++failures;
      continue;
    }
    auto t0 = std::chrono::steady_clock::now();
    std::vector<Conv2dTiling> all = legal_tilings(c, l);
    Conv2dTiling best = rule;
    int64_t best_cycles = *two_cycles;
    for (const Conv2dTiling& t : all) {
      Expected<int64_t> cycles = cycles_of(c, l, t);
      if (cycles.ok() && *cycles < best_cycles) best = t, best_cycles = *cycles;
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    Roofline bound = roofline(c, l);
    fmt::print("| {} | {} | {} | {} | {} ({}) | {} | {} ({} / {}) | {:.2f} | {:.1f} |\n", l.name, to_string(rule),
               *one_cycles, *two_cycles, to_string(best), all.size(), best_cycles, bound.bound(),
               bound.compute_cycles, bound.dram_cycles, double(best_cycles) / double(bound.bound()), seconds);
    if (check) {
      Expected<SampleProgram> p = make_conv2d_program(c, l, rule, 1);
      std::vector<uint8_t> dram = p->dram;
      Expected<SimulationResult> r = simulate(c, p->stream, dram);
      bool ok = r.ok() && output_of(*p, dram) == p->expected;
      if (!ok) ++failures;
      fmt::print("|  | functional check of the rule tiling: {} |\n", ok ? "matches the reference" : "MISMATCH");
    }
  }
  return failures ? 1 : 0;
}

}  // namespace
}  // namespace tensorgym::fpga

int main(int argc, char** argv) {
  using namespace tensorgym::fpga;
  CLI::App app{"fpga_resnet18_layers"};
  std::string config_path;
  app.add_option("--config", config_path, "an accelerator configuration (JSON); default: the built-in one");
  bool check = false;
  app.add_flag("--check", check, "run the rule tilings functionally against the reference");
  CLI11_PARSE(app, argc, argv);
  tensorgym::Expected<AccelConfig> config = accel_config_or_default(config_path);
  if (!config.ok()) {
    fmt::print(stderr, "{}\n", config.status().to_string());
    return 2;
  }
  return run(*config, check);
}
