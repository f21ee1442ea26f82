#include "memplan/exec/graph_job.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <new>

#include <fmt/format.h>

#include "codegen/backend/registry.h"
#include "codegen/measure/measure_error.h"
#include "codegen/measure/provenance.h"
#include "codegen/measure/runner_settings.h"
#include "codegen/measure/timing.h"
#include "memplan/exec/graph_wire.h"

namespace tensorgym {
namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

MeasureResult failed(MeasureError error, const Status& status, double compile_ms = 0) {
  MeasureResult r = error_result(error, status.message());
  r.compile_ms = compile_ms;
  return r;
}

MeasureResult run_pipeline(const MeasureRequest& request, const RunnerSettings& settings, const MeasureJobHooks& hooks,
                           GraphKernelCache& cache, bool* running) {
  if (!request.program.empty() || !request.schedule.empty())
    return error_result(MeasureError::kInstantiation, "a graph request carries no program or schedule");
  if (request.target != kDefaultTarget && !request.target.empty())
    return error_result(MeasureError::kInstantiation,
                        fmt::format("graphs run on the {} target only, not {}", kDefaultTarget, request.target));
  Expected<GraphExecution> execution = parse_graph_execution(request.graph);
  if (!execution.ok())
    return failed(execution.status().code() == StatusCode::kResourceExhausted ? MeasureError::kResourceExhausted
                                                                               : MeasureError::kInstantiation,
                  execution.status());
  const GraphExecution& e = *execution;
  Expected<GraphLayout> layout = layout_graph(e.graph, e.decisions, e.alignment);
  if (!layout.ok()) return failed(MeasureError::kInstantiation, layout.status().with_context("the plan"));

  const double t0 = now_s();
  Expected<std::unique_ptr<PreparedGraph>> reference =
      PreparedGraph::prepare(e.graph, e.decisions, nullptr, e.alignment, cache, e.seed);
  Expected<std::unique_ptr<PreparedGraph>> planned =
      reference.ok() ? PreparedGraph::prepare(e.graph, e.decisions, &e.offsets, e.alignment, cache, e.seed)
                     : Expected<std::unique_ptr<PreparedGraph>>(reference.status());
  const double compile_ms = (now_s() - t0) * 1e3;
  if (!planned.ok()) {
    const StatusCode code = planned.status().code();
    const bool before_compiling = code == StatusCode::kInvalidArgument || code == StatusCode::kUnimplemented;
    return failed(before_compiling ? MeasureError::kInstantiation : MeasureError::kCompile, planned.status(),
                  compile_ms);
  }
  MeasureResult result;
  result.compile_ms = compile_ms;
  if (hooks.on_compiled && !hooks.on_compiled(result))
    return failed(MeasureError::kWorkerLost, internal_error("the runner abandoned the job after compilation"),
                  compile_ms);
  if (request.compile_only) return result;

  *running = true;
  // Side by side, operator by operator: each output compared as it is written, so a
  // tensor overwritten while still live shows at the operator that reads it; then the
  // graph's outputs, which must also survive to the end.
  PreparedGraph &want = **reference, &got = **planned;
  const int threads = settings.threads;
  want.write_inputs();
  got.write_inputs();
  double first_run_s = 0;
  int64_t points = 0;
  double worst = 0;
  auto compare = [&](const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
    double scale = 0, difference = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      scale = std::max(scale, double(std::fabs(a[i])));
      const double d = std::isnan(a[i]) == std::isnan(b[i]) ? (std::isnan(a[i]) ? 0.0 : std::fabs(a[i] - b[i]))
                                                             : std::numeric_limits<double>::infinity();
      difference = std::max(difference, d);
    }
    points += int64_t(a.size());
    worst = std::max(worst, difference);
    if (difference <= settings.atol + settings.rtol * scale) return std::string();
    return fmt::format("{} in the planned arena differs from a run with every tensor apart by {} (allowed: {} + {} "
                       "x {}): the plan lets live tensors share bytes",
                       what, difference, settings.atol, settings.rtol, scale);
  };
  std::string wrong;
  for (size_t i = 0; i < got.steps() && wrong.empty(); ++i) {
    want.run_step(i, threads);
    const double t1 = now_s();
    got.run_step(i, threads);
    first_run_s += now_s() - t1;
    const GraphOp& op = e.graph.ops[size_t(got.step_op(i))];
    wrong = compare(want.step_output(i), got.step_output(i),
                    fmt::format("the output of operator '{}' (step {} of {})", op.name, i + 1, got.steps()));
  }
  if (wrong.empty()) {
    const GraphRun a = want.result(), b = got.result();
    for (size_t k = 0; k < a.outputs.size() && wrong.empty(); ++k)
      wrong = compare(a.outputs[k], b.outputs[k], "graph output '" + a.output_names[k] + "' at the end");
  }
  result.checked_points = points;
  result.max_abs_error = worst;
  if (!wrong.empty()) {
    MeasureResult r = error_result(MeasureError::kWrongAnswer, wrong);
    r.compile_ms = compile_ms;
    r.checked_points = points;
    r.max_abs_error = worst;
    return r;
  }

  TimingOptions timing = timing_options(settings);
  timing.warmup_runs = 0;  // the checked run was the warm-up
  timing.expected_run_s = first_run_s;
  Expected<TimingStats> stats = time_runs([&] { got.run(threads); }, timing);
  if (!stats.ok())
    return failed(MeasureError::kRuntimeCrash, stats.status().with_context("timing failed"), compile_ms);
  result.runtime = *stats;
  result.correct = true;
  return result;
}

}  // namespace

MeasureResult run_graph_job(const MeasureRequest& request, const MeasureJobHooks& hooks, GraphKernelCache& cache) {
  MeasureResult result;
  RunnerSettings settings = request.settings;
  Expected<RunnerSettings> resolved = resolve_runner_settings(request.settings);
  if (!resolved.ok()) {
    result = error_result(MeasureError::kInstantiation, resolved.status().message());
  } else {
    settings = *resolved;
    bool running = false;
    try {
      result = run_pipeline(request, settings, hooks, cache, &running);
    } catch (const std::bad_alloc& e) {
      result = error_result(MeasureError::kResourceExhausted, std::string("out of memory: ") + e.what());
    } catch (const std::exception& e) {
      result = error_result(running ? MeasureError::kRuntimeCrash : MeasureError::kCompile,
                            std::string("exception: ") + e.what());
    }
  }
  result.job_id = request.job_id;
  result.target = std::string(kDefaultTarget);
  result.provenance = make_provenance(result.target, settings, int64_t(getpid()));
  return result;
}

}  // namespace tensorgym
