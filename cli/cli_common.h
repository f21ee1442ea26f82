// Helpers shared by the subcommands: reading programs and schedules from files or
// flags, and reporting errors the way compilers do ("file:line:column: message").
#pragma once

#include <string>

#include "codegen/ir/program.h"
#include "codegen/schedule/schedule.h"
#include "support/status.h"

namespace CLI {
class App;
}

namespace tensorgym::cli {

Expected<std::string> read_text_file(const std::string& path);

// Parses the program file; errors are prefixed with the path.
Expected<ProgramPtr> load_program(const std::string& path);

// Where a schedule comes from: --schedule TEXT or --schedule-file FILE (or neither).
struct ScheduleSource {
  std::string text;
  std::string file;
  void add_options(CLI::App& app);
};
Expected<Schedule> load_schedule(const ProgramPtr& program, const ScheduleSource& source);

// --finalists of search and suite (SearchSetup::finalists).
inline constexpr const char* kFinalistsHelp =
    "Measured searches: measure the best N candidates 3 more times each and keep the one with the lowest median "
    "(within the trial budget, at most a tenth of it; 0: the best trial measurement wins)";

// Prints "tensorgym: error: message" to stderr and returns the exit status to use.
int report_error(const Status& status);

// Registration of each subcommand (one file per command).
void add_lower_command(CLI::App& app);
void add_interp_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_worker_command(CLI::App& app);
void add_datasets_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_replay_command(CLI::App& app);
void add_validate_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_memplan_command(CLI::App& app);
void add_search_command(CLI::App& app);
void add_suite_command(CLI::App& app);
void add_batch_command(CLI::App& app);

}  // namespace tensorgym::cli
