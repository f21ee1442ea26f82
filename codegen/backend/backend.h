// The backend interface: what a target is, how a nest is lowered for it and compiled
// into an executable the runner can time. Every backend (codegen/cpu now; codegen/cuda
// and codegen/fpga next) implements it once and is registered once (registry.h);
// nothing outside codegen/ reaches a backend any other way.
//
//   const Backend& b = *find_backend("cpu");
//   LoopNest nest = *lower(schedule, b.lowering());   // generic passes, then the target's
//   std::shared_ptr<const Executable> exe = *b.compile(nest);
//   exe->run(args, threads);                           // what the runner times
//
// Header only: backends include it without linking the registry.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen/lower/loop_nest.h"
#include "codegen/lower/lower.h"
#include "support/status.h"

namespace tensorgym {

struct MachineModel;  // codegen/analysis/cost_model.h

// A target as results, provenance and cache keys name it.
struct TargetInfo {
  std::string name;              // the registry's key: "cpu"
  std::string triple;            // "x86_64-pc-linux-gnu"
  std::string device;            // the processor: "znver4" (a CPU name, a GPU model)
  std::string features;          // "+avx2,+fma,..." (the enabled ones)
  std::string compiler_version;  // of the code generator: "19.1.7" (LLVM)
  int num_cores = 1;             // hardware threads a kernel may run on
  int vector_bits = 0;           // widest usable vector register (0: none)
  int auto_vector_bits = 0;      // widest vector the code generator's own vectorizer picks
  // A stable hash of what changes generated code (kernel cache keys, baselines).
  std::string fingerprint;
  // What it can measure: kernels run here and are timed (runtime, gflops, correct).
  // Otherwise results are only modelled (est_cycles) and a measurement is an error.
  bool can_run = true;
  // Why it cannot, where can_run is false: "no GPU on this machine: libcuda.so.1 not found
  // (...)". What refusals to measure say.
  std::string run_unavailable;
  // Whether the analytical cost model has this target's machine (Backend::machine_model).
  bool has_cost_model = false;
  // Whether its runs are simulations of the device (fpga): runtimes are then
  // deterministic, the same on every machine, and validated like the models' rewards.
  bool simulated = false;
  // What times its runs, as provenance names it: "host" (the host's clock), "device"
  // (the GPU's events), "fsim" (a simulated target's default simulator; RunnerSettings
  // simulator picks another).
  std::string clock = "host";
};

struct CompileOptions {
  bool keep_code_text = false;  // keep the generated code's text (LLVM IR for cpu, PTX for cuda)
  // The device to generate code for, where a target has a choice (cuda: "sm_80",
  // "sm_90", ...); empty: the target's own (TargetInfo::device).
  std::string device;
  // Keep the code generator's remarks (cpu: LLVM's loop-vectorizer and full-unroll
  // remarks, what the cost model's code-generator rules predict).
  bool keep_remarks = false;
  // A simulated target's simulator (TargetInfo::simulated; fpga: "fsim", the default,
  // or "rtl"; INVALID_ARGUMENT for another). Real targets ignore it (the runner refuses
  // a simulator for them).
  std::string simulator;
};

// A named count a run reports (fpga: "cycles", "load.busy", ...).
struct NamedCount {
  std::string name;
  int64_t value = 0;
};

// One integer choice of a target's schedule template (ScheduleKnobs).
struct ScheduleKnob {
  std::string name;             // "tile_h"
  std::vector<int64_t> values;  // the values it may take, ascending
};

// What a device design uses of the part it is built for (fpga: yosys's synthesis of the
// accelerator), against the part's budget.
struct DeviceResources {
  std::string design;  // "zynq7020-1x16x16"
  std::string part;    // "xc7z020"
  std::vector<NamedCount> used, available;  // by resource ("luts", "flip_flops", "dsps", ...)
  bool fits = false;
  std::string summary;  // one line for people
};

// A kernel a device target compiled (cuda: one PTX .entry), in launch order: its
// launch geometry, and what the device's assembler reported where it ran (ptxas).
struct DeviceKernel {
  std::string name;   // "tg_kernel_0"
  std::string stage;  // the stage of its outermost bound loop
  int64_t blocks[3] = {1, 1, 1};
  int64_t threads[3] = {1, 1, 1};
  std::vector<std::string> params;  // buffers, then host loop variables, in order
  bool assembled = false;           // the assembler checked it; the numbers below are its
  int registers = 0;                // per thread
  int64_t shared_bytes = 0;         // static, per block
  int64_t stack_bytes = 0;          // per thread
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;
};

// A target model's estimate of one run, kernel by kernel (cuda: codegen/cuda/gpu_model.h;
// deterministic, never a measurement).
struct KernelEstimate {
  std::string stage;           // of its outermost bound loop; the stage's own for work outside any kernel
  bool single_thread = false;  // work no bound loop contains: one thread runs it
  int64_t launches = 1;        // iterations of the host loops around it
  int64_t blocks = 1;          // per launch
  int64_t threads_per_block = 1;
  int64_t shared_bytes = 0;    // shared memory per block
  int registers = 0;           // per thread, estimated
  int blocks_per_sm = 0;       // resident
  double occupancy = 0;        // resident warps / the SM's most
  double flops = 0;            // all launches
  double l1_bytes = 0;         // requested by the warps: 32-byte sectors
  double l2_bytes = 0;         // requested of L2 (after L1)
  double dram_bytes = 0;
  double compute_s = 0, l1_s = 0, l2_s = 0, dram_s = 0;
  double seconds = 0;          // all launches, launch overheads included
};

struct RuntimeEstimate {
  double seconds = 0;
  std::vector<KernelEstimate> kernels;  // in program order
};

// A 2-D convolution as vendor libraries take it: X[N, C, H, W] (NCHW) and weights
// W[K, C / groups, R, S] (KCRS), all f32, dense and row-major, give
//   Y[n, k, p, q] = sum over c, r, s of W[k, c, r, s] *
//                   X[n, k / (K / groups) * (C / groups) + c, p * stride_h + r * dilation_h - pad_h, ...]
// (a cross-correlation, no kernel flip), reading zeros outside X: the ops-v0 c2d/grp/dil
// programs' Y.
struct Conv2dParams {
  int64_t batch = 1, in_channels = 1, height = 1, width = 1;  // N, C, H, W
  int64_t out_channels = 1, kernel_h = 1, kernel_w = 1;       // K, R, S
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;

  // 0 where the dilated kernel is larger than the padded input.
  int64_t out_height() const { return out_size(height, kernel_h, stride_h, pad_h, dilation_h); }
  int64_t out_width() const { return out_size(width, kernel_w, stride_w, pad_w, dilation_w); }
  double flops() const {  // a multiply and an add per term
    return 2.0 * double(batch) * double(out_channels) * double(out_height()) * double(out_width()) *
           double(in_channels / groups) * double(kernel_h) * double(kernel_w);
  }

 private:
  static int64_t out_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
    const int64_t span = in + 2 * pad - dilation * (kernel - 1);  // the positions a window starts at, stride 1
    return span < 1 || stride < 1 ? 0 : (span - 1) / stride + 1;
  }
};

// What an executable keeps of its constant work (codegen/analysis/constant_work.h) done for
// one set of constant-input values: Executable::prepare's result.
class PreparedConstants {
 public:
  virtual ~PreparedConstants() = default;
};

// A compiled loop nest, callable any number of times from any thread.
class Executable {
 public:
  virtual ~Executable() = default;
  // `args` holds one pointer per buffer, the nest's inputs then its outputs, each
  // dense row-major and 64-byte aligned; each input readable kInputReadSlackBytes
  // past both ends (support/read_slack.h; HostBuffer's storage is). `num_threads`
  // <= 0 means every core. Returns when the outputs are written (a device backend
  // waits for its device), so the runner times any executable with the same
  // host-clock protocol (codegen/measure/timing.h). The executable of a target that
  // cannot run here (TargetInfo::can_run false) aborts, saying why: the runner never
  // calls it.
  virtual void run(void* const* args, int num_threads) const = 0;

  // run(), with a device's failures returned (the driver missing, a launch refused, a
  // kernel that faulted) instead of ending the process; for in-process callers (tests,
  // benchmarks). The runner's workers call run(): a fault ends the worker, as a crash
  // of a CPU kernel does. A host target's run cannot fail this way.
  virtual Status run_checked(void* const* args, int num_threads) const {
    run(args, num_threads);
    return Status();
  }

  // The nest's constant work (the root statements that read only `const` inputs: weights
  // packed into another layout) done once with the constant inputs of `args`, its
  // results kept; null where the executable has none (or runs it on every run). Then
  // run_prepared(prepared, args) computes what run(args) does, without that work, for
  // args whose constant inputs hold the same values. The runner checks and times
  // run_prepared, as TVM times a kernel over weights its layout rewrite packed ahead.
  virtual Expected<std::shared_ptr<const PreparedConstants>> prepare(void* const* args, int num_threads) const {
    (void)args, (void)num_threads;
    return std::shared_ptr<const PreparedConstants>();
  }
  virtual void run_prepared(const PreparedConstants* prepared, void* const* args, int num_threads) const {
    (void)prepared;
    run(args, num_threads);
  }
  // Whether prepare() takes work out of the runs (the nest has constant work).
  virtual bool has_constant_work() const { return false; }

  // Whether the executable times its kernels on its device's own clock. The runner then
  // takes its runtimes from time_on_device(), the kernels alone; otherwise it times
  // run() with the host's clock (codegen/measure/timing.h).
  virtual bool has_device_clock() const { return false; }
  // With the buffers of `args` copied to the device once: `warmup_runs` untimed runs,
  // then `repeat` samples, each `number` back-to-back runs of the kernels timed by the
  // device (cuda: events around the launches) and divided by `number` (seconds per
  // run). UNIMPLEMENTED without a device clock.
  virtual Expected<std::vector<double>> time_on_device(void* const* args, int warmup_runs, int number,
                                                       int repeat) const {
    (void)args, (void)warmup_runs, (void)number, (void)repeat;
    return unimplemented("this executable has no device clock: time run() on the host's");
  }

  // What one run of a simulated target's executable counts (fpga: cycles, per module busy
  // and stall cycles, instructions, DRAM bytes), by the simulator it was compiled for;
  // deterministic. UNIMPLEMENTED for a real device, where counts are not exact.
  virtual Expected<std::vector<NamedCount>> simulated_counts() const {
    return unimplemented("this executable runs on real hardware: it has no simulated counts");
  }

  const LoopNest& nest() const { return nest_; }
  const std::string& code_text() const { return code_text_; }  // empty unless kept
  const std::vector<std::string>& remarks() const { return remarks_; }  // empty unless kept
  double compile_ms() const { return compile_ms_; }
  // A device target's kernels (empty for the cpu, whose nest is one host function).
  const std::vector<DeviceKernel>& kernels() const { return kernels_; }

 protected:
  LoopNest nest_;
  std::string code_text_;
  std::vector<std::string> remarks_;
  double compile_ms_ = 0;
  std::vector<DeviceKernel> kernels_;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual const TargetInfo& target() const = 0;
  const std::string& name() const { return target().name; }

  // The target's own lowering passes, run after the generic pipeline (lower.cc).
  virtual const LoweringTarget& lowering() const = 0;

  // Compiles a nest lowered for this target (LoopNest::target; FAILED_PRECONDITION
  // otherwise). Errors are the measurement's COMPILE errors.
  virtual Expected<std::shared_ptr<const Executable>> compile(const LoopNest& nest,
                                                              const CompileOptions& options = {}) const = 0;

  // The cost model's machine for this target (caches, cores, vector width, measured
  // where it runs); null when the target has none (TargetInfo::has_cost_model).
  virtual const MachineModel* machine_model() const { return nullptr; }

  // The target's analytical runtime model of one run of a target-independent nest (the
  // loops bind() bound keep their tags): cuda's GPU model (codegen/cuda/gpu_model.h)
  // on its named GPU. Deterministic, never a measurement. UNIMPLEMENTED for a target
  // without one (the cpu's model counts cycles: machine_model()).
  virtual Expected<RuntimeEstimate> estimate_runtime(const LoopNest& nest) const {
    (void)nest;
    return unimplemented("target " + name() + " has no runtime model (est_gpu_time is the cuda target's)");
  }

  // The target's vendor library computing C[m, n] = A[m, k] · B[k, n] (f32, dense,
  // row-major) as an executable like compile()'s (run's args {A, B, C}, the same
  // device clock), for benchmarks that compare a schedule's kernels with it side by
  // side. cuda: cuBLAS SGEMM without tensor cores. UNIMPLEMENTED where the target has
  // none; UNAVAILABLE where the library or the device is missing here.
  virtual Expected<std::shared_ptr<const Executable>> library_matmul(int64_t m, int64_t n, int64_t k) const {
    (void)m, (void)n, (void)k;
    return unimplemented("target " + name() + " has no vendor matrix multiplication");
  }

  // The target's vendor library computing the convolution `params` describes as an
  // executable like compile()'s: run's args {X, W, Y}, the same device clock. Making it
  // may run the library on the device (cuda: cuDNN times its algorithms and keeps the
  // fastest); its remarks() say what the library chose. cuda: cuDNN without tensor cores.
  // INVALID_ARGUMENT for a shape the library cannot take; UNIMPLEMENTED where the target
  // has none; UNAVAILABLE where the library or the device is missing here.
  virtual Expected<std::shared_ptr<const Executable>> library_conv2d(const Conv2dParams& params) const {
    (void)params;
    return unimplemented("target " + name() + " has no vendor convolution");
  }

  // The schedule measured rewards start from where the program cannot run unscheduled
  // (a trace; empty: the unscheduled program): a GPU's default binding, an
  // accelerator's smallest tiling. An error where the target cannot run the program at all.
  virtual Expected<std::string> default_schedule(const ProgramPtr& program) const {
    (void)program;
    return std::string();
  }

  // A target whose schedules have one form chosen by a few integer knobs (fpga: the
  // tiling of a tensorized convolution, as AutoTVM's templates for VTA): the knobs for
  // `program` with the values each may take. Search agents choose among them there
  // instead of stepping through primitives. UNIMPLEMENTED for a target scheduled
  // primitive by primitive; FAILED_PRECONDITION for a program the target cannot run.
  virtual Expected<std::vector<ScheduleKnob>> schedule_knobs(const ProgramPtr& program) const {
    (void)program;
    return unimplemented("target " + name() + " is scheduled primitive by primitive: it has no schedule knobs");
  }
  // The schedule (a trace) for one value of each knob, in schedule_knobs' order;
  // INVALID_ARGUMENT naming the rule a combination breaks (a buffer it overflows).
  virtual Expected<std::string> knob_schedule(const ProgramPtr& program, const std::vector<int64_t>& choice) const {
    (void)program, (void)choice;
    return unimplemented("target " + name() + " is scheduled primitive by primitive: it has no schedule knobs");
  }

  // What the target's device design uses of its part (fpga: a yosys synthesis, run once
  // and kept). UNIMPLEMENTED for a target without a design of its own.
  virtual Expected<DeviceResources> resources() const {
    return unimplemented("target " + name() + " is not a device design of ours: it has no resource report");
  }

  // The instruction classes of generated code (cpu: LLVM's opcode names), and how many
  // of each a code text (Executable::code_text) holds, aligned with them.
  virtual const std::vector<std::string>& opcode_names() const {
    static const std::vector<std::string> none;
    return none;
  }
  virtual Expected<std::vector<int64_t>> count_opcodes(const std::string& code_text) const {
    return unimplemented("target " + name() + " does not count instructions");
  }
};

}  // namespace tensorgym
