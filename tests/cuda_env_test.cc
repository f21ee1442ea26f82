// schedule-v0 on the cuda target (reset option `target`): bind actions, the GPU model's
// reward and observation, the PTX and ptxas's statistics, correctness by the reference
// interpreter where no GPU runs the kernels, states that replay on their target, and
// the same over gRPC through the C++ client.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "client/connection.h"
#include "client/remote_env.h"
#include "codegen/backend/registry.h"
#include "envs/env_context.h"
#include "envs/replay.h"
#include "envs/schedule/cursor_actions.h"
#include "tests/env_test_support.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

const std::string kGemm = "benchmark://ops-v0/gmm-1";  // 128 x 128 x 128

// Blocks of 16 x 32 outputs, one thread each, threadIdx.x along j.
const std::vector<std::string> kBindActions = {
    "split(C.i, 16, io, ii)",  "split(C.j, 32, jo, ji)",  "reorder(C, io, jo, ii, ji, k)",
    "bind(C.io, blockIdx.y)",  "bind(C.jo, blockIdx.x)", "bind(C.ii, threadIdx.y)",
    "bind(C.ji, threadIdx.x)"};

using env_test::context;
using env_test::env;

ResetOptions on_cuda() {
  ResetOptions o;
  o.target = "cuda";
  return o;
}

double number(const Event& e) { return e.is<double>() ? e.as<double>() : std::nan(""); }

// The episode bound for the GPU, its est_gpu_time rewards one per action.
std::vector<double> bind_gemm(Env& e) {
  std::vector<double> rewards;
  for (const std::string& a : kBindActions) {
    StepResult r = e.step({Event(a)}, {}, {"est_gpu_time"});
    EXPECT_TRUE(r.error.ok()) << a << ": " << r.error.to_string();
    rewards.push_back(r.rewards.empty() ? 0.0 : r.rewards[0]);
  }
  return rewards;
}

TEST(CudaEnv, BindingLoopsEarnTheLogSpeedupOfTheGpuModel) {
  auto e = env();
  Expected<std::vector<Event>> first = e->reset(kGemm, on_cuda(), {"est_gpu_time"});
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  const double unbound = number((*first)[0]);
  StepResult start = e->step({}, {}, {"est_gpu_time"});
  ASSERT_TRUE(start.error.ok()) << start.error.to_string();
  EXPECT_EQ(start.rewards[0], 0.0);
  std::vector<double> rewards = bind_gemm(*e);
  EXPECT_EQ(rewards[0], 0.0);  // a split alone changes nothing the model sees
  double sum = 0;
  for (double r : rewards) sum += r;
  StepResult now = e->step({}, {"est_gpu_time"}, {});
  const double bound = number(now.observations[0]);
  EXPECT_GT(unbound, 100 * bound);
  EXPECT_NEAR(sum, std::log(unbound / bound), 1e-9);
  // The model's view, kernel by kernel: one kernel of 32 blocks of 16 x 32 threads.
  StepResult features = e->step({}, {"gpu_features"}, {});
  ASSERT_TRUE(features.error.ok()) << features.error.to_string();
  const DoubleTensor& f = features.observations[0].as<DoubleTensor>();
  ASSERT_EQ(f.shape, (std::vector<int64_t>{1, 16}));
  EXPECT_EQ(f.values[0], 0.0);       // not a single thread
  EXPECT_EQ(f.values[2], 8.0 * 4);   // blocks
  EXPECT_EQ(f.values[3], 16.0 * 32);  // threads per block
  EXPECT_EQ(f.values[4], 0.0);       // no shared memory
  EXPECT_EQ(f.values[7], 2.0 * 128 * 128 * 128);  // flops
  EXPECT_EQ(f.values[15], bound);    // its seconds are est_gpu_time's
  EpisodeState s = e->state();
  EXPECT_EQ(s.target, "cuda");
  EXPECT_EQ(s.reward_space, "est_gpu_time");
  EXPECT_NEAR(s.deterministic_rewards["est_gpu_time"], sum, 1e-12);
}

// The model values only schedules a GPU could run (work outside any kernel it runs on
// one thread): too many threads per block have no estimate, and the reward is the
// error's. CPU-parallel loops never get there: parallel() is refused on cuda.
TEST(CudaEnv, TheModelRefusesWhatAGpuCannotRun) {
  auto e = env();
  ASSERT_TRUE(e->reset(kGemm, on_cuda(), {}).ok());
  ASSERT_TRUE(e->step({}, {}, {"est_gpu_time"}).error.ok());
  // 128 x 128 threads in one block: 16384, past CUDA's 1024.
  StepResult big = e->step({Event("bind(C.i, threadIdx.y)"), Event("bind(C.j, threadIdx.x)")}, {"est_gpu_time"},
                           {"est_gpu_time"});
  EXPECT_EQ(big.error.code(), StatusCode::kFailedPrecondition) << big.error.to_string();
  EXPECT_CONTAINS(big.error.message(), "threads per block");
  EXPECT_EQ(big.rewards[0], -1.0);  // reward_on_error
  auto p = env();
  ASSERT_TRUE(p->reset(kGemm, on_cuda(), {}).ok());
  // parallel() is the cpu's: refused on cuda, as bind() is on the cpu.
  StepResult parallel = p->step({Event("parallel(C.i)")}, {"est_gpu_time"}, {});
  EXPECT_EQ(parallel.error.code(), StatusCode::kFailedPrecondition);
  EXPECT_CONTAINS(parallel.error.message(), "parallel is a primitive of cpu schedules");
  EXPECT_TRUE(p->state().actions.empty());
}

TEST(CudaEnv, PtxPtxasStatsAndCorrectnessWithoutAGpu) {
  auto e = env();
  ASSERT_TRUE(e->reset(kGemm, on_cuda(), {}).ok());
  // Unbound, the target's lowering refuses it, saying how to bind.
  StepResult unbound = e->step({}, {"ptx"}, {});
  EXPECT_EQ(unbound.error.code(), StatusCode::kFailedPrecondition) << unbound.error.to_string();
  EXPECT_CONTAINS(unbound.error.message(), "bind it");
  bind_gemm(*e);
  StepResult r = e->step({}, {"ptx", "correct"}, {});
  ASSERT_TRUE(r.error.ok()) << r.error.to_string();
  const std::string ptx = r.observations[0].as<std::string>();
  EXPECT_CONTAINS(ptx, ".target sm_90");
  EXPECT_CONTAINS(ptx, ".entry");
  EXPECT_TRUE(r.observations[1].as<bool>());  // the interpreter ran the GPU nest
  StepResult stats = e->step({}, {"ptxas_stats"}, {});
  if (!stats.error.ok()) {
    EXPECT_EQ(stats.error.code(), StatusCode::kFailedPrecondition);
    EXPECT_CONTAINS(stats.error.message(), "ptxas");
    GTEST_SKIP() << "no ptxas here: " << stats.error.message();
  }
  const Int64Tensor& t = stats.observations[0].as<Int64Tensor>();
  ASSERT_EQ(t.shape, (std::vector<int64_t>{1, 7}));
  EXPECT_GT(t.values[0], 0);             // registers
  EXPECT_EQ(t.values[5], 16 * 32);       // threads per block
  EXPECT_EQ(t.values[6], 8 * 4);         // blocks
}

TEST(CudaEnv, MeasuringWithoutAGpuIsAClearErrorAndCpuSpacesRefuse) {
  if ((*find_backend("cuda"))->target().can_run) GTEST_SKIP() << "a GPU runs the kernels here";
  auto e = env();
  ASSERT_TRUE(e->reset(kGemm, on_cuda(), {}).ok());
  bind_gemm(*e);
  StepResult runtime = e->step({}, {}, {"runtime"});
  EXPECT_FALSE(runtime.error.ok());
  EXPECT_CONTAINS(runtime.error.message(), "cannot be measured here");
  StepResult cycles = e->step({}, {}, {"est_cycles"});
  EXPECT_EQ(cycles.error.code(), StatusCode::kFailedPrecondition);
  EXPECT_CONTAINS(cycles.error.message(), "est_gpu_time");
  StepResult ir = e->step({}, {"llvm_ir"}, {});
  EXPECT_EQ(ir.error.code(), StatusCode::kFailedPrecondition);
  EXPECT_CONTAINS(ir.error.message(), "its code: ptx");
  // And the other way round: a cpu episode has no PTX and no GPU model.
  auto cpu = env();
  ASSERT_TRUE(cpu->reset(kGemm, {}, {}).ok());
  EXPECT_EQ(cpu->state().target, "cpu");
  StepResult ptx = cpu->step({}, {"ptx"}, {});
  EXPECT_EQ(ptx.error.code(), StatusCode::kFailedPrecondition);
  StepResult gpu_time = cpu->step({}, {}, {"est_gpu_time"});
  EXPECT_EQ(gpu_time.error.code(), StatusCode::kUnimplemented) << gpu_time.error.to_string();
  // bind() is the cuda target's: on the cpu it is refused, the state unchanged.
  StepResult bind = cpu->step({Event("bind(C.i, blockIdx.x)")}, {"est_cycles"}, {});
  EXPECT_EQ(bind.error.code(), StatusCode::kFailedPrecondition);
  EXPECT_CONTAINS(bind.error.message(), "bind is a primitive of gpu and accelerator schedules");
  EXPECT_TRUE(cpu->state().actions.empty());
}

// bind's block of the primitives space follows the existing blocks (no index moves);
// the mask offers it on cuda only, and an index in it binds as its text does.
TEST(CudaEnv, TheMaskOffersBindOnTheCudaTargetOnly) {
  constexpr int64_t kBindBlock = 1976;  // 8 stages x 12 loops x 7 tags from here
  auto mask_of = [](Env& e) {
    StepResult r = e.step({}, {"action_mask"}, {});
    EXPECT_TRUE(r.error.ok()) << r.error.to_string();
    return r.observations[0].as<Int64Tensor>().values;
  };
  auto cpu = env();
  ASSERT_TRUE(cpu->reset(kGemm, {}, {}).ok());
  std::vector<int64_t> on_cpu = mask_of(*cpu);
  constexpr int64_t kSetScopeBlock = kBindBlock + 8 * 12 * 7;  // 8 stages x 3 scopes from here
  // Then tensorize's (8 x 12), pragma dma_copy's (8 x 12) and set_scope's accelerator
  // buffers (8 x 3): blocks of the accelerator's, after every earlier block.
  ASSERT_EQ(on_cpu.size(), size_t(kSetScopeBlock + 8 * 3 + 8 * 12 * 2 + 8 * 3));
  for (size_t i = kBindBlock; i < on_cpu.size(); ++i) ASSERT_EQ(on_cpu[i], 0) << i;
  StepResult refused = cpu->step({Event(kBindBlock)}, {}, {});
  EXPECT_EQ(refused.error.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(cpu->state().actions.empty());

  auto gpu = env();
  ASSERT_TRUE(gpu->reset(kGemm, on_cuda(), {}).ok());
  std::vector<int64_t> on_gpu = mask_of(*gpu);
  // The blocks before bind's as on the cpu but parallel's (8 stages x 12 loops from
  // 1152), which is the cpu's: none of it on cuda.
  constexpr int64_t kParallelBlock = 1152, kParallelEnd = 1152 + 8 * 12;
  int64_t parallel_on_cpu = 0;
  for (int64_t i = 0; i < kBindBlock; ++i) {
    if (i >= kParallelBlock && i < kParallelEnd) {
      EXPECT_EQ(on_gpu[size_t(i)], 0) << i;
      parallel_on_cpu += on_cpu[size_t(i)];
    } else {
      EXPECT_EQ(on_gpu[size_t(i)], on_cpu[size_t(i)]) << i;
    }
  }
  EXPECT_GT(parallel_on_cpu, 0);
  // Stage C's leaf loops i and j (k is a reduction): 7 tags each; C is an output, so
  // of the scopes only global (where it is already, unset) is offered.
  int64_t offered = 0;
  for (size_t i = kBindBlock; i < size_t(kSetScopeBlock); ++i) offered += on_gpu[i];
  EXPECT_EQ(offered, 2 * 7);
  EXPECT_EQ(on_gpu[size_t(kSetScopeBlock)], 1);
  EXPECT_EQ(on_gpu[size_t(kSetScopeBlock) + 1] + on_gpu[size_t(kSetScopeBlock) + 2], 0);
  StepResult bound = gpu->step({Event(kBindBlock + 3)}, {"action_mask"}, {});  // loop 0, tag 3
  ASSERT_TRUE(bound.error.ok()) << bound.error.to_string();
  EXPECT_EQ(gpu->state().actions, (std::vector<std::string>{"bind(C.i, threadIdx.x)"}));
  // The tag is taken now, and loop i is bound: j keeps the other 6 tags.
  offered = 0;
  const std::vector<int64_t>& after = bound.observations[0].as<Int64Tensor>().values;
  for (size_t i = kBindBlock; i < size_t(kSetScopeBlock); ++i) offered += after[i];
  EXPECT_EQ(offered, 6);

  // The cursor space on cuda: `parallel` is neither offered nor applied.
  auto cursor = env();
  ResetOptions o = on_cuda();
  o.action_space = "cursor";
  ASSERT_TRUE(cursor->reset(kGemm, o, {}).ok());
  Expected<int64_t> parallel = CursorActions::index_of("parallel");
  ASSERT_TRUE(parallel.ok());
  EXPECT_EQ(mask_of(*cursor)[size_t(*parallel)], 0);
  StepResult refused_here = cursor->step({Event("parallel")}, {}, {});
  EXPECT_EQ(refused_here.error.code(), StatusCode::kFailedPrecondition) << refused_here.error.to_string();
  EXPECT_TRUE(cursor->state().actions.empty());
}

TEST(CudaEnv, AnUnknownTargetIsRefusedAndTheEpisodeStays) {
  auto e = env();
  ASSERT_TRUE(e->reset(kGemm, on_cuda(), {}).ok());
  ASSERT_TRUE(e->step({Event(kBindActions[0])}, {}, {}).error.ok());
  ResetOptions tpu;
  tpu.target = "tpu";
  Expected<std::vector<Event>> refused = e->reset(kGemm, tpu, {});
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(refused.status().message(), "cpu, cuda");
  EXPECT_EQ(e->state().target, "cuda");
  EXPECT_EQ(e->state().actions.size(), 1u);
  // memory-v0 plans memory; it has no cuda target.
  auto memory = env("memory-v0");
  Expected<std::vector<Event>> m = memory->reset("benchmark://graphs-v0/mobilenet_v2", on_cuda(), {});
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
}

TEST(CudaEnv, ForksAndStatesKeepTheTargetAndValidate) {
  auto e = env();
  ASSERT_TRUE(e->reset(kGemm, on_cuda(), {}).ok());
  ASSERT_TRUE(e->step({}, {}, {"est_gpu_time"}).error.ok());
  bind_gemm(*e);
  Expected<std::unique_ptr<Env>> fork = e->fork();
  ASSERT_TRUE(fork.ok());
  EXPECT_EQ((*fork)->state().target, "cuda");
  const EpisodeState s = e->state();
  EnvMaker make = [](const std::string& name) { return make_env(name, context()); };
  Expected<ValidationOutcome> v = validate_episode(s, 0.25, make);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_TRUE(v->ok) << v->error;
  EXPECT_EQ(v->replayed["est_gpu_time"], s.deterministic_rewards.at("est_gpu_time"));  // bit-exact
}

TEST(CudaEnv, OverGrpcTheClientStepsTheSameEpisode) {
  client::ConnectionOptions o;
  o.server_binary = env_test::kBinary;
  o.server_args = {"--threads", "1"};
  o.call_timeout_s = 120;
  Expected<std::shared_ptr<client::Connection>> c = client::Connection::open(std::move(o));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  Expected<std::unique_ptr<client::RemoteEnv>> remote = (*c)->make_env("schedule-v0");
  ASSERT_TRUE(remote.ok()) << remote.status().to_string();
  ASSERT_TRUE((*remote)->reset(kGemm, on_cuda(), {}).ok());
  ASSERT_TRUE((*remote)->step({}, {}, {"est_gpu_time"}).error.ok());
  std::vector<double> over_grpc = bind_gemm(**remote);
  auto local = env();
  ASSERT_TRUE(local->reset(kGemm, on_cuda(), {}).ok());
  ASSERT_TRUE(local->step({}, {}, {"est_gpu_time"}).error.ok());
  EXPECT_EQ(over_grpc, bind_gemm(*local));  // a deterministic model: the same bits
  EpisodeState s = (*remote)->state();
  EXPECT_EQ(s.target, "cuda");
  Expected<client::ValidationResult> v = (*c)->validate(s);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_TRUE(v->ok) << v->error;
}

}  // namespace
}  // namespace tensorgym
