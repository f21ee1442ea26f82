// The fpga target behind the backend interface (codegen/fpga/fpga_backend.h), reached
// through the registry as everything outside codegen/ reaches it: lowering keeps the
// schedule, compile reads the tiling off it, the executable runs the stream bit-exactly
// on the arguments (checked against the reference evaluator) and times it by the
// simulator's cycles; the measurement job does the same in a worker's place, with the
// simulator named in the provenance; what it cannot compile is refused with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "codegen/backend/registry.h"
#include "codegen/fpga/accel_config.h"
#include "codegen/fpga/conv2d_program.h"
#include "codegen/fpga/fsim.h"
#include "codegen/fpga/rtl_sim.h"
#include "codegen/fpga/schedule_tiling.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/measure/measure_job.h"
#include "codegen/measure/runner_settings.h"
#include "tests/fpga_test_programs.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

using fpga::AccelConfig;
using fpga::Conv2dLayer;
using fpga::Conv2dTiling;

const Backend& fpga_target() { return **find_backend("fpga"); }
const AccelConfig& design() { return fpga::default_accel_config(); }

// The blocked 3x3 convolution of fpga_test_programs.h as the accelerator sees it.
Conv2dLayer conv_layer() {
  Expected<Program> p = parse_program(fpga_test::kBlockedConv);
  return *fpga::recognize_conv2d(*p, design());
}

ProgramPtr conv_program() {
  static const ProgramPtr p = std::make_shared<const Program>(*parse_program(fpga_test::kBlockedConv));
  return p;
}

std::string conv_schedule(const Conv2dTiling& tiling) { return *fpga::schedule_text(design(), conv_layer(), tiling); }

Expected<std::shared_ptr<const Executable>> compile(const std::string& schedule_text, const std::string& simulator = "",
                                                    bool keep_text = false) {
  TG_ASSIGN_OR_RETURN(Schedule s, Schedule::from_text(conv_program(), schedule_text));
  TG_ASSIGN_OR_RETURN(LoopNest nest, lower(s, fpga_target().lowering()));
  CompileOptions options;
  options.simulator = simulator;
  options.keep_code_text = keep_text;
  return fpga_target().compile(nest, options);
}

// Whether this build has a Verilator model of the default design (the sanitizer trees
// build only the small one).
bool default_design_has_rtl() {
  for (const std::string& file : fpga::rtl_config_files())
    if (file.size() >= design().name.size() + 5 &&
        file.compare(file.size() - design().name.size() - 5, std::string::npos, design().name + ".json") == 0)
      return true;
  return false;
}

int64_t count(const std::vector<NamedCount>& counts, const std::string& name) {
  for (const NamedCount& c : counts)
    if (c.name == name) return c.value;
  ADD_FAILURE() << "no count " << name;
  return -1;
}

TEST(FpgaBackend, IsRegisteredAsASimulatedAccelerator) {
  Expected<const Backend*> b = find_backend("fpga");
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  const TargetInfo& t = (*b)->target();
  EXPECT_EQ(t.name, "fpga");
  EXPECT_EQ(t.device, "zynq7020-1x16x16");
  EXPECT_TRUE(t.can_run);
  EXPECT_TRUE(t.simulated);
  EXPECT_EQ(t.clock, "fsim");
  EXPECT_EQ((*b)->lowering().kind, TargetKind::kAccelerator);
  EXPECT_TRUE((*b)->lowering().needs_schedule);
  EXPECT_FALSE(host_backend().target().simulated);
  EXPECT_EQ(host_backend().target().clock, "host");
}

TEST(FpgaBackend, RunsTheStreamBitExactlyAndTimesItBySimulatedCycles) {
  const Conv2dTiling tiling{3, 6, 1, 1, 2};
  Expected<std::shared_ptr<const Executable>> exe = compile(conv_schedule(tiling), "", /*keep_text=*/true);
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  EXPECT_CONTAINS((*exe)->code_text(), "tiling h3 w6 k1 c1 vt2");
  EXPECT_CONTAINS((*exe)->code_text(), "GEMM");

  // The program's own tensors in, the reference evaluator's output out.
  const Program& program = *conv_program();
  std::vector<HostBuffer> inputs = make_random_inputs(program, 7);
  std::vector<HostBuffer> outputs = make_output_buffers((*exe)->nest());
  std::vector<void*> args;
  for (HostBuffer& b : inputs) args.push_back(b.data());
  for (HostBuffer& b : outputs) args.push_back(b.data());
  ASSERT_TRUE((*exe)->run_checked(args.data(), 1).ok());
  RunnerSettings settings = *resolve_runner_settings({});
  settings.check_points = 1 << 20;  // every point
  MeasureResult checked = check_outputs(program, {"Y"}, inputs, outputs, settings);
  EXPECT_TRUE(checked.ok()) << checked.error_message;
  EXPECT_EQ(checked.max_abs_error, 0);

  // Timed by fsim's cycles at the design's clock, the same every sample.
  Expected<fpga::SampleProgram> stream = fpga::make_conv2d_program(design(), conv_layer(), tiling, 1, false);
  ASSERT_TRUE(stream.ok());
  Expected<fpga::SimulationResult> sim = fpga::simulate(design(), stream->stream, stream->dram);
  ASSERT_TRUE(sim.ok());
  ASSERT_TRUE((*exe)->has_device_clock());
  Expected<std::vector<double>> samples = (*exe)->time_on_device(args.data(), 1, 1, 3);
  ASSERT_TRUE(samples.ok());
  ASSERT_EQ(samples->size(), 3u);
  for (double s : *samples) EXPECT_EQ(s, double(sim->cycles) / (design().clock_mhz * 1e6));
  Expected<std::vector<NamedCount>> counts = (*exe)->simulated_counts();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(count(*counts, "cycles"), sim->cycles);
  EXPECT_EQ(count(*counts, "instructions"), int64_t(stream->stream.size()));
  EXPECT_EQ(count(*counts, "macs"), conv_layer().macs());
  const fpga::ModuleCycles& compute = sim->of(fpga::Module::kCompute);
  EXPECT_EQ(count(*counts, "compute.busy"), compute.busy);
  EXPECT_EQ(count(*counts, "compute.busy") + count(*counts, "compute.dependency_stall") +
                count(*counts, "compute.dram_stall") + count(*counts, "compute.idle"),
            sim->cycles);
}

TEST(FpgaBackend, TheRtlSimulatorGivesTheSameRun) {
  if (!default_design_has_rtl()) GTEST_SKIP() << "no Verilator model of the default design in this build";
  const std::string schedule = conv_schedule({6, 3, 2, 1, 2});
  Expected<std::shared_ptr<const Executable>> fsim = compile(schedule);
  Expected<std::shared_ptr<const Executable>> rtl = compile(schedule, "rtl", /*keep_text=*/true);
  ASSERT_TRUE(fsim.ok() && rtl.ok()) << rtl.status().to_string();
  EXPECT_CONTAINS((*rtl)->code_text(), "on rtl");
  Expected<std::vector<NamedCount>> a = (*fsim)->simulated_counts(), b = (*rtl)->simulated_counts();
  ASSERT_TRUE(a.ok() && b.ok()) << b.status().to_string();
  ASSERT_EQ(a->size(), b->size());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].name, (*b)[i].name);
    EXPECT_EQ((*a)[i].value, (*b)[i].value) << (*a)[i].name;
  }
  // And the same output bytes.
  const Program& program = *conv_program();
  std::vector<HostBuffer> inputs = make_random_inputs(program, 3);
  std::vector<HostBuffer> out_f = make_output_buffers((*fsim)->nest()), out_r = make_output_buffers((*rtl)->nest());
  std::vector<void*> args_f = {inputs[0].data(), inputs[1].data(), out_f[0].data()};
  std::vector<void*> args_r = {inputs[0].data(), inputs[1].data(), out_r[0].data()};
  ASSERT_TRUE((*fsim)->run_checked(args_f.data(), 1).ok());
  ASSERT_TRUE((*rtl)->run_checked(args_r.data(), 1).ok());
  EXPECT_EQ(std::memcmp(out_f[0].data(), out_r[0].data(), size_t(out_f[0].bytes())), 0);
}

TEST(FpgaBackend, RefusesWhatItCannotCompileSayingWhy) {
  // A schedule the accelerator cannot run yet: nothing tensorized.
  Expected<std::shared_ptr<const Executable>> partial = compile("split(Y.k, 1, ko, ki)");
  ASSERT_FALSE(partial.ok());
  EXPECT_EQ(partial.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_CONTAINS(partial.status().message(), "tensorize");
  // A simulator it does not have.
  Expected<std::shared_ptr<const Executable>> unknown = compile(conv_schedule({3, 6, 1, 1, 2}), "spice");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(unknown.status().message(), "fsim, rtl");
  // The RTL where this build has no model of the design: unavailable, saying why.
  if (!default_design_has_rtl()) {
    Expected<std::shared_ptr<const Executable>> no_rtl = compile(conv_schedule({3, 6, 1, 1, 2}), "rtl");
    ASSERT_FALSE(no_rtl.ok());
    EXPECT_EQ(no_rtl.status().code(), StatusCode::kUnavailable);
    EXPECT_CONTAINS(no_rtl.status().message(), "Verilator model of zynq7020-1x16x16");
  }
  // A nest lowered for another target, and one without its schedule.
  Schedule s = *Schedule::from_text(conv_program(), "");
  LoopNest cpu_nest = *lower(s, host_backend().lowering());
  Expected<std::shared_ptr<const Executable>> other = fpga_target().compile(cpu_nest);
  ASSERT_FALSE(other.ok());
  EXPECT_CONTAINS(other.status().message(), "lowered for cpu");
  Expected<LoopNest> generic = lower(s);
  ASSERT_TRUE(generic.ok());
  Expected<LoopNest> bare = lower_for_target(*generic, fpga_target().lowering());
  ASSERT_FALSE(bare.ok());
  EXPECT_CONTAINS(bare.status().message(), "carries no schedule");
  // A float GEMM is no int8 convolution: the program is refused, naming what it lacks.
  auto gemm = std::make_shared<const Program>(*parse_program(
      "input A: f32[16, 16]\ninput B: f32[16, 16]\nC[i, j] += A[i, k] * B[k, j]\n"));
  Expected<std::string> none = fpga_target().default_schedule(gemm);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_CONTAINS(none.status().message(), "conv2d on the accelerator");
}

TEST(FpgaBackend, TheDefaultScheduleIsTheSmallestTilingAndRuns) {
  Expected<std::string> naive = fpga_target().default_schedule(conv_program());
  ASSERT_TRUE(naive.ok()) << naive.status().to_string();
  Expected<std::shared_ptr<const Executable>> slow = compile(*naive, "", true);
  ASSERT_TRUE(slow.ok()) << slow.status().to_string();
  EXPECT_CONTAINS((*slow)->code_text(), "tiling h1 w1 k1 c1 vt1");
  Expected<std::shared_ptr<const Executable>> expert =
      compile(conv_schedule(*fpga::row_tiling(design(), conv_layer())));
  ASSERT_TRUE(expert.ok());
  EXPECT_GT(count(*(*slow)->simulated_counts(), "cycles"), count(*(*expert)->simulated_counts(), "cycles"));
}

TEST(FpgaBackend, TheMeasurementJobChecksAndTimesOnTheSimulatorItNames) {
  MeasureRequest request;
  request.target = "fpga";
  request.program = fpga_test::kBlockedConv;
  request.schedule = conv_schedule({3, 6, 1, 1, 2});
  MeasureResult r = run_measure_job(request);
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_TRUE(r.correct);
  EXPECT_GT(r.checked_points, 0);
  EXPECT_EQ(r.runtime.min_s, r.runtime.max_s);  // simulated: every sample the same
  EXPECT_EQ(r.provenance.target, "fpga");
  EXPECT_EQ(r.provenance.clock, "fsim");
  EXPECT_EQ(r.provenance.device, "zynq7020-1x16x16");
  if (default_design_has_rtl()) {
    request.settings.simulator = "rtl";
    MeasureResult rtl = run_measure_job(request);
    ASSERT_TRUE(rtl.ok()) << rtl.error_message;
    EXPECT_EQ(rtl.provenance.clock, "rtl");
    EXPECT_EQ(rtl.runtime.median_s, r.runtime.median_s);
  }
  // A simulator is the fpga target's: the cpu refuses one, and no target takes another.
  const std::string accelerator_schedule = request.schedule;
  request.target = "cpu";
  request.schedule = "";
  request.settings.simulator = "rtl";
  MeasureResult cpu = run_measure_job(request);
  EXPECT_EQ(cpu.error, MeasureError::kInstantiation);
  EXPECT_CONTAINS(cpu.error_message, "runs for real");
  request.target = "fpga";
  request.schedule = accelerator_schedule;
  request.settings.simulator = "spice";
  MeasureResult bad = run_measure_job(request);
  EXPECT_EQ(bad.error, MeasureError::kInstantiation);
  EXPECT_CONTAINS(bad.error_message, "not a simulator");
}

}  // namespace
}  // namespace tensorgym
