#include "service/validation.h"

#include <cmath>
#include <cstdio>

namespace tensorgym::service {
namespace {

bool is_cancelled(const Status& s) { return s.code() == StatusCode::kCancelled; }

}  // namespace

Expected<ValidationOutcome> validate_state(const EpisodeState& s, double tolerance,
                                           std::shared_ptr<EnvContext> context) {
  if (s.env.empty()) return invalid_argument("the EpisodeState has no env");
  if (s.benchmark.empty()) return invalid_argument("the EpisodeState has no benchmark");
  if (!(tolerance >= 0)) return invalid_argument("the tolerance must be >= 0");
  TG_ASSIGN_OR_RETURN(std::unique_ptr<Env> env, make_env(s.env, std::move(context)));
  ResetOptions reset;
  reset.action_space = s.action_space;
  TG_ASSIGN_OR_RETURN(std::vector<Event> first, env->reset(s.benchmark, reset, {}));
  (void)first;

  ValidationOutcome out;
  auto fail = [&](std::string what) -> Expected<ValidationOutcome> {
    out.ok = false;
    out.error = std::move(what);
    return out;
  };
  std::vector<std::string> rewards;
  for (const auto& [name, value] : s.deterministic_rewards) rewards.push_back(name);
  if (!s.reward_space.empty() && !s.deterministic_rewards.count(s.reward_space)) rewards.push_back(s.reward_space);
  if (!rewards.empty()) {
    StepResult r0 = env->step({}, {}, rewards);
    if (is_cancelled(r0.error)) return r0.error;
    if (!r0.error.ok()) return fail(r0.error.message());
    for (size_t i = 0; i < rewards.size(); ++i) out.replayed[rewards[i]] += r0.rewards[i];
  }
  for (size_t i = 0; i < s.actions.size(); ++i) {
    StepResult r = env->step({Event(s.actions[i])}, {}, rewards);
    if (is_cancelled(r.error)) return r.error;
    if (!r.error.ok())
      return fail("action " + std::to_string(i + 1) + " (" + s.actions[i] + "): " + r.error.message());
    for (size_t k = 0; k < rewards.size(); ++k) out.replayed[rewards[k]] += r.rewards[k];
  }
  // Environments that compile programs check them (memory-v0 has nothing to compile).
  bool compiles = false;
  for (const Space& s : env->observation_spaces()) compiles |= s.name() == "correct";
  if (compiles) {
    StepResult check = env->step({}, {"correct"}, {});
    if (is_cancelled(check.error)) return check.error;
    if (!check.error.ok()) return fail(check.error.message());
    if (!check.observations[0].is<bool>() || !check.observations[0].as<bool>())
      return fail("the compiled program is not correct");
  }
  for (const auto& [name, recorded] : s.deterministic_rewards) {
    double replayed = out.replayed[name];
    if (replayed != recorded) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "deterministic reward %s: recorded %.17g, replayed %.17g", name.c_str(), recorded,
                    replayed);
      return fail(buf);
    }
  }
  if (!s.reward_space.empty() && !s.deterministic_rewards.count(s.reward_space)) {
    double replayed = out.replayed[s.reward_space];
    if (std::fabs(replayed - s.reward) > tolerance) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "reward %s: recorded %.4f, replayed %.4f (tolerance %.4f)", s.reward_space.c_str(),
                    s.reward, replayed, tolerance);
      return fail(buf);
    }
  }
  out.ok = true;
  return out;
}

}  // namespace tensorgym::service
