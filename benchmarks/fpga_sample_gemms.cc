// The accelerator's sample GEMM streams in fsim: cycles with one and two slots (double
// buffering), module utilization, and how fast the simulator runs them, functional and
// timing-only. Deterministic cycles; the wall times are this machine's.
//
//   build/bin/fpga_sample_gemms [--config codegen/fpga/configs/X.json]
#include <fmt/format.h>

#include <chrono>
#include <CLI/CLI.hpp>
#include <string>

#include "codegen/fpga/fsim.h"
#include "codegen/fpga/sample_programs.h"

namespace tensorgym::fpga {
namespace {

double milliseconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

int run(const AccelConfig& c) {
  fmt::print("{} ({}x{}x{} at {} MHz)\n\n", c.name, c.batch, c.block_in, c.block_out, c.clock_mhz);
  fmt::print("| GEMM MxNxK | slots | cycles | MAC utilization | compute busy | load busy | store waits DRAM | "
             "fsim functional | fsim timing-only | correct |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (auto [m, n, k] : {std::tuple{16, 256, 256}, std::tuple{32, 256, 128}, std::tuple{64, 512, 128}}) {
    for (int slots : {1, 2}) {
      GemmProgramOptions o;
      o.m = m - m % c.batch, o.n = n - n % c.block_out, o.k = k - k % c.block_in;
      o.slots = slots;
      Expected<SampleProgram> p = make_gemm_program(c, o);
      if (!p.ok()) {
        fmt::print("| {}x{}x{} | {} | {} |\n", o.m, o.n, o.k, slots, p.status().to_string());
        continue;
      }
      std::vector<uint8_t> dram = p->dram;
      auto t0 = std::chrono::steady_clock::now();
      Expected<SimulationResult> r = simulate(c, p->stream, dram);
      auto t1 = std::chrono::steady_clock::now();
      std::vector<uint8_t> timing_dram = p->dram;
      const int reps = 20;
      for (int i = 0; i < reps; ++i) (void)simulate(c, p->stream, timing_dram, SimulateOptions{false});
      auto t2 = std::chrono::steady_clock::now();
      if (!r.ok()) {
        fmt::print("| {}x{}x{} | {} | {} |\n", o.m, o.n, o.k, slots, r.status().to_string());
        return 1;
      }
      double cycles = double(r->cycles);
      fmt::print("| {}x{}x{} | {} | {} | {:.0f}% | {:.0f}% | {:.0f}% | {:.0f}% | {:.2f} ms | {:.3f} ms | {} |\n", o.m,
                 o.n, o.k, slots, r->cycles, 100.0 * double(r->macs) / double(c.macs_per_cycle()) / cycles,
                 100 * r->of(Module::kCompute).busy / cycles, 100 * r->of(Module::kLoad).busy / cycles,
                 100 * r->of(Module::kStore).dram_stall / cycles, milliseconds(t1 - t0),
                 milliseconds(t2 - t1) / reps, output_of(*p, dram) == p->expected ? "yes" : "NO");
    }
  }
  return 0;
}

}  // namespace
}  // namespace tensorgym::fpga

int main(int argc, char** argv) {
  using namespace tensorgym::fpga;
  CLI::App app{"fpga_sample_gemms"};
  std::string config_path;
  app.add_option("--config", config_path, "an accelerator configuration (JSON); default: the built-in one");
  CLI11_PARSE(app, argc, argv);
  tensorgym::Expected<AccelConfig> config = accel_config_or_default(config_path);
  if (!config.ok()) {
    fmt::print(stderr, "{}\n", config.status().to_string());
    return 2;
  }
  return run(*config);
}
