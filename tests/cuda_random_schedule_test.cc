// Random GPU schedules (codegen/lower/random_gpu_schedule.h) of every ops-v0 family,
// built from the suite's own program templates at sizes the interpreter runs quickly:
// each lowers for the cuda target, computes what the unscheduled program computes
// (the reference interpreter on the GPU nest), and assembles with ptxas where it is
// installed. benchmarks/gpu_random_schedules.cc does the same at the suite's sizes.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "codegen/backend/registry.h"
#include "codegen/cuda/ptxas.h"
#include "codegen/ir/program.h"
#include "codegen/lower/default_gpu_schedule.h"
#include "codegen/lower/random_gpu_schedule.h"
#include "datasets/op_library.h"
#include "tests/cuda_test_support.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

using cuda_test::parsed_program;

using cuda_test::cuda_backend;
using cuda_test::Family;
using cuda_test::families;


constexpr int kSchedulesPerFamily = 6;

TEST(RandomGpuSchedule, EveryFamilyLowersMatchesTheInterpreterAndAssembles) {
  const bool have_ptxas = !cuda::find_ptxas().empty();
  for (const Family& f : families()) {
    SCOPED_TRACE(f.name);
    ProgramPtr program = parsed_program(f.program);
    std::set<std::string> distinct;
    for (int seed = 0; seed < kSchedulesPerFamily; ++seed) {
      Rng rng(uint64_t(seed) * 7919 + 3);
      Expected<Schedule> s = random_gpu_schedule(program, cuda_backend().lowering(), rng);
      ASSERT_TRUE(s.ok()) << s.status().to_string();
      const std::string trace = s->trace().to_string();
      SCOPED_TRACE(trace);
      distinct.insert(trace);
      EXPECT_NE(trace.find("threadIdx.x"), std::string::npos);
      Expected<LoopNest> nest = lower(*s, cuda_backend().lowering());
      ASSERT_TRUE(nest.ok()) << nest.status().to_string();
      EXPECT_EQ(cuda_test::interpreter_mismatch(*program, *nest), "");
      Expected<std::shared_ptr<const Executable>> exe = cuda_backend().compile(*nest);
      ASSERT_TRUE(exe.ok()) << exe.status().to_string();
      for (const DeviceKernel& k : (*exe)->kernels()) {
        EXPECT_EQ(k.assembled, have_ptxas) << k.name;
        if (k.assembled) {
          EXPECT_GT(k.registers, 0) << k.name;
        }
      }
    }
    EXPECT_GE(distinct.size(), size_t(kSchedulesPerFamily) / 2);  // random, not one tiling
  }
}

TEST(RandomGpuSchedule, ASeedGivesTheSameSchedule) {
  ProgramPtr program = parsed_program(families()[3].program);
  Rng a(11), b(11);
  Expected<Schedule> first = random_gpu_schedule(program, cuda_backend().lowering(), a);
  Expected<Schedule> second = random_gpu_schedule(program, cuda_backend().lowering(), b);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->trace().to_string(), second->trace().to_string());
}

// Matrix multiplications, batched or not, and convolutions are drawn in register
// tiles (a local cache) about half the time, most with inputs in shared memory: those
// lower, keep their accumulators per thread, and compute what the program computes.
TEST(RandomGpuSchedule, ReductionsGetSharedAndRegisterTiles) {
  const std::vector<Family> all = families();
  std::vector<std::string> programs = {matmul_program(0, 64, 96, 32), matmul_program(2, 32, 64, 16)};
  for (const Family& f : all)
    if (f.name == "c2d" || f.name == "dep" || f.name == "t2d") programs.push_back(f.program);
  for (const std::string& text : programs) {
    ProgramPtr program = parsed_program(text);
    int tiled = 0, shared = 0;
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      Rng rng(seed);
      Expected<Schedule> s = random_gpu_schedule(program, cuda_backend().lowering(), rng);
      ASSERT_TRUE(s.ok()) << s.status().to_string();
      const std::string trace = s->trace().to_string();
      if (trace.find("local)") == std::string::npos) continue;
      ++tiled;
      if (trace.find("shared)") != std::string::npos) ++shared;
      Expected<LoopNest> nest = lower(*s, cuda_backend().lowering());
      ASSERT_TRUE(nest.ok()) << trace << nest.status().to_string();
      EXPECT_EQ(cuda_test::interpreter_mismatch(*program, *nest), "") << trace;
    }
    EXPECT_GE(tiled, 3) << text;
    EXPECT_LE(tiled, 9) << text;
    EXPECT_GE(shared, 2) << text;
  }
}

// The default GPU schedule (the baseline of measured rewards on cuda) of every family:
// lowers, matches the reference, is the same every time; a single sum has none.
TEST(DefaultGpuSchedule, EveryFamilyLowersAndMatches) {
  for (const Family& f : families()) {
    ProgramPtr program = parsed_program(f.program);
    Expected<Schedule> s = default_gpu_schedule(program, cuda_backend().lowering());
    ASSERT_TRUE(s.ok()) << f.name << ": " << s.status().to_string();
    EXPECT_CONTAINS(s->trace().to_string(), "threadIdx.x");
    Expected<LoopNest> nest = lower(*s, cuda_backend().lowering());
    ASSERT_TRUE(nest.ok()) << f.name;
    EXPECT_EQ(cuda_test::interpreter_mismatch(*program, *nest), "") << f.name;
    EXPECT_EQ(default_gpu_schedule(program, cuda_backend().lowering())->trace().to_string(), s->trace().to_string());
  }
  Expected<Schedule> none = default_gpu_schedule(parsed_program(norm_program(1, 8, 8)), cuda_backend().lowering());
  EXPECT_EQ(none.status().code(), StatusCode::kFailedPrecondition);
}

TEST(RandomGpuSchedule, AProgramThatReducesToOneValueHasNone) {
  // The norm of one matrix: one sum over everything, a reduction across threads.
  ProgramPtr program = parsed_program(norm_program(1, 8, 8));
  Rng rng(1);
  Expected<Schedule> s = random_gpu_schedule(program, cuda_backend().lowering(), rng);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_CONTAINS(s.status().message(), "runs outside any GPU kernel");
}

}  // namespace
}  // namespace tensorgym
