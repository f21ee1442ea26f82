// Replaying and validating EpisodeStates (envs/replay.h) on the real schedule-v0
// environment, seen through a pass-through wrapper that counts the rewards it is
// asked for: a measured reward is measured once at the end of the replay (its sum is
// the change of its metric over the episode), deterministic ones at every step.
#include <gtest/gtest.h>

#include <map>

#include "envs/env_context.h"
#include "envs/replay.h"
#include "tests/test_support.h"

namespace tensorgym {
namespace {

class Counted : public Env {
 public:
  Counted(std::unique_ptr<Env> inner, std::map<std::string, int>* asked) : inner_(std::move(inner)), asked_(asked) {}
  const std::string& name() const override { return inner_->name(); }
  const std::vector<Space>& action_spaces() const override { return inner_->action_spaces(); }
  const std::vector<Space>& observation_spaces() const override { return inner_->observation_spaces(); }
  const std::vector<Space>& reward_spaces() const override { return inner_->reward_spaces(); }
  Expected<std::vector<Event>> reset(const std::string& benchmark, const ResetOptions& options,
                                     const std::vector<std::string>& observations) override {
    return inner_->reset(benchmark, options, observations);
  }
  StepResult step(const std::vector<Event>& actions, const std::vector<std::string>& observations,
                  const std::vector<std::string>& rewards) override {
    for (const std::string& r : rewards) ++(*asked_)[r];
    return inner_->step(actions, observations, rewards);
  }
  Expected<std::unique_ptr<Env>> fork() const override { return inner_->fork(); }
  EpisodeState state() const override { return inner_->state(); }
  Status set_parameter(const std::string& key, const std::string& value) override {
    return inner_->set_parameter(key, value);
  }
  void close() override { inner_->close(); }

 private:
  std::unique_ptr<Env> inner_;
  std::map<std::string, int>* asked_;
};

std::unique_ptr<Env> schedule_env() {
  static std::shared_ptr<EnvContext> context = [] {
    auto c = std::make_shared<EnvContext>();
    c->worker_binary = std::string(TENSORGYM_BINARY_DIR) + "/bin/tensorgym";
    c->threads = 1;
    return c;
  }();
  Expected<std::unique_ptr<Env>> e = make_env("schedule-v0", context);
  EXPECT_TRUE(e.ok());
  EXPECT_TRUE((*e)->set_parameter("runner.repeat", "2").ok());
  EXPECT_TRUE((*e)->set_parameter("runner.min_repeat_ms", "1").ok());
  return std::move(*e);
}

TEST(Replay, AMeasuredRewardIsMeasuredOnceAtTheEndAndDeterministicOnesEveryStep) {
  std::unique_ptr<Env> e = schedule_env();
  ASSERT_TRUE(e->reset("benchmark://ops-v0/gmm-1", {}, {}).ok());
  const std::vector<std::string> rewards = {"est_cycles", "runtime"};
  ASSERT_TRUE(e->step({}, {}, rewards).error.ok());
  for (const char* action : {"split(C.i, 16, io, ii)", "split(C.j, 8, jo, ji)", "parallel(C.io)", "vectorize(C.ji)"})
    ASSERT_TRUE(e->step({Event(action)}, {}, rewards).error.ok()) << action;
  const EpisodeState state = e->state();
  ASSERT_EQ(state.reward_space, "runtime");
  ASSERT_EQ(state.actions.size(), 4u);
  ASSERT_TRUE(state.deterministic_rewards.count("est_cycles"));

  std::map<std::string, int> asked;
  EnvMaker counted = [&](const std::string&) -> Expected<std::unique_ptr<Env>> {
    return std::unique_ptr<Env>(std::make_unique<Counted>(schedule_env(), &asked));
  };
  // Measured noise aside (a loose tolerance), the replayed sums are the recorded ones.
  Expected<ValidationOutcome> v = validate_episode(state, 1.0, counted);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_TRUE(v->ok) << v->error;
  EXPECT_EQ(v->replayed["est_cycles"], state.deterministic_rewards.at("est_cycles"));
  EXPECT_NEAR(v->replayed["runtime"], state.reward, 1.0);
  EXPECT_EQ(asked["est_cycles"], 1 + 4);  // at the start, then after every action
  EXPECT_EQ(asked["runtime"], 1 + 1);     // at the start (the baseline), then at the end

  // A deterministic reward that does not match is caught, to the bit.
  EpisodeState tampered = state;
  tampered.deterministic_rewards["est_cycles"] += 1e-9;
  Expected<ValidationOutcome> bad = validate_episode(tampered, 1.0, counted);
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(bad->ok);
  EXPECT_CONTAINS(bad->error, "deterministic reward est_cycles");
  // A failing action is named, measured reward or not.
  EpisodeState broken = state;
  broken.actions[2] = "parallel(C.nope)";
  Expected<ValidationOutcome> failing = validate_episode(broken, 1.0, counted);
  ASSERT_TRUE(failing.ok());
  EXPECT_CONTAINS(failing->error, "action 3");
}

}  // namespace
}  // namespace tensorgym
