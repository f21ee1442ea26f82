#include "memplan/planner.h"

#include <fmt/format.h>

#include <chrono>

#include "memplan/order.h"
#include "memplan/verify.h"

namespace tensorgym {
namespace {

std::string offset_planner_for(const std::string& planner) { return planner == "best" ? "search" : planner; }

Status check_limit(int64_t arena, int64_t lower_bound, int64_t limit, const std::string& planner) {
  if (limit > 0 && arena > limit)
    return resource_exhausted(fmt::format(
        "infeasible: planner {} needs an arena of {} bytes, over the memory limit of {} bytes (lower bound {})",
        planner, arena, limit, lower_bound));
  return Status();
}

}  // namespace

// The offset planners, with `search` under the name it has for whole plans: `best`
// (offset_planner_for maps it back).
const std::vector<std::string>& memplan_planner_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = offset_planner_names();
    for (std::string& name : n)
      if (name == "search") name = "best";
    return n;
  }();
  return names;
}

Expected<OffsetPlan> plan_instance(const Instance& instance, const std::string& planner,
                                   const GraphPlanOptions& options) {
  OffsetPlannerOptions o;
  o.time_limit_s = options.time_limit_s;
  o.seed = options.seed;
  o.memory_limit = options.memory_limit;
  TG_ASSIGN_OR_RETURN(OffsetPlan plan, plan_offsets(offset_planner_for(planner), instance, o));
  Expected<int64_t> verified = verify_offsets(instance, plan.offsets);
  if (!verified.ok())
    return internal_error("planner " + planner + " produced an invalid plan: " + verified.status().message());
  TG_RETURN_IF_ERROR(check_limit(plan.arena, peak_live_bytes(instance), options.memory_limit, planner));
  return plan;
}

Expected<GraphPlan> plan_graph(const Graph& graph, const GraphPlanOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  GraphPlan plan;
  std::string order_name = options.order;
  bool inplace = options.inplace;
  if (options.planner == "best" && options.best_chooses) {
    order_name = "search";
    inplace = true;
  }
  OrderOptions oo;
  oo.inplace = inplace;
  oo.alignment = options.alignment;
  oo.memory_limit = options.memory_limit;
  oo.time_limit_s = std::max(0.5, options.time_limit_s * 0.3);
  TG_ASSIGN_OR_RETURN(plan.decisions.order, plan_order(order_name, graph, oo));
  if (inplace) plan.decisions.aliases = all_inplace(graph, plan.decisions.order);
  TG_ASSIGN_OR_RETURN(plan.layout, layout_graph(graph, plan.decisions, options.alignment));
  GraphPlanOptions rest = options;
  rest.memory_limit = 0;  // checked below, with the graph's bound in the message
  const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rest.time_limit_s = std::max(0.1, options.time_limit_s - spent);
  TG_ASSIGN_OR_RETURN(OffsetPlan offsets, plan_instance(plan.layout.instance, options.planner, rest));
  plan.offsets = std::move(offsets.offsets);
  plan.lower_bound = offsets.lower_bound;
  Expected<int64_t> verified = verify_graph_plan(graph, plan.decisions, plan.offsets, options.alignment);
  if (!verified.ok())
    return internal_error("planner " + options.planner + " produced an invalid plan: " + verified.status().message());
  plan.arena = *verified;
  plan.order_name = order_name;
  plan.inplace = inplace;
  plan.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  TG_RETURN_IF_ERROR(check_limit(plan.arena, plan.layout.lb_live, options.memory_limit, options.planner));
  return plan;
}

Expected<int64_t> verify_graph_plan(const Graph& graph, const GraphDecisions& decisions, const Offsets& offsets,
                                    int64_t alignment) {
  TG_ASSIGN_OR_RETURN(GraphLayout layout, layout_graph(graph, decisions, alignment));
  return verify_offsets(layout.instance, offsets);
}

}  // namespace tensorgym
