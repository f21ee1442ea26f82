// tensorgym memplan (--benchmark URI | --onnx FILE | --lifetimes FILE)
//     [--planner NAME | --planner all] [--order NAME] [--inplace on|off]
//     [--time-limit S] [--memory-limit BYTES] [--beam-width W] [--recompute-depth D] [--alignment A] [--seed N]
//     [--plan-out FILE] [--lifetimes-out FILE] [--plot FILE.svg] [--json]
//   Plans the memory of a model graph or an offset-only instance with each planner
//   and prints, per planner, the arena bytes, the live lower bound (lb_live, for the
//   planner's order), the ratio, the proven gap (arena over the best lower bound the
//   planner proved, minus 1: 0 is optimal for that order; `exact` proves more than
//   lb_live) and the time taken. Every plan is verified. A plan
//   over --memory-limit is reported infeasible. When no planner fits a graph, the
//   graph is rewritten to fit (memplan/limit_planner.h: operators split into tiles,
//   tensors recomputed), planned by `best`, executed in its arena against the
//   unlimited plan, and the runtime cost printed; exit status 2 when even that does
//   not fit, or with --no-rewrite.
//   --plan-out writes the smallest plan as CSV `id,offset`; --lifetimes-out writes
//   the buffers it was made for as `id,lower,upper,size` (for a graph: the buffers of
//   that plan's order and in-place choices).
// tensorgym memplan --verify PLAN --lifetimes FILE
//   Checks a plan against an instance: prints the arena, or the first violation
//   (exit status 1).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/cli_common.h"
#include "cli/json_text.h"
#include "codegen/measure/measure_error.h"
#include "datasets/graphs.h"
#include "datasets/lifetimes_csv.h"
#include "datasets/onnx_import.h"
#include "memplan/exec/arena_exec.h"
#include "memplan/exec/graph_job.h"
#include "memplan/exec/graph_wire.h"
#include "memplan/limit_planner.h"
#include "memplan/order.h"
#include "memplan/planner.h"
#include "memplan/rematerialize.h"
#include "memplan/verify.h"
#include "plot/plan_svg.h"
#include "spaces/event.h"

namespace tensorgym::cli {
namespace {

struct Options {
  std::string benchmark, onnx, lifetimes, verify;
  std::string planner = "all";
  std::string order = "program_order";
  std::string inplace = "off";
  double time_limit = 10;
  int64_t memory_limit = 0;
  int64_t alignment = 0;
  uint64_t seed = 1;
  std::string plan_out, lifetimes_out, plot;
  bool json = false;
  bool no_rewrite = false;
  int beam_width = 4;
  int recompute_depth = 4;
  bool order_given = false, inplace_given = false;
};

struct Row {
  std::string planner;
  Status status;
  int64_t arena = 0, lb_live = 0, lb_op = 0;
  int64_t lower_bound = 0;  // proven: lb_live, raised by the planner's proofs
  double seconds = 0;
  std::string order;
  bool inplace = false;
  Instance instance;  // what the plan is for
  Offsets offsets;
  std::vector<int> kinds;
  ArenaBreakdown breakdown;  // graphs
};

const char* const kKindNames[4] = {"inputs", "outputs", "intermediates", "scratch"};

Status write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return Status(StatusCode::kPermissionDenied, "cannot write " + path);
  return Status();
}

std::string fixed(double v, int digits) { return fmt::format("{:.{}f}", v, digits); }

double ratio(int64_t arena, int64_t lb_live) { return lb_live > 0 ? double(arena) / double(lb_live) : 1.0; }

// A graph rewritten to fit a memory limit, and what it costs.
struct UnderLimit {
  LimitPlan limited;
  int64_t unlimited_arena = 0;
  double runtime_s = 0, unlimited_runtime_s = 0;  // median seconds of a run in each arena
  double max_difference = 0;                      // of the outputs, against the unlimited plan's
  std::string not_run;  // why the plans were not executed (only f32 graphs run), or empty
};

// A plan run whole in its arena, checked operator by operator against a run with every
// tensor apart, and timed (memplan/exec/graph_job.h, here in this process): the median
// seconds of one run on one thread.
Expected<double> measured_seconds(const Graph& graph, const GraphPlan& plan, GraphKernelCache& cache) {
  GraphExecution execution;
  execution.graph = graph;
  execution.decisions = plan.decisions;
  execution.offsets = plan.offsets;
  execution.alignment = plan.layout.instance.alignment;
  MeasureRequest request;
  request.graph = serialize_graph_execution(execution);
  request.settings.threads = 1;
  MeasureResult m = run_graph_job(request, {}, cache);
  if (!m.ok()) return measure_error_status(m, StatusCode::kInternal).with_context("running the plan of " + graph.name);
  return m.runtime.median_s;
}

Expected<UnderLimit> fit_by_rewriting(const Graph& graph, const Options& o, int64_t alignment) {
  UnderLimit u;
  LimitPlanOptions lo;
  lo.memory_limit = o.memory_limit;
  lo.alignment = alignment;
  lo.time_limit_s = o.time_limit;
  lo.seed = o.seed;
  lo.beam_width = o.beam_width;
  lo.recompute_depth = o.recompute_depth;
  GraphKernelCache cache;
  const bool runs = std::all_of(graph.tensors.begin(), graph.tensors.end(),
                                [](const GraphTensor& t) { return t.dtype == "f32"; });
  if (runs) {
    // The fastest of the cheapest rewrites that fit: each planned quickly (offsets
    // barely move a runtime) and measured.
    lo.runtime = [&](const Graph& g) -> Expected<double> {
      GraphPlanOptions quick;
      quick.planner = "best_fit_best";
      quick.inplace = true;
      quick.best_chooses = false;
      quick.alignment = alignment;
      TG_ASSIGN_OR_RETURN(GraphPlan plan, plan_graph(g, quick));
      return measured_seconds(g, plan, cache);
    };
  }
  TG_ASSIGN_OR_RETURN(u.limited, plan_under_limit(graph, lo));
  GraphPlanOptions po;
  po.planner = "best";
  po.alignment = alignment;
  po.seed = o.seed;
  po.time_limit_s = std::min(o.time_limit, 5.0);
  TG_ASSIGN_OR_RETURN(GraphPlan unlimited, plan_graph(graph, po));
  u.unlimited_arena = unlimited.arena;
  Expected<GraphRun> first = run_graph(graph, unlimited.decisions, &unlimited.offsets, alignment, cache);
  if (first.status().code() == StatusCode::kUnimplemented) {
    u.not_run = first.status().message();
    return u;
  }
  TG_ASSIGN_OR_RETURN(GraphRun base, std::move(first));
  TG_ASSIGN_OR_RETURN(GraphRun run, run_graph(u.limited.graph, u.limited.plan.decisions, &u.limited.plan.offsets,
                                              alignment, cache));
  TG_ASSIGN_OR_RETURN(u.unlimited_runtime_s, measured_seconds(graph, unlimited, cache));
  TG_ASSIGN_OR_RETURN(u.runtime_s, measured_seconds(u.limited.graph, u.limited.plan, cache));
  u.max_difference = max_output_difference(base, run);
  double scale = 1;
  for (const auto& out : base.outputs)
    for (float v : out) scale = std::max(scale, double(std::fabs(v)));
  if (!(u.max_difference <= 1e-4 * scale))
    return internal_error(fmt::format("the rewritten graph's outputs differ from the original's by {}",
                                      u.max_difference));
  return u;
}

int run(const Options& o) {
  if (!o.verify.empty()) {
    if (o.lifetimes.empty())
      return report_error(
          invalid_argument("--verify needs the instance: --lifetimes FILE (write a graph plan's with "
                           "--lifetimes-out)"));
    Expected<Instance> inst = load_lifetimes_csv(o.lifetimes);
    if (!inst.ok()) return report_error(inst.status());
    if (o.alignment > 0) inst->alignment = o.alignment;
    Expected<std::string> text = read_text_file(o.verify);
    if (!text.ok()) return report_error(text.status());
    Expected<Offsets> offsets = offsets_from_csv(*inst, *text, o.verify);
    if (!offsets.ok()) return report_error(offsets.status());
    Expected<int64_t> arena = verify_offsets(*inst, *offsets);
    if (!arena.ok()) {
      std::cout << "INVALID: " << arena.status().message() << "\n";
      return 1;
    }
    const int64_t lb = peak_live_bytes(*inst);
    std::cout << fmt::format("valid: arena {} bytes, lower bound {} bytes, ratio {}\n", *arena, lb,
                             fixed(ratio(*arena, lb), 4));
    return 0;
  }
  const int sources = !o.benchmark.empty() + !o.onnx.empty() + !o.lifetimes.empty();
  if (sources != 1) return report_error(invalid_argument("give exactly one of --benchmark, --onnx, --lifetimes"));
  std::string uri = o.benchmark;
  if (!o.onnx.empty()) uri = "file://" + o.onnx;
  if (!o.lifetimes.empty()) uri = "file://" + o.lifetimes;
  GraphBenchmark gb;
  if (!o.onnx.empty()) {
    Expected<Graph> g = import_onnx_file(o.onnx);
    if (!g.ok()) return report_error(g.status());
    gb = GraphBenchmark{uri, std::make_shared<const Graph>(std::move(*g)), nullptr};
  } else if (!o.lifetimes.empty()) {
    Expected<Instance> inst = load_lifetimes_csv(o.lifetimes);
    if (!inst.ok()) return report_error(inst.status());
    gb = GraphBenchmark{uri, nullptr, std::make_shared<const Instance>(std::move(*inst))};
  } else {
    Expected<GraphBenchmark> r = resolve_graph(uri);
    if (!r.ok()) return report_error(r.status());
    gb = std::move(*r);
  }
  const GraphBenchmark* bench = &gb;

  std::vector<std::string> planners;
  if (o.planner == "all") {
    planners = memplan_planner_names();
  } else {
    planners = {o.planner};
  }
  for (const std::string& p : planners) {
    bool known = false;
    for (const std::string& n : memplan_planner_names()) known |= n == p;
    if (!known) {
      std::string list;
      for (const std::string& n : memplan_planner_names()) list += (list.empty() ? "" : ", ") + n;
      return report_error(invalid_argument("unknown planner '" + p + "' (known: " + list + ", all)"));
    }
  }
  if (o.inplace != "on" && o.inplace != "off") return report_error(invalid_argument("--inplace is on or off"));

  std::vector<Row> rows;
  int64_t independent = 0;
  for (const std::string& p : planners) {
    Row row;
    row.planner = p;
    GraphPlanOptions opt;
    opt.planner = p;
    opt.order = o.order;
    opt.inplace = o.inplace == "on";
    opt.best_chooses = !o.order_given && !o.inplace_given;
    opt.time_limit_s = o.time_limit;
    opt.memory_limit = o.memory_limit;
    opt.seed = o.seed;
    if (bench->is_graph()) {
      if (o.alignment > 0) opt.alignment = o.alignment;
      independent = order_independent_bound(*bench->graph, true, opt.alignment);
      Expected<GraphPlan> plan = plan_graph(*bench->graph, opt);
      if (!plan.ok()) {
        row.status = plan.status();
      } else {
        row.arena = plan->arena;
        row.lb_live = plan->layout.lb_live;
        row.lb_op = plan->layout.lb_op;
        row.lower_bound = plan->lower_bound;
        row.seconds = plan->seconds;
        row.order = plan->order_name;
        row.inplace = plan->inplace;
        row.instance = plan->layout.instance;
        row.offsets = plan->offsets;
        for (BufferKind k : plan->layout.kind) row.kinds.push_back(int(k));
        row.breakdown = arena_breakdown(plan->layout);
      }
    } else {
      Instance inst = *bench->instance;
      if (o.alignment > 0) inst.alignment = o.alignment;
      const auto start = std::chrono::steady_clock::now();
      Expected<OffsetPlan> plan = plan_instance(inst, p, opt);
      row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      row.lb_live = peak_live_bytes(inst);
      if (!plan.ok()) {
        row.status = plan.status();
      } else {
        row.arena = plan->arena;
        row.lower_bound = plan->lower_bound;
        row.instance = inst;
        row.offsets = plan->offsets;
      }
    }
    rows.push_back(std::move(row));
  }

  const Row* best = nullptr;
  for (const Row& r : rows)
    if (r.status.ok() && (!best || r.arena < best->arena)) best = &r;
  // Nothing fits: rewrite the graph until it does.
  std::unique_ptr<UnderLimit> under;
  Status under_status;
  if (!best && bench->is_graph() && o.memory_limit > 0 && !o.no_rewrite) {
    Expected<UnderLimit> u = fit_by_rewriting(*bench->graph, o, o.alignment > 0 ? o.alignment : kDefaultAlignment);
    if (u.ok()) {
      under = std::make_unique<UnderLimit>(std::move(*u));
      const GraphPlan& plan = under->limited.plan;
      Row row;
      row.planner = "best+rewrites";
      row.arena = plan.arena;
      row.lb_live = plan.layout.lb_live;
      row.lb_op = plan.layout.lb_op;
      row.lower_bound = plan.lower_bound;
      row.seconds = plan.seconds;
      row.order = plan.order_name;
      row.inplace = plan.inplace;
      row.instance = plan.layout.instance;
      row.offsets = plan.offsets;
      for (BufferKind k : plan.layout.kind) row.kinds.push_back(int(k));
      row.breakdown = arena_breakdown(plan.layout);
      rows.push_back(std::move(row));
      best = &rows.back();
    } else {
      under_status = u.status();
    }
  }
  if (best && !o.plan_out.empty()) {
    Status st = write_file(o.plan_out, offsets_to_csv(best->instance, best->offsets));
    if (!st.ok()) return report_error(st);
  }
  if (best && !o.lifetimes_out.empty()) {
    Status st = write_file(o.lifetimes_out, lifetimes_to_csv(best->instance));
    if (!st.ok()) return report_error(st);
  }
  if (best && !o.plot.empty()) {
    Status st = write_file(o.plot, plan_svg(best->instance, best->offsets, best->lb_live,
                                            bench->uri + " (" + best->planner + ")", best->kinds));
    if (!st.ok()) return report_error(st);
  }

  if (o.json) {
    Json j = Json::object();
    j["benchmark"] = bench->uri;
    if (bench->is_graph()) {
      j["operators"] = bench->graph->ops.size();
      j["tensors"] = bench->graph->tensors.size();
      j["order_independent_bound"] = independent;
    } else {
      j["buffers"] = bench->instance->buffers.size();
    }
    if (o.memory_limit > 0) j["memory_limit"] = o.memory_limit;
    Json planners_json = Json::array();
    for (const Row& r : rows) {
      Json p = Json::object();
      p["planner"] = r.planner;
      if (!r.status.ok()) {
        p["feasible"] = false;
        p["error"] = r.status.message();
        planners_json.push_back(std::move(p));
        continue;
      }
      p["feasible"] = true;
      p["arena"] = r.arena;
      p["lb_live"] = r.lb_live;
      p["ratio"] = ratio(r.arena, r.lb_live);
      p["lower_bound"] = r.lower_bound;
      p["gap"] = ratio(r.arena, r.lower_bound) - 1;
      p["proven_optimal"] = r.arena <= r.lower_bound;
      p["seconds"] = r.seconds;
      p["alignment"] = r.instance.alignment;
      if (bench->is_graph()) {
        p["lb_op"] = r.lb_op;
        p["order"] = r.order;
        p["inplace"] = r.inplace;
        Json breakdown = Json::object();
        for (int k = 0; k < 4; ++k)
          breakdown[kKindNames[k]] = Json{{"bytes", r.breakdown.total[k]}, {"at_peak", r.breakdown.at_peak[k]},
                                          {"buffers", r.breakdown.count[k]}};
        p["breakdown"] = std::move(breakdown);
      }
      planners_json.push_back(std::move(p));
    }
    j["planners"] = std::move(planners_json);
    if (under) {
      const LimitPlan& l = under->limited;
      Json rewrites = Json::array();
      for (const std::string& r : l.rewrites) rewrites.push_back(r);
      j["under_limit"] = Json{{"rewrites", std::move(rewrites)},
                              {"arena", l.plan.arena},
                              {"work", l.work},
                              {"original_work", l.original_work},
                              {"work_ratio", double(l.work) / double(std::max<int64_t>(1, l.original_work))},
                              {"runtime_s", under->runtime_s},
                              {"unlimited_runtime_s", under->unlimited_runtime_s},
                              {"runtime_ratio", under->runtime_s / std::max(1e-12, under->unlimited_runtime_s)},
                              {"unlimited_arena", under->unlimited_arena},
                              {"max_output_difference", under->max_difference}};
      if (!under->not_run.empty()) j["under_limit"]["not_executed"] = under->not_run;
      Json measured = Json::array();
      for (const auto& [rewrites_text, seconds] : l.measured)
        measured.push_back(Json{{"rewrites", rewrites_text}, {"runtime_s", seconds}});
      j["under_limit"]["candidates_measured"] = std::move(measured);
    } else if (!under_status.ok()) {
      j["under_limit"] = Json{{"error", under_status.message()}};
    }
    std::cout << json_text(j) << "\n";
  } else {
    std::string text = bench->uri;
    if (bench->is_graph()) {
      text += fmt::format(": {} operators, {} tensors, order-independent bound {} bytes\n", bench->graph->ops.size(),
                          bench->graph->tensors.size(), independent);
    } else {
      text += fmt::format(": {} buffers\n", bench->instance->buffers.size());
    }
    text += fmt::format("{:<26} {:>14} {:>14} {:>8} {:>8} {:>9}  {}\n", "planner", "arena", "lb_live", "ratio", "gap",
                        "seconds",
                        bench->is_graph() ? "order, in-place" : "");
    for (const Row& r : rows) {
      if (!r.status.ok()) {
        text += fmt::format("{:<26} {}\n", r.planner,
                            r.status.code() == StatusCode::kResourceExhausted ? r.status.message()
                                                                              : "error: " + r.status.message());
        continue;
      }
      text += fmt::format("{:<26} {:>14} {:>14} {:>8.4f} {:>8.4f} {:>9.3f}  {}\n", r.planner, r.arena, r.lb_live,
                          ratio(r.arena, r.lb_live), ratio(r.arena, r.lower_bound) - 1, r.seconds,
                          bench->is_graph() ? r.order + ", " + (r.inplace ? "on" : "off") : "");
    }
    if (best) {
      text += fmt::format("alignment {} bytes", best->instance.alignment);
      if (bench->is_graph()) {
        text += fmt::format("; the arena of {} holds", best->planner);
        for (int k = 0; k < 4; ++k)
          text += fmt::format("{} {} {} bytes ({} live at the peak)", k ? "," : "", kKindNames[k],
                              best->breakdown.total[k], best->breakdown.at_peak[k]);
      }
      text += "\n";
    }
    if (under) {
      const LimitPlan& l = under->limited;
      text += fmt::format("to fit {} bytes, {} rewrite{} (arithmetic {:.3f}x the original's):\n", o.memory_limit,
                          l.rewrites.size(), l.rewrites.size() == 1 ? "" : "s",
                          double(l.work) / double(std::max<int64_t>(1, l.original_work)));
      for (const std::string& r : l.rewrites) text += "  " + r + "\n";
      if (l.measured.size() > 1) {
        text += fmt::format("the fastest of {} that fit, measured:\n", l.measured.size());
        for (const auto& [rewrites_text, seconds] : l.measured)
          text += fmt::format("  {:10.3f} ms  {}\n", seconds * 1e3, rewrites_text);
      }
      if (!under->not_run.empty()) {
        text += "not executed: " + under->not_run + "\n";
      } else {
        text += fmt::format(
            "runtime in the arena: {:.3f} ms against {:.3f} ms unlimited (arena {} bytes): {:.3f}x; outputs match "
            "(max difference {:.3g})\n",
            under->runtime_s * 1e3, under->unlimited_runtime_s * 1e3, under->unlimited_arena,
            under->runtime_s / std::max(1e-12, under->unlimited_runtime_s), under->max_difference);
      }
    } else if (!under_status.ok()) {
      text += "rewriting: " + under_status.message() + "\n";
    }
    std::cout << text << std::flush;
  }
  if (!best) {
    if (!under_status.ok() && under_status.code() != StatusCode::kResourceExhausted) return report_error(under_status);
    for (const Row& r : rows)
      if (r.status.code() != StatusCode::kResourceExhausted) return report_error(r.status);
    return 2;  // nothing fits the memory limit
  }
  return 0;
}

}  // namespace

void add_memplan_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("memplan", "Plan the memory of a model graph or an offset-only instance");
  cmd->add_option("--benchmark", o->benchmark, "Graph benchmark URI (benchmark://graphs-v0/resnet50, file://x.onnx)");
  cmd->add_option("--onnx", o->onnx, "ONNX model file");
  cmd->add_option("--lifetimes", o->lifetimes, "Offset-only instance, CSV id,lower,upper,size");
  cmd->add_option("--planner", o->planner, "Planner name, or all")->default_val("all");
  CLI::Option* order = cmd->add_option("--order", o->order,
                                       "Operator order for graphs (program_order, list, dfs, "
                                       "postorder, best_of_list_dfs_postorder, search)");
  CLI::Option* inplace = cmd->add_option("--inplace", o->inplace,
                                         "In-place reuse for graphs: on or off (default "
                                         "off; `best` chooses unless --order/--inplace)");
  cmd->add_option("--time-limit", o->time_limit, "Seconds for search-based planners")
      ->default_val(10)
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--memory-limit", o->memory_limit, "Hard limit on the arena in bytes (0: none)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--alignment", o->alignment, "Offset alignment in bytes (default 64 for graphs, 1 for lifetimes)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  cmd->add_option("--seed", o->seed, "Seed of hill_climb")->default_val(1);
  cmd->add_option("--plan-out", o->plan_out, "Write the smallest plan as CSV id,offset");
  cmd->add_option("--lifetimes-out", o->lifetimes_out, "Write the smallest plan's buffers as CSV id,lower,upper,size");
  cmd->add_option("--plot", o->plot, "Draw the smallest plan as SVG");
  cmd->add_option("--verify", o->verify, "Check the plan file against --lifetimes");
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->add_flag("--no-rewrite", o->no_rewrite,
                "With --memory-limit: report a graph that no planner fits as infeasible, without rewriting it");
  cmd->add_option("--beam-width", o->beam_width,
                  "With --memory-limit: states a step of the rewrite search's beam (1: the greedy search alone)")
      ->default_val(4)
      ->check(CLI::Range(1, 64));
  cmd->add_option("--recompute-depth", o->recompute_depth,
                  "With --memory-limit: levels of producers a recomputation may run again (1: the tensor's own)")
      ->default_val(4)
      ->check(CLI::Range(1, kMaxRecomputeDepth));
  cmd->callback([o, order, inplace] {
    o->order_given = order->count() > 0;
    o->inplace_given = inplace->count() > 0;
    const int status = run(*o);
    if (status != 0) throw CLI::RuntimeError(status);
  });
}

}  // namespace tensorgym::cli
