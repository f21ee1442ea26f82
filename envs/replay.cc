#include "envs/replay.h"

#include <fmt/format.h>

#include <cmath>

#include "support/quote.h"

namespace tensorgym {
namespace {

std::vector<std::string> rewards_to_replay(const EpisodeState& s) {
  std::vector<std::string> rewards;
  for (const auto& [name, value] : s.deterministic_rewards) rewards.push_back(name);
  if (!s.reward_space.empty() && !s.deterministic_rewards.count(s.reward_space)) rewards.push_back(s.reward_space);
  return rewards;
}

}  // namespace

Expected<Replayed> replay_episode(const EpisodeState& state, const EnvMaker& make) {
  if (state.env.empty()) return invalid_argument("the EpisodeState has no env");
  if (state.benchmark.empty()) return invalid_argument("the EpisodeState has no benchmark");
  Replayed out;
  TG_ASSIGN_OR_RETURN(out.env, make(state.env));
  ResetOptions reset;
  reset.action_space = state.action_space;
  reset.target = state.target;
  TG_ASSIGN_OR_RETURN(std::vector<Event> first, out.env->reset(state.benchmark, reset, {}));
  (void)first;
  // Rewards measured on one target are never compared with another's.
  if (const std::string here = out.env->state().target; here != state.target)
    return failed_precondition("the state was measured on target " + quote_text(state.target) +
                               ", but this environment measures on " + quote_text(here) +
                               ": replay it where it was measured");
  std::vector<std::string> rewards = rewards_to_replay(state);
  if (!rewards.empty()) {
    StepResult r0 = out.env->step({}, {}, rewards);
    if (!r0.error.ok()) return r0.error;
    for (size_t i = 0; i < rewards.size(); ++i) out.cumulative[rewards[i]] += r0.rewards[i];
  }
  // A measured reward is the change of its metric since it was last asked for, so its
  // sum over an episode is the change from the start to the end whenever it is asked:
  // it is asked once, after the last action, instead of measuring every state on the
  // way (a long episode of a large kernel took minutes). Deterministic rewards are
  // summed step by step, as recorded, so they match to the bit.
  std::vector<std::string> deterministic, measured;
  for (const std::string& name : rewards)
    (state.deterministic_rewards.count(name) ? deterministic : measured).push_back(name);
  for (size_t i = 0; i < state.actions.size(); ++i) {
    StepResult r = out.env->step({Event(state.actions[i])}, {}, deterministic);
    if (!r.error.ok())
      return Status(r.error.code(),
                    fmt::format("action {} ({}): {}", i + 1, excerpt_text(state.actions[i]), r.error.message()));
    for (size_t k = 0; k < deterministic.size(); ++k) out.cumulative[deterministic[k]] += r.rewards[k];
  }
  if (!measured.empty() && !state.actions.empty()) {
    StepResult r = out.env->step({}, {}, measured);
    if (!r.error.ok())
      return Status(r.error.code(), fmt::format("action {} ({}): {}", state.actions.size(),
                                                excerpt_text(state.actions.back()), r.error.message()));
    for (size_t k = 0; k < measured.size(); ++k) out.cumulative[measured[k]] += r.rewards[k];
  }
  return out;
}

Expected<ValidationOutcome> validate_episode(const EpisodeState& s, double tolerance, const EnvMaker& make) {
  if (!(tolerance >= 0)) return invalid_argument("the tolerance must be >= 0");
  ValidationOutcome out;
  auto fail = [&](std::string what) -> Expected<ValidationOutcome> {
    out.ok = false;
    out.error = std::move(what);
    return out;
  };
  Expected<Replayed> r = replay_episode(s, make);
  if (!r.ok()) {
    // A failing action is a failed check; a state that cannot even start is an error.
    bool action = r.status().message().rfind("action ", 0) == 0;
    if (r.status().code() == StatusCode::kCancelled || !action) return r.status();
    return fail(r.status().message());
  }
  out.replayed = r->cumulative;
  // Environments that compile programs check them (memory-v0 has nothing to compile).
  bool compiles = false;
  for (const Space& space : r->env->observation_spaces()) compiles |= space.name() == "correct";
  if (compiles) {
    StepResult check = r->env->step({}, {"correct"}, {});
    if (check.error.code() == StatusCode::kCancelled) return check.error;
    if (!check.error.ok()) return fail(check.error.message());
    if (!check.observations[0].is<bool>() || !check.observations[0].as<bool>())
      return fail("the compiled program is not correct");
  }
  for (const auto& [name, recorded] : s.deterministic_rewards) {
    double replayed = out.replayed[name];
    if (replayed != recorded) {
      return fail(fmt::format("deterministic reward {}: recorded {:.17g}, replayed {:.17g}", name, recorded, replayed));
    }
  }
  if (!s.reward_space.empty() && !s.deterministic_rewards.count(s.reward_space)) {
    double replayed = out.replayed[s.reward_space];
    if (std::fabs(replayed - s.reward) > tolerance) {
      return fail(fmt::format("reward {}: recorded {:.4f}, replayed {:.4f} (tolerance {:.4f})", s.reward_space,
                              s.reward, replayed, tolerance));
    }
  }
  out.ok = true;
  return out;
}

}  // namespace tensorgym
