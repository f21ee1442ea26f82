// The accelerator's schedule primitives: tensorize(S.l, gemm), pragma(S.l, dma_copy),
// the on-chip buffer scopes, vthread; each one's errors, the action space's masks by
// kind of target, and the CPU and GPU targets refusing them while the reference
// interpreter still runs the nest.
#include <gtest/gtest.h>

#include <algorithm>

#include "codegen/schedule/loop_marks.h"
#include "envs/schedule/primitive_actions.h"
#include "tests/cuda_test_support.h"
#include "tests/fpga_test_programs.h"

namespace tensorgym {
namespace {

using cuda_test::cuda_backend;
using cuda_test::interpreter_mismatch;
using cuda_test::scheduled;

const char* const kConv = fpga_test::kBlockedConv;
// The GEMM core's loops innermost: batch, output channel, input channel.
const char* const kCoreInnermost = "reorder(C, c, r, s, b, o, i)";

std::string error_of(const std::string& program, const std::string& trace) {
  Expected<Program> p = parse_program(program);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  Expected<Schedule> s = Schedule::from_text(std::make_shared<const Program>(std::move(*p)), trace);
  return s.ok() ? std::string("(applied)") : s.status().to_string();
}

const Backend& cpu_backend() { return **find_backend("cpu"); }

TEST(FpgaPrimitives, TensorizeMarksTheCoreLoopsAndTheInterpreterStillRunsThem) {
  const std::string trace = std::string(kCoreInnermost) + "; tensorize(C.b, gemm)";
  Schedule s = scheduled(kConv, trace);
  const StageSchedule& c = *s.state().find_stage("C");
  EXPECT_TRUE(is_tensorized(c.loops[size_t(c.find_loop("b"))]));
  EXPECT_NE(s.trace().to_string().find("tensorize(C.b, gemm)"), std::string::npos) << s.trace().to_string();
  // The reference interpreter runs the loops as loops.
  Expected<LoopNest> nest = lower(s);
  ASSERT_TRUE(nest.ok()) << nest.status().to_string();
  EXPECT_EQ(interpreter_mismatch(s.state().program(), *nest), "");
  // Only the accelerator runs a tensorized loop.
  for (const Backend* b : {&cpu_backend(), &cuda_backend()}) {
    Expected<LoopNest> target = lower(s, b->lowering());
    ASSERT_FALSE(target.ok()) << b->target().name;
    EXPECT_EQ(target.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(target.status().message().find("C.b is tensorized (gemm)"), std::string::npos)
        << target.status().message();
  }
  // Applying it again has no effect; elsewhere in the stage it is refused.
  EXPECT_NE(error_of(kConv, trace + "; tensorize(C.s, gemm)").find("already tensorized at loop b"),
            std::string::npos);
}

TEST(FpgaPrimitives, TensorizeSaysWhatDoesNotFitTheCore) {
  // Four loops from C.s inward.
  EXPECT_NE(error_of(kConv, std::string(kCoreInnermost) + "; tensorize(C.s, gemm)").find("has 4 loops"),
            std::string::npos);
  // The reduction is not innermost.
  EXPECT_NE(error_of(kConv, "reorder(C, c, r, s, b, i, o); tensorize(C.b, gemm)").find("loop C.i is a reduction"),
            std::string::npos)
      << error_of(kConv, "reorder(C, c, r, s, b, i, o); tensorize(C.b, gemm)");
  // A split inside makes four loops.
  EXPECT_NE(error_of(kConv, std::string(kCoreInnermost) + "; split(C.i, 4, io, ii); tensorize(C.b, gemm)")
                .find("has 4 loops"),
            std::string::npos);
  // Annotated loops.
  EXPECT_NE(error_of(kConv, std::string(kCoreInnermost) + "; unroll(C.o); tensorize(C.b, gemm)").find("annotated"),
            std::string::npos);
  // Not an int8 product summed in int32.
  const char* f32 = "input A: f32[16, 16]\ninput B: f32[16, 16]\nD[i, j] += A[i, k] * B[j, k]\n";
  EXPECT_NE(error_of(f32, "tensorize(D.i, gemm)").find("not an int32 sum"), std::string::npos);
  const char* no_cast = "input A: i32[16, 16]\ninput B: i32[16, 16]\nD[i, j] += A[i, k] * B[j, k]\n";
  EXPECT_NE(error_of(no_cast, "tensorize(D.i, gemm)").find("i32(x) * i32(w)"), std::string::npos);
  // An element-wise stage is no sum at all; an unknown intrinsic is named.
  EXPECT_NE(error_of(kConv, "tensorize(Y.b, gemm)").find("not an int32 sum"), std::string::npos);
  EXPECT_NE(error_of(kConv, std::string(kCoreInnermost) + "; tensorize(C.b, conv)").find("conv"), std::string::npos);
}

TEST(FpgaPrimitives, DmaCopyOnlyOnCopiesAndOnlyOnTheAccelerator) {
  Schedule s = scheduled(kConv, "compute_at(P, C.c); pragma(P.h, dma_copy)");
  EXPECT_TRUE(is_dma_copy(s.state().find_stage("P")->loops[size_t(s.state().find_stage("P")->find_loop("h"))]));
  Expected<LoopNest> nest = lower(s);
  ASSERT_TRUE(nest.ok()) << nest.status().to_string();
  EXPECT_EQ(interpreter_mismatch(s.state().program(), *nest), "");
  Expected<LoopNest> on_cpu = lower(s, cpu_backend().lowering());
  ASSERT_FALSE(on_cpu.ok());
  EXPECT_NE(on_cpu.status().message().find("P.h is a DMA transfer (dma_copy)"), std::string::npos)
      << on_cpu.status().message();
  // A cache_read stage is a copy too.
  EXPECT_EQ(error_of(kConv, "cache_read(W, C, WL); compute_at(WL, C.c); pragma(WL.ax0, dma_copy)"), "(applied)");
  // Not a copy; a value given; auto_unroll without its n; a stage computed inside.
  EXPECT_NE(error_of(kConv, "pragma(C.n, dma_copy)").find("not a copy"), std::string::npos);
  EXPECT_NE(error_of(kConv, "pragma(P.h, dma_copy, 4)").find("takes no value"), std::string::npos);
  EXPECT_NE(error_of(kConv, "pragma(C.n, auto_unroll_max_step)").find("takes its n"), std::string::npos);
  EXPECT_NE(error_of(kConv, "compute_at(P, C.c); cache_read(X, P, XL); compute_at(XL, P.w); pragma(P.n, dma_copy)")
                .find("inside the transfer"),
            std::string::npos);
}

TEST(FpgaPrimitives, BufferScopesAreTheAcceleratorsAlone) {
  const std::string trace = "compute_at(P, C.c); set_scope(P, inp_buffer); set_scope(C, acc_buffer)";
  Schedule s = scheduled(kConv, trace);
  EXPECT_EQ(s.state().find_stage("P")->scope, MemoryScope::kInpBuffer);
  EXPECT_FALSE(lower(s).ok());  // the target-independent nest keeps scopes only where asked
  Expected<LoopNest> nest = lower(s, LowerOptions{.allow_accelerator_scopes = true});
  ASSERT_TRUE(nest.ok()) << nest.status().to_string();
  EXPECT_EQ(interpreter_mismatch(s.state().program(), *nest), "");
  Expected<LoopNest> on_cpu = lower(s, cpu_backend().lowering());
  ASSERT_FALSE(on_cpu.ok());
  EXPECT_NE(on_cpu.status().message().find("inp_buffer"), std::string::npos) << on_cpu.status().message();
  Expected<LoopNest> on_gpu = lower(s, cuda_backend().lowering());
  ASSERT_FALSE(on_gpu.ok());
  EXPECT_NE(on_gpu.status().message().find("the accelerator's"), std::string::npos) << on_gpu.status().message();
  // cache_read takes the same words; an output stays in global memory.
  EXPECT_EQ(error_of(kConv, "cache_read(W, C, WL, wgt_buffer)"), "(applied)");
  EXPECT_NE(error_of(kConv, "set_scope(Y, acc_buffer)").find("is an output"), std::string::npos);
  EXPECT_NE(error_of(kConv, "set_scope(P, sram)").find("inp_buffer, wgt_buffer, acc_buffer"), std::string::npos);
}

// The flat space offers the accelerator's choices on an accelerator target only, and
// no longer offers what means nothing there (parallel, vectorize, unrolling pragmas).
TEST(FpgaPrimitives, TheMaskOffersEachKindOfTargetItsOwnChoices) {
  Schedule s = scheduled(kConv, std::string(kCoreInnermost) + "; compute_at(P, C.c)");
  auto offered = [&](TargetKind target, const std::string& prefix) {
    std::vector<int64_t> m = PrimitiveActions::mask(s.state(), target);
    std::vector<std::string> out;
    for (size_t i = 0; i < m.size(); ++i)
      if (m[i] && PrimitiveActions::describe(int64_t(i)).rfind(prefix, 0) == 0) {
        Expected<BoundPrimitive> p = PrimitiveActions::decode(s.state(), int64_t(i));
        EXPECT_TRUE(p.ok()) << i;
        out.push_back(primitive_text(s.state(), *p).to_string());
      }
    return out;
  };
  auto has = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  // C is stage 1 (P, C, Y): tensorize at the batch loop, the first of the last three.
  EXPECT_EQ(offered(TargetKind::kAccelerator, "tensorize"), std::vector<std::string>{"tensorize(C.b, gemm)"});
  EXPECT_TRUE(offered(TargetKind::kCpu, "tensorize").empty());
  EXPECT_TRUE(offered(TargetKind::kGpu, "tensorize").empty());
  std::vector<std::string> pragmas = offered(TargetKind::kAccelerator, "pragma");
  EXPECT_TRUE(has(pragmas, "pragma(P.h, dma_copy)")) << pragmas.size();
  for (const std::string& p : pragmas) EXPECT_EQ(p.find("auto_unroll"), std::string::npos) << p;
  EXPECT_FALSE(has(offered(TargetKind::kCpu, "pragma"), "pragma(P.h, dma_copy)"));
  std::vector<std::string> scopes = offered(TargetKind::kAccelerator, "set_scope");
  EXPECT_TRUE(has(scopes, "set_scope(P, inp_buffer)"));
  EXPECT_FALSE(has(scopes, "set_scope(P, shared)"));
  EXPECT_FALSE(has(offered(TargetKind::kGpu, "set_scope"), "set_scope(P, inp_buffer)"));
  std::vector<std::string> binds = offered(TargetKind::kAccelerator, "bind");
  ASSERT_FALSE(binds.empty());
  for (const std::string& b : binds) EXPECT_NE(b.find("vthread"), std::string::npos) << b;
  EXPECT_TRUE(offered(TargetKind::kAccelerator, "parallel").empty());
  EXPECT_TRUE(offered(TargetKind::kAccelerator, "vectorize").empty());
}

}  // namespace
}  // namespace tensorgym
