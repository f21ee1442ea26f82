// tensorgym: the command-line tool. Each subcommand lives in its own file.
#include <CLI/CLI.hpp>

#include "cli/cli_common.h"

int main(int argc, char** argv) {
  CLI::App app{"TensorGym: tensor-program optimization as Gym environments"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("tensorgym ") + TENSORGYM_VERSION);
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
  CLI11_PARSE(app, argc, argv);
  return 0;
}
