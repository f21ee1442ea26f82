// Random agents: 200 random legal actions (drawn from the action mask) on 20
// benchmarks taken from every dataset. Every step must lower, no step may crash, and
// the final schedule's compiled kernel must still compute the right answer.
#include <gtest/gtest.h>

#include "envs/env_context.h"
#include "support/random.h"

namespace tensorgym {
namespace {

const char* kBenchmarks[] = {
    "benchmark://ops-v0/gmm-1",        "benchmark://ops-v0/c1d-4",
    "benchmark://ops-v0/c2d-4",        "benchmark://ops-v0/dep-4",
    "benchmark://ops-v0/t2d-1",        "benchmark://ops-v0/cap-4",
    "benchmark://ops-v0/nrm-1",        "benchmark://ops-v0/dil-4",
    "benchmark://ops-v0/grp-4",        "benchmark://resnet50-v0/conv-7x7-512-512-3x3-s1",
    "benchmark://resnet50-v0/dense-2048-1000", "benchmark://bert-v0/softmax",
    "benchmark://bert-v0/layer-norm",  "benchmark://bert-v0/gelu",
    "benchmark://mobilenetv2-v0/dw-7x7-960-3x3-s1", "benchmark://mobilenetv2-v0/pw-7x7-160-960",
    "generator://random-ops-v0/1",     "generator://random-ops-v0/2",
    "generator://random-ops-v0/3",     "generator://random-ops-v0/4",
};

constexpr int kSteps = 200;

class RandomAgentTest : public ::testing::TestWithParam<const char*> {};

TEST_P(RandomAgentTest, NeverCrashesAndStaysCorrect) {
  auto ctx = std::make_shared<EnvContext>();
  ctx->worker_binary = std::string(TENSORGYM_BINARY_DIR) + "/bin/tensorgym";
  ctx->threads = 2;
  Expected<std::unique_ptr<Env>> made = make_env("schedule-v0", ctx);
  ASSERT_TRUE(made.ok());
  Env& env = **made;
  ASSERT_TRUE(env.set_parameter("runner.repeat", "1").ok());
  ASSERT_TRUE(env.set_parameter("runner.min_repeat_ms", "0").ok());
  Expected<std::vector<Event>> first = env.reset(GetParam(), {}, {"action_mask"});
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  Rng rng(std::hash<std::string>{}(GetParam()));
  Event mask = (*first)[0];
  int applied = 0;
  for (int step = 0; step < kSteps; ++step) {
    std::vector<int64_t> valid;
    const Int64Tensor& m = mask.as<Int64Tensor>();
    for (size_t i = 0; i < m.values.size(); ++i)
      if (m.values[i]) valid.push_back(int64_t(i));
    ASSERT_FALSE(valid.empty()) << "no action left at step " << step;
    StepResult r = env.step({Event(rng.pick(valid))}, {"action_mask", "loop_nest"}, {"est_cycles"});
    // An action may be rejected (the mask is a cheap check), but the state must lower.
    ASSERT_TRUE(r.error.ok() || r.error.code() != StatusCode::kInternal) << r.error.to_string();
    ASSERT_FALSE(r.observations[1].as<std::string>().empty()) << "step " << step << ": " << r.error.to_string();
    applied += r.error.ok();
    mask = r.observations[0];
  }
  EXPECT_GT(applied, kSteps / 2);
  StepResult check = env.step({}, {"correct"}, {});
  ASSERT_TRUE(check.error.ok()) << check.error.to_string() << "\nschedule:\n"
                                << env.step({}, {"schedule"}, {}).observations[0].as<std::string>();
  EXPECT_TRUE(check.observations[0].as<bool>());
}

INSTANTIATE_TEST_SUITE_P(Benchmarks, RandomAgentTest, ::testing::ValuesIn(kBenchmarks),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace tensorgym
