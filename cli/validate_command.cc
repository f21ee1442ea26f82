// tensorgym validate FILE [--tolerance T]
// Replays every EpisodeState of a JSON Lines file and checks it (envs/replay.h): the
// compiled program is correct, deterministic rewards match exactly, a measured
// reward is within the tolerance. Prints one line per state ("ok" or what failed); exit status 1 if
// any state fails.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/cli_common.h"
#include "cli/env_runner.h"
#include "proto/episode_state_io.h"

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
      Expected<ValidationOutcome> v = validate_episode(s, *tolerance, make);
      if (!v.ok()) {
        what = v.status().message();
      } else if (!v->ok) {
        what = v->error;
      }
      std::cout << "state " << i + 1 << " " << s.benchmark << ": " << (what.empty() ? "ok" : what) << "\n";
      failed += !what.empty();
    }
    if (failed) throw CLI::RuntimeError(1);
  });
}

}  // namespace tensorgym::cli
