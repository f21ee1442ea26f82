// tensorgym lower --program FILE [--schedule TEXT | --schedule-file FILE]
// Prints the lowered loop nest.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/cli_common.h"
#include "codegen/ir/ir_printer.h"
#include "codegen/lower/lower.h"

namespace tensorgym::cli {

void add_lower_command(CLI::App& app) {
  struct Options {
    std::string program;
    ScheduleSource schedule;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("lower", "Print the loop nest a scheduled program lowers to");
  cmd->add_option("--program", opts->program, "Program file (.tg)")->required();
  opts->schedule.add_options(*cmd);
  cmd->callback([opts] {
    auto run = [&]() -> Status {
      TG_ASSIGN_OR_RETURN(ProgramPtr program, load_program(opts->program));
      TG_ASSIGN_OR_RETURN(Schedule schedule, load_schedule(program, opts->schedule));
      TG_ASSIGN_OR_RETURN(LoopNest nest, lower(schedule));
      for (const BufferArg& a : nest.inputs) {
        std::cout << "input " << a.name << ": " << a.dtype.str() << "[";
        for (size_t i = 0; i < a.shape.size(); ++i) std::cout << (i ? ", " : "") << a.shape[i];
        std::cout << "]\n";
      }
      for (const BufferArg& a : nest.outputs) {
        std::cout << "output " << a.name << ": " << a.dtype.str() << "[";
        for (size_t i = 0; i < a.shape.size(); ++i) std::cout << (i ? ", " : "") << a.shape[i];
        std::cout << "]\n";
      }
      std::cout << nest.body;
      return Status();
    };
    Status st = run();
    if (!st.ok()) throw CLI::RuntimeError(report_error(st));
  });
}

}  // namespace tensorgym::cli
