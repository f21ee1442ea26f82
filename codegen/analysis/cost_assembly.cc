// The estimate put together: each region costs the larger of its compute and its
// memory time (plus a little of the smaller); parallel loops divide what they contain
// by their threads, with a static split's imbalance, and share DRAM bandwidth; loop
// entries, fork/joins and heap allocations add their overheads; loops sum inclusively.
#include "codegen/analysis/cost_model_internal.h"

namespace tensorgym {
namespace cost_model_internal {

CostBreakdown Model::run() {
  prepare();
  compute_working_sets();
  CostBreakdown out;
  out.loops.resize(S.loops.size());
  out.stores.resize(S.stores.size());
  for (size_t i = 0; i < S.stores.size(); ++i) {
    out.stores[i].buffer = S.buffers[size_t(S.stores[i].buffer)].name;
    out.stores[i].instances = store_instances(int(i));
  }
  describe_loops(out);
  std::vector<double> region_mem(S.loops.size() + 1, 0.0), region_dram(S.loops.size() + 1, 0.0);
  memory_per_region(out, region_mem, region_dram);
  const int n = int(S.loops.size());
  std::vector<double> region_total(size_t(n) + 1, 0.0);
  combine_regions(out, region_mem, region_dram, region_total);
  std::vector<double> loop_overhead(size_t(n), 0.0);
  double overhead = loop_overheads(loop_overhead);
  add_allocation_overheads(&overhead);
  out.overhead_cycles = overhead;
  // Inclusive loop cycles.
  for (int l = n - 1; l >= 0; --l) {
    out.loops[size_t(l)].cycles += region_total[size_t(l + 1)] + loop_overhead[size_t(l)];
    const int parent = S.loops[size_t(l)].parent;
    if (parent >= 0) out.loops[size_t(parent)].cycles += out.loops[size_t(l)].cycles;
  }
  double total = overhead;
  for (double t : region_total) total += t;
  out.total_cycles = total;
  return out;
}

void Model::describe_loops(CostBreakdown& out) const {
  for (size_t l = 0; l < S.loops.size(); ++l) {
    LoopCost& lc = out.loops[l];
    const NestLoop& L = S.loops[l];
    lc.loop = L.name;
    lc.depth = L.depth;
    lc.kind = L.kind;
    lc.extent = L.extent;
    lc.executions = execs_[l];
    lc.working_set_bytes = ws_lines_[l] * M.line_bytes;
    lc.fits = ws_lines_[l] <= caches_[0].capacity_lines   ? 1
              : ws_lines_[l] <= caches_[1].capacity_lines ? 2
              : ws_lines_[l] <= caches_[2].capacity_lines ? 3
                                                          : 4;
    lc.vectorized = vec_ok_[l] || autovec_[l] > 0;
    lc.gathers = autovec_gathers_[l] != 0;
    lc.fully_unrolled = llvm_unrolled_[l];
  }
}

// Memory cycles of every access, grouped by region: the core's own levels (L2, L3) in
// `region_mem`, DRAM lines (weighted by how much slower than streaming they arrive)
// in `region_dram`, since parallel threads share DRAM's bandwidth but not their caches.
void Model::memory_per_region(CostBreakdown& out, std::vector<double>& region_mem,
                              std::vector<double>& region_dram) const {
  for (size_t si = 0; si < S.stores.size(); ++si) {
    const NestStore& st = S.stores[si];
    if (dead_init_[si]) continue;
    double mem_private = 0, dram_lines = 0;
    for (const NestAccess& a : st.accesses) {
      if (sroa_[size_t(a.buffer)]) continue;
      // The init's value, forwarded in a register.
      if (forwarded_[si] && a.kind == AccessKind::kRead && at_target(st, a)) continue;
      double misses[3];
      access_misses(int(si), a, misses);
      const double frac = a.fraction * st.fraction;
      // A write fills its line (unless the store read it first) and writes it back;
      // write-backs mostly overlap with fills (to DRAM: dram_writeback_cost).
      double write_factor = 1, dram_write_factor = 1;
      if (a.kind == AccessKind::kWrite) {
        bool rmw = false;
        for (const NestAccess& b : st.accesses)
          rmw |= b.kind == AccessKind::kRead && b.buffer == a.buffer && same_index(b.index, a.index);
        rmw &= !forwarded_[si];
        write_factor = rmw ? 0.2 : 1.2;
        dram_write_factor = (rmw ? 0 : 1) + M.dram_writeback_cost;
      }
      out.stores[si].l1_misses += misses[0] * frac;
      out.stores[si].l2_misses += misses[1] * frac;
      out.stores[si].l3_misses += misses[2] * frac;
      const double streamed = prefetched(int(si), a);
      const double line = M.line_bytes;
      // Lines the prefetchers bring cost bandwidth; the others, latency over the
      // misses a core keeps in flight.
      auto per_line = [&](double bandwidth, double latency) {
        const double b = line / bandwidth;
        return streamed * b + (1 - streamed) * std::max(b, latency / M.memory_parallelism);
      };
      const double t2 = misses[0] * frac * write_factor * per_line(M.l2_bandwidth, M.l2_latency);
      const double t3 = misses[1] * frac * write_factor * per_line(M.l3_bandwidth, M.l3_latency);
      const double td = misses[2] * frac * dram_write_factor * per_line(M.dram_bandwidth, M.dram_latency);
      const double private_cycles = std::max(t2, t3) + 0.5 * std::min(t2, t3);
      mem_private += private_cycles;
      dram_lines += td / (line / M.dram_bandwidth);
      out.stores[si].memory_cycles += std::max(private_cycles, td);
      const double tlb = tlb_cycles(int(si), a) * frac;
      mem_private += tlb;
      out.stores[si].memory_cycles += tlb;
      out.stores[si].tlb_cycles += tlb;
    }
    const int r = region_[si] + 1;
    region_mem[size_t(r)] += mem_private;
    region_dram[size_t(r)] += dram_lines;
  }
}

// Compute per region, combined with memory; parallel loops scale what is inside them.
void Model::combine_regions(CostBreakdown& out, const std::vector<double>& region_mem,
                            const std::vector<double>& region_dram, std::vector<double>& region_total) {
  const int n = int(S.loops.size());
  for (int r = -1; r < n; ++r) {
    if (r >= 0 && !real_[size_t(r)]) continue;
    const std::vector<int>& stores = region_stores_[size_t(r + 1)];
    const double compute = region_compute(r, stores, out);
    double mem = region_mem[size_t(r + 1)];
    const double dram_lines = region_dram[size_t(r + 1)];
    // Threads running this region: those of the outermost parallel loop around it,
    // each with ceil(extent / threads) iterations of a static split.
    const int p = r >= 0 ? outer_parallel_[size_t(r)] : -1;
    double scale = 1, threads = 1;
    if (p >= 0) {
      const double ext = double(S.loops[size_t(p)].extent);
      threads = threads_of(p);
      scale = std::ceil(ext / threads) / ext;
    }
    const double dram_bw = std::min(threads * M.dram_bandwidth, M.dram_bandwidth_total);
    const double dram = dram_lines * M.line_bytes / dram_bw * scale * threads;
    mem = std::max(mem * scale, dram);
    const double c = compute * scale;
    const double total = std::max(c, mem) + 0.1 * std::min(c, mem);
    region_total[size_t(r + 1)] = total;
    out.compute_cycles += compute;
    out.memory_cycles += std::max(region_mem[size_t(r + 1)], dram_lines * M.line_bytes / M.dram_bandwidth);
    const char* bound = c >= mem ? (chain_bound_[size_t(r + 1)]   ? "latency"
                                    : calls_bound_[size_t(r + 1)] ? "calls"
                                                                  : "compute")
                                 : "memory";
    for (int si : stores) out.stores[size_t(si)].bound = bound;
  }
}

// Loop entries, and a fork/join per execution of an outermost parallel loop (an
// outlined call on one thread); inside a parallel loop divided like its regions.
double Model::loop_overheads(std::vector<double>& loop_overhead) const {
  const int n = int(S.loops.size());
  double overhead = 0;
  for (int l = 0; l < n; ++l) {
    if (!real_[size_t(l)]) continue;
    double o = execs_[size_t(l)] * M.loop_entry_cycles;
    if (S.loops[size_t(l)].kind == ForKind::kParallel && outer_parallel_[size_t(l)] == l) {
      const double threads = threads_of(l);
      o += execs_[size_t(l)] * (threads > 1 ? M.fork_join_cycles : M.call_cycles);
    }
    const int p = S.loops[size_t(l)].parent >= 0 ? outer_parallel_[size_t(S.loops[size_t(l)].parent)] : -1;
    if (p >= 0) {
      const double ext = double(S.loops[size_t(p)].extent);
      o *= std::ceil(ext / threads_of(p)) / ext;
    }
    loop_overhead[size_t(l)] = o;
    overhead += o;
  }
  return overhead;
}

// Heap allocations: a trip to the runtime's workspace pool per execution. The pool
// keeps freed blocks, so a steady-state run faults in no pages for its scratch
// (codegen/cpu/workspace_pool.h), unless the block is larger than the pool keeps:
// then every execution maps it anew and faults in each page it touches.
void Model::add_allocation_overheads(double* overhead) const {
  for (const NestAlloc& a : S.allocs) {
    const NestBuffer& b = S.buffers[size_t(a.buffer)];
    const double bytes = double(b.elements) * b.dtype.bytes() * b.dtype.lanes;
    if (bytes <= double(M.stack_limit_bytes)) continue;
    double execs = 1;
    for (int l : a.loops) execs *= vec_ok_[size_t(l)] ? 1.0 : double(S.loops[size_t(l)].extent);
    *overhead += execs * M.heap_alloc_cycles;
    if (bytes > double(M.workspace_pool_bytes))
      *overhead += execs * std::ceil(bytes / double(M.page_bytes)) * M.page_fault_cycles;
  }
}

double Model::latency_bound(const Demand& d) const {
  double latency = d.chain_latency;
  if (d.inner_chain > 0)
    latency = std::max(latency, d.inner_chain / std::max(1.0, M.scheduler_window / std::max(d.fp, 1.0)));
  return latency;
}

double Model::demand_cycles(const Demand& d, bool loop_overhead) const {
  double loads = d.loads, stores = d.stores, latency = d.chain_latency;
  if (d.chains > 0) {
    const double spare = std::max(1.0, double(M.vector_registers) - 4);
    if (d.chains > spare) {  // accumulators spill
      loads += d.chains - spare;
      stores += d.chains - spare;
      latency += 5;
    }
  }
  if (d.inner_chain > 0) {
    const double overlap = std::max(1.0, M.scheduler_window / std::max(d.fp, 1.0));
    latency = std::max(latency, d.inner_chain / overlap);
  }
  const double uops = d.uops() + (loop_overhead ? 2 : 0) + (loads - d.loads) + (stores - d.stores);
  const double c = std::max({d.fp / M.fma_units, loads / M.load_ports, stores / M.store_ports, d.indexed,
                             uops / M.issue_width, d.divide, latency});
  return c + d.calls;
}

double Model::region_compute(int r, const std::vector<int>& stores, CostBreakdown& out) {
  if (stores.empty()) return 0;
  const double iters = r >= 0 ? iters_[size_t(r)] : 1;
  const double execs = r >= 0 ? execs_[size_t(r)] : 1;
  const Demand d = region_demand(r, stores, false);
  double per_iter = demand_cycles(d, r >= 0);
  double total = iters * per_iter;
  if (r >= 0 && autovec_[size_t(r)] > 0) {
    const double vf = autovec_[size_t(r)];
    const double e = ext(r);
    const Demand dv = region_demand(r, stores, true);
    const double vec_iter = demand_cycles(dv, false) + 0.5;
    total = autovec_folded_[size_t(r)] ? execs * std::ceil(e / vf) * vec_iter
                                       : execs * (std::floor(e / vf) * vec_iter + std::fmod(e, vf) * per_iter);
    per_iter = total / std::max(iters, 1.0);
  }
  total += execs * d.hoisted / M.load_ports;
  chain_bound_[size_t(r + 1)] = latency_bound(d) > 0 && per_iter <= latency_bound(d) + 1e-9;
  calls_bound_[size_t(r + 1)] = d.calls > 0.5 * per_iter;
  // Shares per store, by its part of the demand.
  double sum = 0;
  std::vector<double> share(stores.size(), 0.0);
  for (size_t i = 0; i < stores.size(); ++i) {
    const Demand di = region_demand(r, {stores[i]}, false);
    share[i] = di.uops() + di.calls;
    sum += share[i];
  }
  for (size_t i = 0; i < stores.size(); ++i)
    out.stores[size_t(stores[i])].compute_cycles += sum > 0 ? total * share[i] / sum : total / double(stores.size());
  return total;
}

}  // namespace cost_model_internal
}  // namespace tensorgym
