// tensorgym lower --program FILE [--schedule TEXT | --schedule-file FILE]
//                 [--target NAME] [--after PASS | --after all]
// Prints the loop nest the target compiles: the generic passes, then the target's own
// (codegen/lower/lower.cc), exactly as a measurement worker lowers it. --after prints
// the nest after one pass, or after each (the lowering log).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <optional>

#include "cli/cli_common.h"
#include "codegen/analysis/constant_work.h"
#include "codegen/backend/registry.h"
#include "codegen/ir/ir_printer.h"
#include "codegen/lower/lower.h"

namespace tensorgym::cli {

void add_lower_command(CLI::App& app) {
  struct Options {
    std::string program;
    ScheduleSource schedule;
    std::string target = std::string(kDefaultTarget);
    std::string after;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("lower", "Print the loop nest a scheduled program lowers to");
  cmd->add_option("--program", opts->program, "Program file (.tg)")->required();
  opts->schedule.add_options(*cmd);
  cmd->add_option("--target", opts->target, "The backend to lower for (default cpu)");
  cmd->add_option("--after", opts->after,
                  "Print the nest after this pass instead, or after every pass with 'all' "
                  "(build_loop_nest, auto_unroll, simplify, limit_code_size, then the target's: cpu: vectorize_loops; "
                  "cuda: check_gpu_loops, check_gpu_kernels, check_gpu_stores)");
  cmd->callback([opts] {
    auto run = [&]() -> Status {
      TG_ASSIGN_OR_RETURN(const Backend* backend, find_backend(opts->target));
      const std::vector<std::string> passes = lowering_pass_names(backend->lowering());
      if (!opts->after.empty() && opts->after != "all" &&
          std::find(passes.begin(), passes.end(), opts->after) == passes.end()) {
        std::string names;  // joined by hand: GCC 12 warns (wrongly) inside fmt 9's join
        for (const std::string& p : passes) names += (names.empty() ? "" : ", ") + p;
        return invalid_argument(
            fmt::format("--after: unknown pass '{}' (the {} pipeline: {}; or all)", opts->after, backend->name(), names));
      }
      TG_ASSIGN_OR_RETURN(ProgramPtr program, load_program(opts->program));
      TG_ASSIGN_OR_RETURN(Schedule schedule, load_schedule(program, opts->schedule));
      // The lowering log: each pass's nest, kept when asked for.
      std::vector<std::pair<std::string, Stmt>> log;
      LowerOptions options;
      if (!opts->after.empty()) {
        options.after_pass = [&](std::string_view pass, const LoopNest& after) {
          if (opts->after == "all" || opts->after == pass) log.emplace_back(std::string(pass), after.body);
        };
      }
      TG_ASSIGN_OR_RETURN(LoopNest nest, lower(schedule, backend->lowering(), options));
      for (const BufferArg& a : nest.inputs) {
        std::cout << "input " << a.name << ": " << a.dtype.str() << "[";
        for (size_t i = 0; i < a.shape.size(); ++i) std::cout << (i ? ", " : "") << a.shape[i];
        std::cout << (a.constant ? "] const\n" : "]\n");
      }
      for (const BufferArg& a : nest.outputs) {
        std::cout << "output " << a.name << ": " << a.dtype.str() << "[";
        for (size_t i = 0; i < a.shape.size(); ++i) std::cout << (i ? ", " : "") << a.shape[i];
        std::cout << "]\n";
      }
      if (std::optional<ConstantWork> work = split_constant_work(nest)) {
        std::cout << "# constant work, done once ahead of the runs (Executable::prepare):";
        for (const BufferArg& b : work->prepared) std::cout << " " << b.name;
        std::cout << "\n";
      }
      if (opts->after.empty()) {
        std::cout << nest.body;
        return Status();
      }
      for (const auto& [pass, body] : log) std::cout << "# after " << pass << "\n" << body;
      return Status();
    };
    Status st = run();
    if (!st.ok()) throw CLI::RuntimeError(report_error(st));
  });
}

}  // namespace tensorgym::cli
