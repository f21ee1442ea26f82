// tensorgym validate FILE [--tolerance T]
// Replays every EpisodeState of a JSON Lines file and checks it: the compiled program
// is correct, deterministic rewards match exactly, a runtime-based reward is within
// the tolerance. Prints one line per state ("ok" or what failed); exit status 1 if
// any state fails.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "client/cli/cli_common.h"
#include "client/cli/env_runner.h"

namespace tensorgym::cli {

void add_validate_command(CLI::App& app) {
  auto file = std::make_shared<std::string>();
  auto endpoint = std::make_shared<EndpointOptions>();
  auto tolerance = std::make_shared<double>(0.25);
  CLI::App* cmd = app.add_subcommand("validate", "Replay a state file and check every state");
  cmd->add_option("FILE", *file, "EpisodeState JSON Lines file")->required();
  endpoint->add_options(*cmd);
  cmd->add_option("--tolerance", *tolerance,
                  "Largest |replayed - recorded| allowed for a measured (runtime, gflops) reward")
      ->default_val(0.25);
  cmd->callback([file, tolerance, endpoint] {
    Expected<std::vector<EpisodeState>> states = read_episode_states(*file);
    if (!states.ok()) throw CLI::RuntimeError(report_error(states.status()));
    const EnvFactory make = env_factory(*endpoint, 0);
    int failed = 0;
    for (size_t i = 0; i < states->size(); ++i) {
      const EpisodeState& s = (*states)[i];
      std::string what;
      Expected<Replayed> r = replay_state(s, make);
      if (!r.ok()) {
        what = r.status().message();
      } else {
        StepResult check = r->env->step({}, {"correct"}, {});
        if (!check.error.ok()) {
          what = check.error.message();
        } else if (!check.observations[0].as<bool>()) {
          what = "the compiled program is not correct";
        }
        for (const auto& [name, recorded] : s.deterministic_rewards) {
          double replayed = r->cumulative[name];
          if (what.empty() && replayed != recorded) {
            char buf[160];
            std::snprintf(buf, sizeof buf, "deterministic reward %s: recorded %.17g, replayed %.17g", name.c_str(),
                          recorded, replayed);
            what = buf;
          }
        }
        if (what.empty() && !s.reward_space.empty() && !s.deterministic_rewards.count(s.reward_space)) {
          double replayed = r->cumulative[s.reward_space];
          if (std::fabs(replayed - s.reward) > *tolerance) {
            char buf[160];
            std::snprintf(buf, sizeof buf, "reward %s: recorded %.4f, replayed %.4f (tolerance %.4f)",
                          s.reward_space.c_str(), s.reward, replayed, *tolerance);
            what = buf;
          }
        }
      }
      std::cout << "state " << i + 1 << " " << s.benchmark << ": " << (what.empty() ? "ok" : what) << "\n";
      failed += !what.empty();
    }
    if (failed) throw CLI::RuntimeError(1);
  });
}

}  // namespace tensorgym::cli
