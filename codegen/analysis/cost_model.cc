// The cost model's entry points and its readable breakdown. The model itself is
// cost_model_internal.h's Model, whose parts each have a file of their own.
#include "codegen/analysis/cost_model.h"

#include <fmt/format.h>

#include "codegen/analysis/cost_model_internal.h"

namespace tensorgym {

namespace cost_model_internal {

MachineModel sanitized(const MachineModel& m) {
  MachineModel s = m;
  auto at_least = [](auto& field, auto floor) {
    if (!(field >= floor)) field = floor;
  };
  at_least(s.vector_bits, 32);
  at_least(s.auto_vector_bits, 32);
  at_least(s.vector_registers, 1);
  at_least(s.fma_units, 1);
  at_least(s.load_ports, 1);
  at_least(s.store_ports, 1);
  at_least(s.issue_width, 1);
  at_least(s.cores, 1);
  at_least(s.line_bytes, 1);
  at_least(s.page_bytes, 1);
  at_least(s.page_fault_cycles, 0);
  at_least(s.workspace_pool_bytes, 0);
  at_least(s.l1_ways, 1);
  at_least(s.l2_ways, 1);
  at_least(s.l3_ways, 1);
  at_least(s.dtlb_entries, 1);
  at_least(s.stlb_entries, 1);
  at_least(s.l2_bandwidth, 1e-9);
  at_least(s.l3_bandwidth, 1e-9);
  at_least(s.dram_bandwidth, 1e-9);
  at_least(s.dram_bandwidth_total, 1e-9);
  at_least(s.dram_writeback_cost, 0.0);
  at_least(s.prefetch_run_bytes, 0.0);  // NaN or negative: every tracked walk streamed
  at_least(s.memory_parallelism, 1e-9);
  at_least(s.scheduler_window, 1e-9);
  at_least(s.cache_utilization, 1e-9);
  at_least(s.cache_overflow_span, 0.0);  // NaN or negative: the cliff
  return s;
}

}  // namespace cost_model_internal

CostBreakdown estimate_cost(const LoopNest& nest, const MachineModel& given) {
  const MachineModel machine = cost_model_internal::sanitized(given);
  const NestSummary summary = summarize_nest(nest);
  return cost_model_internal::Model(summary, machine).run();
}

double est_cycles(const LoopNest& nest, const MachineModel& machine) {
  return estimate_cost(nest, machine).total_cycles;
}

std::string CostBreakdown::to_string() const {
  std::string s = fmt::format("total {:.4g} cycles (compute {:.4g}, memory {:.4g}, overhead {:.4g})\n", total_cycles,
                              compute_cycles, memory_cycles, overhead_cycles);
  s += "stores:\n";
  for (const StoreCost& c : stores)
    s += fmt::format(
        "  {:<16} instances {:<10.4g} compute {:<10.4g} memory {:<10.4g} (tlb {:<9.3g}) misses L1 {:<9.3g} L2 {:<9.3g} "
        "L3 {:<9.3g} {}\n",
        c.buffer, c.instances, c.compute_cycles, c.memory_cycles, c.tlb_cycles, c.l1_misses, c.l2_misses, c.l3_misses,
        c.bound);
  s += "loops:\n";
  for (const LoopCost& l : loops) {
    const char* fits = l.fits == 1 ? "L1" : l.fits == 2 ? "L2" : l.fits == 3 ? "L3" : "-";
    const char* vec = l.gathers ? " vec(gathers)" : l.vectorized ? " vec" : "";
    s += fmt::format("  {:{}}{} {}[{}] x{:.4g}  ws {:.4g} B (fits {}){}  {:.4g} cycles\n", "", 2 * l.depth,
                     for_kind_name(l.kind), l.loop, l.extent, l.executions, l.working_set_bytes, fits, vec, l.cycles);
  }
  return s;
}

}  // namespace tensorgym
