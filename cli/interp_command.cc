// tensorgym interp --program FILE [--schedule ...] [--target NAME] [--seed N]
// Runs the scheduled and the unscheduled program in the reference interpreter on the
// same seeded random inputs and compares every output, allowing for the sums a
// schedule may legally reorder (compare.h). Exit status 0 only on match. --json
// prints one object: match, seed, max_abs_error and each output's comparison.
// --target lowers for that target, so its checks apply, and runs the nest it compiles
// when the target's passes only check it (cuda: bound loops run as ordinary loops);
// a target whose passes rewrite the nest into code the interpreter does not run (cpu:
// vector code) runs the target-independent nest its passes started from.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <iostream>

#include "cli/cli_common.h"
#include "cli/json_text.h"
#include "codegen/backend/registry.h"
#include "codegen/interp/compare.h"
#include "codegen/interp/evaluator.h"
#include "codegen/interp/host_buffer.h"
#include "codegen/interp/interpreter.h"
#include "codegen/lower/lower.h"

namespace tensorgym::cli {

void add_interp_command(CLI::App& app) {
  struct Options {
    std::string program;
    ScheduleSource schedule;
    std::string target;
    uint64_t seed = 0;
    double rtol = 1e-4;
    double atol = 1e-5;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("interp", "Check a schedule against the unscheduled program in the interpreter");
  cmd->add_option("--program", opts->program, "Program file (.tg)")->required();
  opts->schedule.add_options(*cmd);
  cmd->add_option("--target", opts->target,
                  "Lower the schedule for this backend (cpu, cuda, fpga) and run that nest (default: the "
                  "target-independent nest)");
  cmd->add_option("--seed", opts->seed, "Seed of the random inputs");
  cmd->add_option("--rtol", opts->rtol, "Relative tolerance for float outputs (sums may be reordered)");
  cmd->add_option("--atol", opts->atol, "Absolute tolerance for float outputs");
  cmd->add_flag("--json", opts->json, "Print one JSON object instead of text");
  cmd->callback([opts] {
    bool matched = false;
    auto run = [&]() -> Status {
      TG_ASSIGN_OR_RETURN(ProgramPtr program, load_program(opts->program));
      TG_ASSIGN_OR_RETURN(Schedule schedule, load_schedule(program, opts->schedule));
      TG_ASSIGN_OR_RETURN(LoopNest reference_nest, lower(Schedule(program)));
      LoopNest scheduled_nest;
      if (opts->target.empty()) {
        TG_ASSIGN_OR_RETURN(scheduled_nest, lower(schedule));
      } else {
        TG_ASSIGN_OR_RETURN(const Backend* backend, find_backend(opts->target));
        LoopNest generic;
        LowerOptions options;
        options.after_pass = [&](std::string_view pass, const LoopNest& nest) {
          if (pass == "limit_code_size") generic = nest;  // the last generic pass
        };
        TG_ASSIGN_OR_RETURN(scheduled_nest, lower(schedule, backend->lowering(), options));
        const std::vector<TargetPass>& passes = backend->lowering().passes;
        if (std::any_of(passes.begin(), passes.end(), [](const TargetPass& p) { return p.run != nullptr; }))
          scheduled_nest = std::move(generic);
      }
      std::vector<HostBuffer> inputs = make_random_inputs(*program, opts->seed);
      std::vector<HostBuffer> expected = make_output_buffers(reference_nest);
      std::vector<HostBuffer> actual = make_output_buffers(scheduled_nest);
      TG_RETURN_IF_ERROR(interpret(reference_nest, const_pointers(inputs), pointers(expected))
                             .with_context("running the unscheduled program"));
      TG_RETURN_IF_ERROR(interpret(scheduled_nest, const_pointers(inputs), pointers(actual))
                             .with_context("running the scheduled program"));
      matched = true;
      double worst = 0;
      std::string report;
      Json outputs = Json::array();
      // Σ|term| of an element, asked only where |expected| does not cover the error.
      ProgramEvaluator evaluator(*program, const_pointers(inputs));
      for (size_t i = 0; i < expected.size(); ++i) {
        const std::string& name = scheduled_nest.outputs[i].name;
        Comparison c = compare_buffers(expected[i], actual[i], tolerance_for(*program, name, opts->rtol, opts->atol),
                                       evaluator_magnitudes(evaluator, name));
        worst = std::max(worst, c.max_abs_error);
        outputs.push_back(Json{{"name", name},
                               {"match", c.match},
                               {"checked", c.checked},
                               {"mismatches", c.mismatches},
                               {"max_abs_error", c.max_abs_error},
                               {"max_rel_error", std::isfinite(c.max_rel_error) ? Json(c.max_rel_error) : Json(nullptr)},
                               {"description", c.describe()}});
        if (!c.match) {
          matched = false;
          report += fmt::format("  {}: {}\n", name, c.describe());
        }
      }
      if (opts->json) {
        Json j = Json::object();
        j["match"] = matched;
        j["seed"] = opts->seed;
        j["max_abs_error"] = worst;
        j["outputs"] = std::move(outputs);
        std::cout << json_text(j) << "\n";
      } else if (matched) {
        std::cout << fmt::format("match ({} output{}, max abs error {:.3g}, seed {})\n", expected.size(),
                                 expected.size() == 1 ? "" : "s", worst, opts->seed);
      } else {
        std::cout << fmt::format("MISMATCH (max abs error {:.3g}, seed {})\n{}", worst, opts->seed, report);
      }
      return Status();
    };
    Status st = run();
    if (!st.ok()) throw CLI::RuntimeError(report_error(st));
    if (!matched) throw CLI::RuntimeError(1);
  });
}

}  // namespace tensorgym::cli
