// The fpga target's compile step end to end: a blocked int8 convolution program and a
// VTA-style schedule of it (schedule_text) become an instruction stream
// (compile_conv2d); fsim runs it on the program's own tensors and gives the reference
// evaluator's output bit for bit, while the reference interpreter runs the same
// schedule's loop nest. The expert schedules beside datasets/fpga/*.tg compile.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/fpga/compile_conv2d.h"
#include "codegen/fpga/conv2d_program.h"
#include "codegen/fpga/fsim.h"
#include "codegen/fpga/schedule_tiling.h"
#include "codegen/interp/compare.h"
#include "tests/cuda_test_support.h"

namespace tensorgym::fpga {
namespace {

using cuda_test::interpreter_mismatch;

const std::string kSource = TENSORGYM_SOURCE_DIR;

Conv2dLayer layer(int64_t c, int64_t h, int64_t w, int64_t k, int64_t r, int64_t stride, int64_t pad, bool relu) {
  Conv2dLayer l;
  l.c = c, l.h = h, l.w = w, l.k = k, l.r = l.s = r, l.stride = stride, l.pad = pad, l.relu = relu, l.shift = 1;
  return l;
}

std::vector<int8_t> bytes_of(const HostBuffer& b) {
  const int8_t* data = b.typed<int8_t>();
  return std::vector<int8_t>(data, data + b.num_elements());
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(FpgaCompile, ProgramAndScheduleGiveTheEvaluatorsOutput) {
  for (const char* file : {"small-1x8x8.json", "zynq7020-1x16x16.json"}) {
    const AccelConfig c = *load_accel_config(kSource + "/codegen/fpga/configs/" + file);
    const int64_t bi = c.block_in, bo = c.block_out;
    const std::vector<std::pair<Conv2dLayer, Conv2dTiling>> cases = {
        {layer(2 * bi, 6, 6, 2 * bo, 3, 1, 1, true), {3, 6, 1, 1, 2}},
        {layer(2 * bi, 9, 7, 2 * bo, 3, 1, 1, false), {9, 7, 2, 2, 1}},
        {layer(bi, 10, 6, 2 * bo, 1, 2, 0, true), {5, 3, 1, 1, 2}},
        {layer(3 * bi, 7, 7, bo, 3, 2, 1, true), {2, 4, 1, 3, 2}},
    };
    for (const auto& [l, t] : cases) {
      SCOPED_TRACE(std::string(file) + " " + to_string(t));
      Expected<Program> parsed = parse_program(conv2d_program_text(l, c));
      ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
      auto program = std::make_shared<const Program>(std::move(*parsed));
      Expected<std::string> text = schedule_text(c, l, t);
      ASSERT_TRUE(text.ok()) << text.status().to_string();
      Expected<Schedule> s = Schedule::from_text(program, *text);
      ASSERT_TRUE(s.ok()) << s.status().to_string() << "\n" << *text;

      std::vector<HostBuffer> inputs = make_random_inputs(*program, 3);
      const Conv2dData data{bytes_of(inputs[0]), bytes_of(inputs[1])};
      Expected<CompiledConv2d> compiled = compile_conv2d(s->state(), c, &data);
      ASSERT_TRUE(compiled.ok()) << compiled.status().to_string() << "\n" << *text;
      EXPECT_EQ(to_string(compiled->tiling), to_string(t));
      std::vector<uint8_t> dram = compiled->program.dram;
      Expected<SimulationResult> run = simulate(c, compiled->program.stream, dram);
      ASSERT_TRUE(run.ok()) << run.status().to_string();
      ProgramEvaluator evaluator(*program, const_pointers(inputs));
      Expected<HostBuffer> y = evaluator.evaluate("Y");
      ASSERT_TRUE(y.ok()) << y.status().to_string();
      EXPECT_EQ(output_of(compiled->program, dram), bytes_of(*y));
      // The interpreter runs the schedule's own nest to the same result.
      Expected<LoopNest> nest = lower(*s, LowerOptions{.allow_accelerator_scopes = true});
      ASSERT_TRUE(nest.ok()) << nest.status().to_string();
      EXPECT_EQ(interpreter_mismatch(*program, *nest), "");
    }
  }
}

// Every datasets/fpga/<program>.fpga.sched compiles for the default design, and its
// two virtual threads beat the same tiling with one.
TEST(FpgaCompile, TheExpertSchedulesCompileAndTheirVirtualThreadsPay) {
  const AccelConfig& c = default_accel_config();
  int found = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSource + "/datasets/fpga")) {
    const std::string path = entry.path().string();
    if (path.size() < 11 || path.compare(path.size() - 11, 11, ".fpga.sched") != 0) continue;
    ++found;
    SCOPED_TRACE(path);
    const std::string program_path = path.substr(0, path.size() - 11) + ".tg";
    Expected<Program> parsed = parse_program(read(program_path));
    ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
    auto program = std::make_shared<const Program>(std::move(*parsed));
    Expected<Schedule> s = Schedule::from_text(program, read(path));
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    Expected<CompiledConv2d> compiled = compile_conv2d(s->state(), c);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    // The expert rule's tiling, as the docs' table says.
    Expected<Conv2dTiling> rule = row_tiling(c, compiled->layer);
    ASSERT_TRUE(rule.ok()) << rule.status().to_string();
    EXPECT_EQ(to_string(compiled->tiling), to_string(*rule));
    ASSERT_EQ(compiled->tiling.virtual_threads, 2);
    Conv2dTiling one = compiled->tiling;
    one.virtual_threads = 1;
    Expected<SampleProgram> single = make_conv2d_program(c, compiled->layer, one, 1, false);
    ASSERT_TRUE(single.ok());
    Expected<SimulationResult> two_r = simulate(c, compiled->program.stream, compiled->program.dram, {false});
    Expected<SimulationResult> one_r = simulate(c, single->stream, single->dram, {false});
    ASSERT_TRUE(two_r.ok() && one_r.ok());
    EXPECT_LT(two_r->cycles, one_r->cycles);
  }
  EXPECT_EQ(found, 13);
}

}  // namespace
}  // namespace tensorgym::fpga
