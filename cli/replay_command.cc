// tensorgym replay FILE
// Rebuilds every EpisodeState of a JSON Lines file and prints its schedule and
// estimated cycles.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/cli_common.h"
#include "cli/env_runner.h"
#include "cli/figures.h"
#include "proto/episode_state_io.h"

namespace tensorgym::cli {

void add_replay_command(CLI::App& app) {
  auto file = std::make_shared<std::string>();
  auto endpoint = std::make_shared<EndpointOptions>();
  CLI::App* cmd = app.add_subcommand("replay", "Rebuild the episodes of a state file and print their schedules");
  cmd->add_option("FILE", *file, "EpisodeState JSON Lines file")->required();
  endpoint->add_options(*cmd);
  cmd->callback([file, endpoint] {
    Expected<std::vector<EpisodeState>> states = read_episode_states(*file);
    if (!states.ok()) throw CLI::RuntimeError(report_error(states.status()));
    const EnvFactory make = env_factory(*endpoint, 0);
    int failed = 0;
    for (size_t i = 0; i < states->size(); ++i) {
      const EpisodeState& s = (*states)[i];
      std::cout << "state " << i + 1 << ": " << s.benchmark << " (" << s.actions.size() << " actions)\n";
      Expected<Replayed> r = replay_episode(s, make);
      if (!r.ok()) {
        std::cout << "  error: " << r.status().to_string() << "\n";
        ++failed;
        continue;
      }
      StepResult obs = r->env->step({}, {"schedule", "est_cycles"}, {});
      std::cout << obs.observations[0].as<std::string>();
      std::cout << "  est_cycles: " << event_text(obs.observations[1]) << "\n";
    }
    if (failed) throw CLI::RuntimeError(1);
  });
}

}  // namespace tensorgym::cli
