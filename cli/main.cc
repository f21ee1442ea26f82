// tensorgym: the command-line tool. Each subcommand lives in its own file.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/cli_common.h"
#include "cli/suggest.h"

int main(int argc, char** argv) {
  CLI::App app{"TensorGym: tensor-program optimization as Gym environments"};
  app.require_subcommand(1);
  app.set_version_flag("--version", fmt::format("tensorgym {}", TENSORGYM_VERSION));
  tensorgym::cli::add_lower_command(app);
  tensorgym::cli::add_interp_command(app);
  tensorgym::cli::add_eval_command(app);
  tensorgym::cli::add_worker_command(app);
  tensorgym::cli::add_datasets_command(app);
  tensorgym::cli::add_run_command(app);
  tensorgym::cli::add_replay_command(app);
  tensorgym::cli::add_validate_command(app);
  tensorgym::cli::add_serve_command(app);
  tensorgym::cli::add_memplan_command(app);
  tensorgym::cli::add_search_command(app);
  tensorgym::cli::add_suite_command(app);
  tensorgym::cli::add_batch_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // A word not understood explains a missing option or subcommand better than the
    // parser's own message ("--program is required" after "--programm").
    const bool usage = !dynamic_cast<const CLI::RuntimeError*>(&e) && !dynamic_cast<const CLI::Success*>(&e);
    if (usage && tensorgym::cli::explain_unknown_arguments(app, std::cerr)) return e.get_exit_code();
    return app.exit(e);
  }
  return 0;
}
