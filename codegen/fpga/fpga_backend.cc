#include "codegen/fpga/fpga_backend.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>

#include "codegen/fpga/compile_conv2d.h"
#include "codegen/fpga/conv2d_program.h"
#include "codegen/fpga/fsim.h"
#include "codegen/fpga/rtl_sim.h"
#include "codegen/fpga/schedule_tiling.h"
#include "codegen/fpga/synthesize.h"
#include "support/fnv.h"

#ifndef TENSORGYM_VERSION
#define TENSORGYM_VERSION "unknown"
#endif

namespace tensorgym {
namespace {

using namespace tensorgym::fpga;

// Whether this build has a Verilator model of `config`'s design.
bool has_rtl_model(const AccelConfig& config) {
  const std::string suffix = "/" + config.name + ".json";
  for (const std::string& file : rtl_config_files())
    if (file.size() >= suffix.size() && file.compare(file.size() - suffix.size(), suffix.size(), suffix) == 0)
      return true;
  return false;
}

class FpgaExecutable final : public Executable {
 public:
  FpgaExecutable(LoopNest nest, const AccelConfig& config, CompiledConv2d compiled, size_t input_arg,
                 size_t weights_arg, bool rtl, bool keep_text, double compile_ms)
      : config_(config), compiled_(std::move(compiled)), input_arg_(input_arg), weights_arg_(weights_arg), rtl_(rtl) {
    nest_ = std::move(nest);
    compile_ms_ = compile_ms;
    if (keep_text)
      code_text_ = fmt::format("; {} on {}: n{} c{} h{} w{} k{} r{} s{} stride {} pad {}, tiling {}\n{}",
                               config_.name, rtl_ ? "rtl" : "fsim", compiled_.layer.n, compiled_.layer.c,
                               compiled_.layer.h, compiled_.layer.w, compiled_.layer.k, compiled_.layer.r,
                               compiled_.layer.s, compiled_.layer.stride, compiled_.layer.pad,
                               to_string(compiled_.tiling), to_text(compiled_.program.stream));
  }

  void run(void* const* args, int num_threads) const override {
    Status s = run_checked(args, num_threads);
    if (!s.ok()) {
      std::fprintf(stderr, "fpga: the simulated run failed: %s\n", s.to_string().c_str());
      std::abort();
    }
  }

  // The stream on the arguments' data, bit-exactly, the output copied back.
  Status run_checked(void* const* args, int) const override {
    const Conv2dLayer& l = compiled_.layer;
    Conv2dData data;
    data.input.resize(size_t(l.n * l.c * l.h * l.w));
    data.weights.resize(size_t(l.k * l.c * l.r * l.s));
    std::memcpy(data.input.data(), args[input_arg_], data.input.size());
    std::memcpy(data.weights.data(), args[weights_arg_], data.weights.size());
    TG_ASSIGN_OR_RETURN(SampleProgram p, make_conv2d_program(config_, l, compiled_.tiling, data));
    TG_RETURN_IF_ERROR(simulate_on(p.stream, p.dram, /*functional=*/true).status());
    const size_t out_bytes = size_t(l.n * l.k * l.oh() * l.ow());
    std::memcpy(args[nest_.inputs.size()], p.dram.data() + p.output_offset, out_bytes);
    return Status();
  }

  bool has_device_clock() const override { return true; }

  // Every sample is the simulated time: the stream's timing never depends on the data.
  Expected<std::vector<double>> time_on_device(void* const*, int, int, int repeat) const override {
    TG_ASSIGN_OR_RETURN(SimulationResult r, timing());
    return std::vector<double>(size_t(std::max(repeat, 1)), r.seconds);
  }

  Expected<std::vector<NamedCount>> simulated_counts() const override {
    TG_ASSIGN_OR_RETURN(SimulationResult r, timing());
    std::vector<NamedCount> c = {{"cycles", r.cycles},
                                 {"instructions", r.instructions},
                                 {"macs", r.macs},
                                 {"gemm_iterations", r.gemm_iterations},
                                 {"alu_iterations", r.alu_iterations},
                                 {"dram_read_bytes", r.dram_read_bytes},
                                 {"dram_write_bytes", r.dram_write_bytes}};
    for (Module m : {Module::kLoad, Module::kCompute, Module::kStore}) {
      const ModuleCycles& mc = r.of(m);
      const std::string prefix = std::string(module_name(m)) + ".";
      c.push_back({prefix + "instructions", mc.instructions});
      c.push_back({prefix + "busy", mc.busy});
      c.push_back({prefix + "dependency_stall", mc.dependency_stall});
      c.push_back({prefix + "dram_stall", mc.dram_stall});
      c.push_back({prefix + "idle", mc.idle});
    }
    return c;
  }

 private:
  Expected<SimulationResult> simulate_on(const std::vector<Instruction>& stream, std::vector<uint8_t>& dram,
                                         bool functional) const {
    if (rtl_) return simulate_rtl(config_, stream, dram);
    SimulateOptions options;
    options.functional = functional;
    return simulate(config_, stream, dram, options);
  }

  // One simulation of the stream on the data-free image, kept. The RTL counts no datapath
  // work: its MACs and GEMM / ALU iterations, which the stream alone fixes, are fsim's.
  Expected<SimulationResult> timing() const {
    std::lock_guard<std::mutex> lock(mu_);
    if (!timing_) {
      std::vector<uint8_t> dram = compiled_.program.dram;
      timing_ = simulate_on(compiled_.program.stream, dram, /*functional=*/false);
      if (rtl_ && timing_->ok()) {
        dram = compiled_.program.dram;
        Expected<SimulationResult> counted =
            simulate(config_, compiled_.program.stream, dram, SimulateOptions{.functional = false});
        if (!counted.ok()) {
          timing_ = counted.status();
        } else {
          SimulationResult& r = **timing_;
          r.macs = counted->macs;
          r.gemm_iterations = counted->gemm_iterations;
          r.alu_iterations = counted->alu_iterations;
        }
      }
    }
    return *timing_;
  }

  AccelConfig config_;
  CompiledConv2d compiled_;
  size_t input_arg_, weights_arg_;
  bool rtl_;
  mutable std::mutex mu_;
  mutable std::optional<Expected<SimulationResult>> timing_;
};

class FpgaBackend final : public Backend {
 public:
  const TargetInfo& target() const override {
    static const TargetInfo info = [] {
      const AccelConfig& c = default_accel_config();
      TargetInfo i;
      i.name = "fpga";
      i.triple = "tensorgym-accel";
      i.device = c.name;
      i.features = fmt::format("core {}x{}x{}, inp {} KiB, wgt {} KiB, acc {} KiB, uop {} KiB, {} MHz, DRAM {} B/cycle "
                               "latency {} outstanding {}",
                               c.batch, c.block_in, c.block_out, c.inp_buffer_bytes >> 10, c.wgt_buffer_bytes >> 10,
                               c.acc_buffer_bytes >> 10, c.uop_buffer_bytes >> 10, c.clock_mhz, c.dram_bytes_per_cycle,
                               c.dram_latency_cycles, c.dram_max_outstanding);
      i.compiler_version = std::string("tensorgym ") + TENSORGYM_VERSION;
      i.fingerprint = hex64(fnv1a64(to_json(c), fnv1a64(i.compiler_version)));
      i.can_run = true;  // on a simulator, which is always here
      i.simulated = true;
      i.clock = "fsim";
      return i;
    }();
    return info;
  }

  // No passes of its own: the compiler reads the tiling off the schedule.
  const LoweringTarget& lowering() const override {
    static const LoweringTarget lowering{"fpga", {}, /*thread_binding=*/false, TargetKind::kAccelerator,
                                         /*needs_schedule=*/true};
    return lowering;
  }

  Expected<std::shared_ptr<const Executable>> compile(const LoopNest& nest,
                                                      const CompileOptions& options) const override {
    const auto t0 = std::chrono::steady_clock::now();
    if (nest.target != "fpga")
      return failed_precondition("the fpga backend compiles nests lowered for it; this one was lowered for " +
                                 (nest.target.empty() ? std::string("no target") : nest.target));
    if (!nest.schedule)
      return failed_precondition("the fpga backend compiles from the schedule: the nest carries none");
    const AccelConfig& config = default_accel_config();
    if (!options.simulator.empty() && options.simulator != "fsim" && options.simulator != "rtl")
      return invalid_argument("the fpga target has no simulator '" + options.simulator + "' (fsim, rtl)");
    const bool rtl = options.simulator == "rtl";
    if (rtl && !has_rtl_model(config))
      return unavailable("the rtl simulator needs a Verilator model of " + config.name +
                         ", which this build does not have (TENSORGYM_RTL_CONFIGS; Verilator at configure time)");
    Conv2dOperands operands;
    TG_RETURN_IF_ERROR(recognize_conv2d(nest.schedule->program(), config, &operands).status());
    TG_ASSIGN_OR_RETURN(CompiledConv2d compiled, compile_conv2d(*nest.schedule, config));
    auto index_of = [&](const std::string& name) {
      for (size_t i = 0; i < nest.inputs.size(); ++i)
        if (nest.inputs[i].name == name) return i;
      return nest.inputs.size();
    };
    const size_t input_arg = index_of(operands.input), weights_arg = index_of(operands.weights);
    if (input_arg == nest.inputs.size() || weights_arg == nest.inputs.size() || nest.outputs.size() != 1)
      return failed_precondition("the nest's buffers are not the convolution's inputs " + operands.input + ", " +
                                 operands.weights + " and its one output");
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return std::shared_ptr<const Executable>(std::make_shared<FpgaExecutable>(
        nest, config, std::move(compiled), input_arg, weights_arg, rtl, options.keep_code_text, ms));
  }

  // The legal tiling with the smallest tiles and no virtual threads: one output block of
  // one pixel a step, what a naive compiler emits.
  Expected<std::string> default_schedule(const ProgramPtr& program) const override {
    const AccelConfig& config = default_accel_config();
    TG_ASSIGN_OR_RETURN(Conv2dLayer layer, recognize_conv2d(*program, config));
    const std::vector<Conv2dTiling> tilings = legal_tilings(config, layer);
    const Conv2dTiling* smallest = nullptr;
    auto size = [](const Conv2dTiling& t) { return t.tile_h * t.tile_w * t.tile_k * t.tile_c; };
    for (const Conv2dTiling& t : tilings)
      if (t.virtual_threads == 1 && (!smallest || size(t) < size(*smallest))) smallest = &t;
    if (!smallest)
      return failed_precondition(fmt::format("the fpga target cannot run this convolution: no tiling fits the design "
                                             "{} ({})",
                                             config.name, check_tiling(config, layer, Conv2dTiling{1, 1, 1, 1, 1}).message()));
    return schedule_text(config, layer, *smallest);
  }

  // tile_h, tile_w (output pixels), tile_k, tile_c (channel blocks): the divisors of
  // each dimension; virtual_threads 1 or 2.
  Expected<std::vector<ScheduleKnob>> schedule_knobs(const ProgramPtr& program) const override {
    const AccelConfig& config = default_accel_config();
    TG_ASSIGN_OR_RETURN(Conv2dLayer l, recognize_conv2d(*program, config));
    auto divisors = [](int64_t v) {
      std::vector<int64_t> d;
      for (int64_t i = 1; i <= v; ++i)
        if (v % i == 0) d.push_back(i);
      return d;
    };
    return std::vector<ScheduleKnob>{{"tile_h", divisors(l.oh())},
                                     {"tile_w", divisors(l.ow())},
                                     {"tile_k", divisors(l.k / config.block_out)},
                                     {"tile_c", divisors(l.c / config.block_in)},
                                     {"virtual_threads", {1, 2}}};
  }

  Expected<std::string> knob_schedule(const ProgramPtr& program, const std::vector<int64_t>& choice) const override {
    const AccelConfig& config = default_accel_config();
    TG_ASSIGN_OR_RETURN(Conv2dLayer l, recognize_conv2d(*program, config));
    if (choice.size() != 5)
      return invalid_argument(fmt::format("the fpga target's schedules have 5 knobs (tile_h, tile_w, tile_k, tile_c, "
                                          "virtual_threads); {} values given",
                                          choice.size()));
    const Conv2dTiling t{choice[0], choice[1], choice[2], choice[3], int(choice[4])};
    TG_RETURN_IF_ERROR(check_tiling(config, l, t));
    return schedule_text(config, l, t);
  }

  Expected<DeviceResources> resources() const override {
    const AccelConfig& config = default_accel_config();
    TG_ASSIGN_OR_RETURN(Utilization u, synthesized_utilization(config.name));
    const PartBudget& budget = xc7z020_budget();
    DeviceResources r;
    r.design = config.name;
    r.part = budget.part;
    r.used = {{"luts", u.luts()},
              {"flip_flops", u.flip_flops},
              {"dsps", u.dsps},
              {"bram18", u.ramb36 * 2 + u.ramb18}};  // in 18 Kb halves: a RAMB36 is two
    r.available = {{"luts", budget.luts},
                   {"flip_flops", budget.flip_flops},
                   {"dsps", budget.dsps},
                   {"bram18", int64_t(budget.block_rams * 2)}};
    r.fits = fits(u, budget);
    r.summary = summary(u, budget);
    return r;
  }
};

}  // namespace

const Backend& fpga_backend() {
  static const FpgaBackend backend;
  return backend;
}

}  // namespace tensorgym
