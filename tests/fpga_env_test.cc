// schedule-v0 on the fpga target (reset option `target`): the fpga-v0 dataset and its
// expert schedules, the `runtime` reward as simulated cycles at the design's clock
// (deterministic, so states record and validate it to the bit), the fpga observations,
// virtual threads beating the same schedule without them, the simulator as a session
// parameter, and the refusals on other targets.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "datasets/registry.h"
#include "envs/env_context.h"
#include "envs/replay.h"
#include "envs/schedule/cursor_actions.h"
#include "tests/env_test_support.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

const std::string kGemm = "benchmark://fpga-v0/gemm_16x512x512";

using env_test::context;
using env_test::env;

ResetOptions on_fpga() {
  ResetOptions o;
  o.target = "fpga";
  return o;
}

// A schedule file's primitives, one action each.
std::vector<std::string> actions_of(const std::string& schedule) {
  std::vector<std::string> out;
  std::istringstream lines(schedule);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream parts(line);
    for (std::string a; std::getline(parts, a, ';');) {
      a.erase(0, a.find_first_not_of(' '));
      if (!a.empty()) out.push_back(a);
    }
  }
  return out;
}

std::string expert_of(const std::string& uri) {
  Expected<Benchmark> b = DatasetRegistry::global().resolve(uri);
  EXPECT_TRUE(b.ok()) << b.status().to_string();
  return b.ok() ? b->expert_schedule : "";
}

double observed(Env& e, const std::string& name) {
  StepResult r = e.step({}, {name}, {});
  EXPECT_TRUE(r.error.ok()) << r.error.to_string();
  return r.error.ok() && r.observations[0].is<double>() ? r.observations[0].as<double>() : -1;
}

TEST(FpgaDataset, EmbedsTheFilesOfDatasetsFpga) {
  namespace fs = std::filesystem;
  Expected<const Dataset*> dataset = DatasetRegistry::global().find_dataset("fpga-v0");
  ASSERT_TRUE(dataset.ok()) << dataset.status().to_string();
  int programs = 0;
  for (const fs::directory_entry& f : fs::directory_iterator(std::string(TENSORGYM_SOURCE_DIR) + "/datasets/fpga")) {
    if (f.path().extension() != ".tg") continue;
    ++programs;
    const std::string stem = f.path().stem().string();
    Expected<Benchmark> b = DatasetRegistry::global().resolve("benchmark://fpga-v0/" + stem);
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    auto read = [](const fs::path& p) {
      std::ifstream in(p);
      std::stringstream s;
      s << in.rdbuf();
      return s.str();
    };
    EXPECT_EQ(b->program_text, read(f.path())) << stem;
    EXPECT_EQ(b->expert_schedule, read(f.path().parent_path() / (stem + ".fpga.sched"))) << stem;
  }
  EXPECT_EQ((*dataset)->size(), programs);
  EXPECT_GE(programs, 13);  // ResNet-18 C2..C11 and three GEMMs
}

TEST(FpgaEnv, TheExpertEpisodeIsRewardedBySimulatedRuntimeAndValidates) {
  std::unique_ptr<Env> e = env();
  ASSERT_TRUE(e->reset(kGemm, on_fpga(), {}).ok());
  // The episode starts at the default schedule's runtime: no reward yet.
  StepResult start = e->step({}, {}, {"runtime"});
  ASSERT_TRUE(start.error.ok()) << start.error.to_string();
  EXPECT_EQ(start.rewards[0], 0.0);
  // Until the schedule is whole the accelerator cannot run it: no runtime, no reward
  // (and no error: the schedule is not wrong, only unfinished); then the whole gain.
  const std::vector<std::string> actions = actions_of(expert_of(kGemm));
  double total = 0;
  for (size_t i = 0; i < actions.size(); ++i) {
    StepResult r = e->step({Event(actions[i])}, {}, {"runtime"});
    ASSERT_TRUE(r.error.ok()) << actions[i] << ": " << r.error.to_string();
    if (i + 1 < actions.size()) EXPECT_EQ(r.rewards[0], 0.0) << actions[i];
    total += r.rewards[0];
  }
  EXPECT_GT(total, 0.5);  // the expert tiling is more than twice as fast as the smallest
  StepResult last = e->step({}, {"fpga_cycles", "fpga_instructions", "correct", "runtime"}, {"runtime"});
  ASSERT_TRUE(last.error.ok()) << last.error.to_string();
  EXPECT_EQ(last.rewards[0], 0.0);  // the same state again
  const Int64Tensor& cycles = last.observations[0].as<Int64Tensor>();
  ASSERT_EQ(cycles.shape.size(), 1u);
  EXPECT_GT(cycles.values[0], 0);
  EXPECT_CONTAINS(last.observations[1].as<std::string>(), "tiling h1 w16 k1 c1 vt2");
  EXPECT_TRUE(last.observations[2].as<bool>());
  EXPECT_EQ(last.observations[3].as<double>(), double(cycles.values[0]) / 100e6);  // at 100 MHz

  // The runtime reward is deterministic here: recorded, and validated to the bit.
  EpisodeState s = e->state();
  EXPECT_EQ(s.target, "fpga");
  ASSERT_TRUE(s.deterministic_rewards.count("runtime"));
  EXPECT_EQ(s.deterministic_rewards.at("runtime"), total);
  EXPECT_CONTAINS(s.provenance_json, "\"clock\":\"fsim\"");
  EnvMaker make = [](const std::string& name) { return make_env(name, context()); };
  Expected<ValidationOutcome> v = validate_episode(s, 0, make);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_TRUE(v->ok) << v->error;
  s.deterministic_rewards["runtime"] += 1e-9;
  Expected<ValidationOutcome> tampered = validate_episode(s, 0, make);
  ASSERT_TRUE(tampered.ok());
  EXPECT_FALSE(tampered->ok);
  EXPECT_CONTAINS(tampered->error, "deterministic reward runtime");
}

TEST(FpgaEnv, VirtualThreadsBeatTheSameScheduleWithoutThem) {
  for (const char* layer : {"resnet18_c4", "resnet18_c9"}) {
    const std::string uri = std::string("benchmark://fpga-v0/") + layer;
    std::vector<std::string> with = actions_of(expert_of(uri)), without;
    for (const std::string& a : with)
      if (a.find("vthread") == std::string::npos) without.push_back(a);
    ASSERT_EQ(without.size() + 1, with.size());
    double runtime[2];
    for (int vt = 0; vt < 2; ++vt) {
      std::unique_ptr<Env> e = env();
      ASSERT_TRUE(e->reset(uri, on_fpga(), {}).ok());
      StepResult r = e->step([&] {
        std::vector<Event> events;
        for (const std::string& a : vt ? with : without) events.emplace_back(a);
        return events;
      }(), {}, {});
      ASSERT_TRUE(r.error.ok()) << r.error.to_string();
      runtime[vt] = observed(*e, "runtime");
    }
    EXPECT_LT(runtime[1], runtime[0]) << layer;
  }
}

TEST(FpgaEnv, TheSimulatorIsASessionParameter) {
  std::unique_ptr<Env> e = env();
  Status bad = e->set_parameter("runner.simulator", "spice");
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(bad.message(), "fsim or rtl");
  ASSERT_TRUE(e->set_parameter("runner.simulator", "rtl").ok());
  ASSERT_TRUE(e->reset(kGemm, on_fpga(), {}).ok());
  std::vector<Event> actions;
  for (const std::string& a : actions_of(expert_of(kGemm))) actions.emplace_back(a);
  ASSERT_TRUE(e->step(actions, {}, {}).error.ok());
  StepResult r = e->step({}, {"runtime"}, {});
  if (r.error.code() == StatusCode::kFailedPrecondition &&
      r.error.message().find("Verilator model") != std::string::npos)
    GTEST_SKIP() << "no Verilator model in this build";
  ASSERT_TRUE(r.error.ok()) << r.error.to_string();
  EXPECT_CONTAINS(e->state().provenance_json, "\"clock\":\"rtl\"");
  // On the cpu a simulator is refused by the measurement, with the reason.
  std::unique_ptr<Env> cpu = env();
  ASSERT_TRUE(cpu->set_parameter("runner.simulator", "fsim").ok());
  ASSERT_TRUE(cpu->reset("benchmark://ops-v0/gmm-1", {}, {}).ok());
  StepResult refused = cpu->step({}, {"runtime"}, {});
  ASSERT_FALSE(refused.error.ok());
  EXPECT_CONTAINS(refused.error.message(), "runs for real");
}

TEST(FpgaEnv, TheFpgaObservationsAreTheFpgaTargets) {
  std::unique_ptr<Env> e = env();
  ASSERT_TRUE(e->reset("benchmark://ops-v0/gmm-1", {}, {}).ok());
  for (const char* name : {"fpga_cycles", "fpga_instructions", "fpga_resources"}) {
    StepResult r = e->step({}, {name}, {});
    ASSERT_FALSE(r.error.ok()) << name;
    EXPECT_EQ(r.error.code(), StatusCode::kFailedPrecondition);
    EXPECT_CONTAINS(r.error.message(), "the fpga target's; this episode's target is cpu");
  }
  // A program the accelerator cannot run: a float GEMM on the fpga target.
  ASSERT_TRUE(e->reset("benchmark://ops-v0/gmm-1", on_fpga(), {}).ok());
  StepResult r = e->step({}, {"fpga_instructions"}, {"runtime"});
  ASSERT_FALSE(r.error.ok());
  EXPECT_CONTAINS(r.error.message(), "conv2d on the accelerator");
}

TEST(FpgaEnv, TheCursorOffersNoUnrollingOnTheAccelerator) {
  std::unique_ptr<Env> e = env();
  ResetOptions options = on_fpga();
  options.action_space = "cursor";
  ASSERT_TRUE(e->reset(kGemm, options, {}).ok());
  StepResult mask = e->step({}, {"action_mask"}, {});
  ASSERT_TRUE(mask.error.ok()) << mask.error.to_string();
  Expected<int64_t> unroll = CursorActions::index_of("auto_unroll_64");
  ASSERT_TRUE(unroll.ok());
  EXPECT_EQ(mask.observations[0].as<Int64Tensor>().values[size_t(*unroll)], 0);
  StepResult refused = e->step({Event(std::string("auto_unroll_64"))}, {}, {});
  ASSERT_FALSE(refused.error.ok());
  EXPECT_CONTAINS(refused.error.message(), "auto_unroll_64 is not offered on the fpga target (accelerator schedules");
  EXPECT_TRUE(e->state().actions.empty());
}

}  // namespace
}  // namespace tensorgym
