// tensorgym run --env schedule-v0 --benchmark URI [--actions TEXT] [--action-space NAME]
//               [--observe a,b,...] [--reward NAME] [--threads N] [--json] [--state-out FILE]
// Runs one episode: applies the actions (text form), one per step, and prints the
// requested observations and rewards.
#include <CLI/CLI.hpp>
#include <iostream>
#include <sstream>

#include "cli/cli_common.h"
#include "cli/env_runner.h"
#include "proto/episode_state_io.h"
#include "spaces/event.h"

namespace tensorgym::cli {

void add_run_command(CLI::App& app) {
  auto opts = std::make_shared<EpisodeOptions>();
  auto json = std::make_shared<bool>(false);
  auto state_out = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("run", "Run an episode: apply actions, print observations and rewards");
  opts->add_options(*cmd);
  cmd->add_flag("--json", *json, "Print one JSON object: observations, rewards, terminated, error");
  cmd->add_option("--state-out", *state_out, "Append the final EpisodeState to this JSON Lines file");
  cmd->callback([opts, json, state_out] {
    Expected<EpisodeOutcome> out = run_episode(*opts, /*print_steps=*/!*json);
    if (!out.ok()) throw CLI::RuntimeError(report_error(out.status()));
    if (*json) {
      std::cout << outcome_json(*out) << "\n";
    } else {
      print_outcome(*out, std::cout);
    }
    if (!state_out->empty()) {
      Status st = append_episode_state(*state_out, out->state);
      if (!st.ok()) throw CLI::RuntimeError(report_error(st));
      if (!*json) std::cout << "state: " << *state_out << "\n";
    }
    if (!out->error.ok()) throw CLI::RuntimeError(1);
  });
}

}  // namespace tensorgym::cli
