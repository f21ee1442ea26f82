// The backend interface and its registry, the lowering pipeline with the target's
// passes (and its log, `tensorgym lower --after`), and the target that travels with
// measurement requests, results, provenance and episode states.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "codegen/backend/registry.h"
#include "codegen/ir/ir_printer.h"
#include "codegen/lower/lower.h"
#include "codegen/measure/measure_job.h"
#include "codegen/measure/measure_wire.h"
#include "codegen/schedule/schedule.h"
#include "envs/env_context.h"
#include "envs/episode_state.h"
#include "envs/replay.h"
#include "proto/episode_state_io.h"
#include "proto/tensorgym.pb.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

const std::string kBinary = std::string(TENSORGYM_BINARY_DIR) + "/bin/tensorgym";

const char* kGemm16 =
    "input A: f32[16, 16]\n"
    "input B: f32[16, 16]\n"
    "C[i, j] += A[i, k] * B[k, j]\n";
const char* kVectorized = "split(C.j, 8, jo, ji)\nvectorize(C.ji)";

Schedule scheduled(const std::string& program_text, const std::string& trace) {
  Expected<Program> p = parse_program(program_text);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  Expected<Schedule> s = Schedule::from_text(std::make_shared<const Program>(std::move(*p)), trace);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return std::move(*s);
}

// Runs a command through the shell; (exit status, stdout and stderr).
std::pair<int, std::string> run(const std::string& command) {
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// ---- the registry -------------------------------------------------------------------------

TEST(BackendRegistry, FindsTheCpuByNameAndByDefault) {
  Expected<const Backend*> cpu = find_backend("cpu");
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  EXPECT_EQ((*cpu)->name(), "cpu");
  EXPECT_EQ((*cpu)->target().name, "cpu");
  Expected<const Backend*> fallback = find_backend("");
  ASSERT_TRUE(fallback.ok());
  EXPECT_EQ(*fallback, *cpu);
  EXPECT_EQ(&host_backend(), *cpu);
  const std::vector<std::string> names = backend_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "cpu"), names.end());
}

TEST(BackendRegistry, AnUnknownTargetIsNotFoundAndListsTheKnownOnes) {
  Expected<const Backend*> cuda = find_backend("cuda-nope");
  ASSERT_FALSE(cuda.ok());
  EXPECT_EQ(cuda.status().code(), StatusCode::kNotFound);
  EXPECT_CONTAINS(cuda.status().message(), "unknown target 'cuda-nope'");
  EXPECT_CONTAINS(cuda.status().message(), "known targets: cpu");
}

TEST(BackendRegistry, TheCpuDescribesItselfAndItsPasses) {
  const Backend& cpu = host_backend();
  EXPECT_FALSE(cpu.target().fingerprint.empty());
  EXPECT_TRUE(cpu.target().has_cost_model);
  EXPECT_NE(cpu.machine_model(), nullptr);
  ASSERT_EQ(cpu.lowering().passes.size(), 1u);
  EXPECT_EQ(cpu.lowering().passes[0].name, "vectorize_loops");
  EXPECT_EQ(cpu.lowering().name, "cpu");
  EXPECT_FALSE(cpu.opcode_names().empty());
}

// ---- the pipeline -------------------------------------------------------------------------

TEST(LoweringPipeline, NamesEveryPassInOrderTargetPassesLast) {
  EXPECT_EQ(lowering_pass_names(),
            (std::vector<std::string>{"build_loop_nest", "auto_unroll", "simplify", "limit_code_size"}));
  EXPECT_EQ(lowering_pass_names(host_backend().lowering()),
            (std::vector<std::string>{"build_loop_nest", "auto_unroll", "simplify", "limit_code_size",
                                      "vectorize_loops"}));
}

TEST(LoweringPipeline, TheLogSeesEachPassAndTheLastEntryIsTheResult) {
  Schedule s = scheduled(kGemm16, kVectorized);
  std::vector<std::string> seen;
  std::vector<std::string> texts;
  LowerOptions options;
  options.after_pass = [&](std::string_view pass, const LoopNest& nest) {
    seen.emplace_back(pass);
    texts.push_back(to_string(nest.body));
  };
  Expected<LoopNest> nest = lower(s, host_backend().lowering(), options);
  ASSERT_TRUE(nest.ok()) << nest.status().to_string();
  EXPECT_EQ(seen, lowering_pass_names(host_backend().lowering()));
  EXPECT_EQ(nest->target, "cpu");
  EXPECT_EQ(texts.back(), to_string(nest->body));
  // vectorize_loops is what turns the vectorized loop into vector code.
  EXPECT_CONTAINS(texts[texts.size() - 2], "vectorized for");
  EXPECT_EQ(texts.back().find("vectorized for"), std::string::npos) << texts.back();
  EXPECT_CONTAINS(texts.back(), "ramp(");
}

TEST(LoweringPipeline, TheGenericNestHasNoTargetAndStopsBeforeItsPasses) {
  Schedule s = scheduled(kGemm16, kVectorized);
  Expected<LoopNest> generic = lower(s);
  ASSERT_TRUE(generic.ok());
  EXPECT_TRUE(generic->target.empty());
  EXPECT_CONTAINS(to_string(generic->body), "vectorized for");
  // The target's passes over the generic nest give what lower(s, target) gives.
  Expected<LoopNest> finished = lower_for_target(*generic, host_backend().lowering());
  ASSERT_TRUE(finished.ok());
  Expected<LoopNest> direct = lower(s, host_backend().lowering());
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(to_string(finished->body), to_string(direct->body));
  // Not twice.
  EXPECT_EQ(lower_for_target(*finished, host_backend().lowering()).status().code(), StatusCode::kFailedPrecondition);
}

TEST(CpuBackend, CompilesOnlyANestLoweredForIt) {
  Schedule s = scheduled(kGemm16, kVectorized);
  Expected<LoopNest> generic = lower(s);
  ASSERT_TRUE(generic.ok());
  Expected<std::shared_ptr<const Executable>> refused = host_backend().compile(*generic);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_CONTAINS(refused.status().message(), "not lowered for the cpu target");
  Expected<LoopNest> lowered = lower(s, host_backend().lowering());
  ASSERT_TRUE(lowered.ok());
  CompileOptions keep;
  keep.keep_code_text = true;
  Expected<std::shared_ptr<const Executable>> exe = host_backend().compile(*lowered, keep);
  ASSERT_TRUE(exe.ok()) << exe.status().to_string();
  EXPECT_CONTAINS((*exe)->code_text(), "define");
  Expected<std::vector<int64_t>> counts = host_backend().count_opcodes((*exe)->code_text());
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->size(), host_backend().opcode_names().size());
}

// ---- tensorgym lower --after ----------------------------------------------------------------

class LowerCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    program_ = (std::filesystem::temp_directory_path() / ("backend_test_" + std::to_string(getpid()) + ".tg")).string();
    std::ofstream(program_) << kGemm16;
  }
  void TearDown() override { std::filesystem::remove(program_); }
  std::string lower_cmd(const std::string& extra) {
    return kBinary + " lower --program " + program_ + " --schedule 'split(C.j, 8, jo, ji); vectorize(C.ji)' " + extra;
  }
  std::string program_;
};

TEST_F(LowerCommand, AfterAllShowsEveryPassVectorizationIncluded) {
  auto [rc, out] = run(lower_cmd("--after all"));
  ASSERT_EQ(rc, 0) << out;
  size_t at = 0;
  for (const std::string& pass : lowering_pass_names(host_backend().lowering())) {
    const size_t found = out.find("# after " + pass + "\n", at);
    ASSERT_NE(found, std::string::npos) << pass << " missing or out of order in:\n" << out;
    at = found + 1;
  }
  // The vectorized nest is the last one shown, and it is what `lower` prints alone.
  const std::string last = out.substr(out.find("# after vectorize_loops\n") + 24);
  EXPECT_CONTAINS(last, "ramp(");
  auto [rc2, plain] = run(lower_cmd(""));
  ASSERT_EQ(rc2, 0) << plain;
  EXPECT_CONTAINS(plain, last);
}

TEST_F(LowerCommand, AfterOnePassShowsThatPassOnly) {
  auto [rc, out] = run(lower_cmd("--after simplify"));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_CONTAINS(out, "# after simplify\n");
  EXPECT_EQ(out.find("# after vectorize_loops"), std::string::npos) << out;
  EXPECT_CONTAINS(out, "vectorized for");  // before the target's pass
}

TEST_F(LowerCommand, AnUnknownPassOrTargetIsAnErrorListingTheValidNames) {
  auto [rc, out] = run(lower_cmd("--after vectorise"));
  EXPECT_NE(rc, 0);
  EXPECT_CONTAINS(out, "unknown pass 'vectorise'");
  EXPECT_CONTAINS(out, "build_loop_nest, auto_unroll, simplify, limit_code_size, vectorize_loops");
  auto [rc2, out2] = run(lower_cmd("--target tpu"));
  EXPECT_NE(rc2, 0);
  EXPECT_CONTAINS(out2, "unknown target 'tpu'");
  EXPECT_CONTAINS(out2, "known targets: cpu");
}

// ---- the target travels -------------------------------------------------------------------

TEST(MeasureTarget, AResultNamesItsTargetAndAnUnknownOneIsAnInstantiationError) {
  MeasureRequest request;
  request.program = "input A: f32[4]\nB[i] = A[i] +* 2\n";  // fails before compiling: cheap
  MeasureResult r = run_measure_job(request);
  EXPECT_EQ(r.target, "cpu");
  EXPECT_EQ(r.provenance.target, "cpu");
  EXPECT_EQ(r.provenance.compiler_version, host_backend().target().compiler_version);

  request.target = "fpga-nope";
  request.program = "input A: f32[4]\nB[i] = A[i] * 2\n";
  MeasureResult unknown = run_measure_job(request);
  EXPECT_EQ(unknown.error, MeasureError::kInstantiation);
  EXPECT_CONTAINS(unknown.error_message, "unknown target 'fpga-nope'");
  EXPECT_EQ(unknown.target, "fpga-nope");
  EXPECT_EQ(unknown.provenance.target, "fpga-nope");
}

TEST(MeasureTarget, TheTargetCrossesTheWire) {
  MeasureRequest request;
  request.target = "cpu";
  request.job_id = 9;
  request.settings.seed = 4;
  Expected<MeasureRequest> back = parse_measure_request(serialize(request));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->target, "cpu");
  EXPECT_EQ(back->job_id, 9u);
  EXPECT_EQ(back->settings, request.settings);

  MeasureResult result;
  result.target = "cpu";
  result.provenance.target = "cpu";
  result.runtime.samples_s = {1e-3, 2e-3};
  result.runtime.repeat = 2;
  Expected<MeasureResult> got = parse_measure_result(serialize(result));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->target, "cpu");
  EXPECT_EQ(got->provenance.target, "cpu");
  EXPECT_EQ(got->runtime.samples_s, result.runtime.samples_s);
  EXPECT_CONTAINS(provenance_to_json(result.provenance), "\"target\":\"cpu\"");
  EXPECT_EQ(parse_measure_result("\xff\xff\xff").status().code(), StatusCode::kDataLoss);
}

TEST(EpisodeTarget, AStateKeepsItsTargetAndOldStatesAreCpu) {
  EpisodeState s;
  s.env = "schedule-v0";
  s.benchmark = "benchmark://ops-v0/gmm-1";
  EXPECT_EQ(s.target, "cpu");
  s.target = "cuda";
  Expected<EpisodeState> back = episode_state_from_json(episode_state_to_json(s));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->target, "cuda");
  Expected<EpisodeState> old =
      episode_state_from_json("{\"env\": \"schedule-v0\", \"benchmark\": \"benchmark://ops-v0/gmm-1\"}");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->target, "cpu");
}

TEST(EpisodeTarget, AStateReplaysOnItsOwnTargetOnly) {
  auto context = std::make_shared<EnvContext>();
  context->worker_binary = kBinary;
  EnvMaker make = [&](const std::string& name) { return make_env(name, context); };
  EpisodeState s;
  s.env = "schedule-v0";
  s.benchmark = "benchmark://ops-v0/gmm-1";
  s.actions = {"split(C.i, 32, io, ii)"};
  s.reward_space = "est_cycles";

  Expected<Replayed> here = replay_episode(s, make);
  ASSERT_TRUE(here.ok()) << here.status().to_string();
  EXPECT_EQ(here->env->state().target, "cpu");

  // A cuda state replays on the cuda target, where the cpu's model is not offered:
  // its rewards are never compared with the cpu's.
  s.target = "cuda";
  Expected<Replayed> on_cuda = replay_episode(s, make);
  ASSERT_FALSE(on_cuda.ok());
  EXPECT_EQ(on_cuda.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_CONTAINS(on_cuda.status().message(), "est_cycles models the cpu");
  s.reward_space = "est_gpu_time";
  Expected<Replayed> modelled = replay_episode(s, make);
  ASSERT_TRUE(modelled.ok()) << modelled.status().to_string();
  EXPECT_EQ(modelled->env->state().target, "cuda");

  // A target this server does not have: an error, not a replay elsewhere.
  s.target = "tpu";
  Expected<ValidationOutcome> validated = validate_episode(s, 0.25, make);
  ASSERT_FALSE(validated.ok());
  EXPECT_EQ(validated.status().code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(validated.status().message(), "unknown target 'tpu'");
}

}  // namespace
}  // namespace tensorgym
