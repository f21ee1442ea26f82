// The GPU shared-memory template (codegen/lower/gpu_shared_tile.h) on matrix
// multiplications and every convolution family of ops-v0 at small sizes: random tiles
// lower for the cuda target, compute what the unscheduled program computes (the
// reference interpreter on the GPU nest), and assemble with ptxas where it is
// installed; the random GPU schedules draw them for convolutions too.
#include <gtest/gtest.h>

#include <string>

#include "codegen/cuda/ptxas.h"
#include "codegen/lower/default_gpu_schedule.h"
#include "codegen/lower/gpu_shared_tile.h"
#include "codegen/lower/random_gpu_schedule.h"
#include "tests/cuda_test_support.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

using cuda_test::parsed_program;

using cuda_test::cuda_backend;


// The family's reduction stage (the last one that reduces).
std::string reduction_stage(const Program& p) {
  std::string name;
  for (const StageDef& d : p.stages)
    if (d.is_reduction() && !d.axes.empty()) name = d.name;
  return name;
}

// Lowers, matches the interpreter and assembles; returns the lowering error, if any.
std::string check(const Program& program, const Schedule& s, bool have_ptxas) {
  Expected<LoopNest> nest = lower(s, cuda_backend().lowering());
  if (!nest.ok()) return nest.status().to_string();
  EXPECT_EQ(cuda_test::interpreter_mismatch(program, *nest), "");
  Expected<std::shared_ptr<const Executable>> exe = cuda_backend().compile(*nest);
  EXPECT_TRUE(exe.ok()) << exe.status().to_string();
  if (exe.ok())
    for (const DeviceKernel& k : (*exe)->kernels()) {
      EXPECT_EQ(k.assembled, have_ptxas) << k.name;
      if (k.assembled) EXPECT_EQ(k.spill_store_bytes, 0) << k.name;
    }
  return "";
}

// Random tiles of every family with a reduction, its producers inlined: most
// lower (the rest break a launch or shared-memory limit, which lowering says), and
// those that do match and assemble, with their inputs in shared memory.
TEST(GpuSharedTile, RandomTilesOfEveryFamilyLowerMatchAndAssemble) {
  const bool have_ptxas = !cuda::find_ptxas().empty();
  for (const cuda_test::Family& f : cuda_test::families()) {
    ProgramPtr program = parsed_program(f.program);
    const std::string stage = reduction_stage(*program);
    if (f.name.rfind("nrm", 0) == 0) continue;  // a norm: no shared reuse
    SCOPED_TRACE(f.name);
    int lowered = 0, shared = 0;
    for (uint64_t seed = 1; seed <= 8; ++seed) {
      Rng rng(seed);
      Schedule s(program);
      Expected<GpuSharedTile> tile = random_gpu_shared_tile(s, stage, rng);
      if (!tile.ok()) continue;  // too small for a block of threads
      Status applied = apply_gpu_shared_tile(s, stage, *tile);
      ASSERT_TRUE(applied.ok()) << applied.to_string();
      // The producers the template did not inline into a copy run as their own kernels.
      for (const StageDef& d : program->stages)
        if (s.state().find_stage(d.name)->attach == AttachKind::kRoot && d.name != stage)
          ASSERT_TRUE(bind_gpu_stage_default(s, d.name).ok());
      const std::string trace = s.trace().to_string();
      SCOPED_TRACE(trace);
      EXPECT_CONTAINS(trace, "local)");
      if (trace.find("shared)") != std::string::npos) ++shared;
      const std::string error = check(*program, s, have_ptxas);
      if (error.empty()) ++lowered;
      else ADD_FAILURE() << f.name << ": " << error;
    }
    EXPECT_GE(lowered, 4) << f.name;
    EXPECT_GE(shared, 1) << f.name;
  }
}

}  // namespace
}  // namespace tensorgym
