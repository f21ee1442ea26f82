// A deterministic analytical CPU cost model of a lowered LoopNest: estimated cycles
// of one run on a described machine, with a per-store and per-loop breakdown. It is
// computed on every environment step (tens of microseconds on a 10-stage nest),
// bit-exactly reproducible everywhere (no host probing unless asked for, no threads,
// no transcendental functions), and documented with its measured rank correlation
// against real runtimes in docs/cost_model.md.
//
// The model, in short (details in docs/cost_model.md):
//  - what the code generator will do: which vectorized loops the backend really
//    vectorizes; which small serial loops LLVM fully unrolls (accumulators already
//    promoted out of them); which innermost loops its loop vectorizer vectorizes on
//    its own (no float reduction; strided accesses as interleaved groups or, where
//    the target has them, gathers and scatters; tail guards on unrolled copies kept
//    as masks); which unrolled copies its SLP vectorizer packs; which accumulators
//    it keeps in registers across a loop; which small local buffers live in
//    registers; which copies load the same address once;
//  - compute: the straight-line code under each iterating loop is costed per
//    iteration as the maximum of its FP-pipe, load-port, store-port, issue-width and
//    divider demands and of the latency of its dependence chains (loop-carried
//    accumulations, and unrolled reductions inside one iteration); vector code costs
//    ceil(lanes / vector lanes) instructions per operation, gathers and scatters one
//    per lane, masked tails more; a vector read back shifted by less than its width
//    waits for the store to commit; math calls are scalar library calls;
//  - memory: for every access and cache level, walking its loops from the innermost
//    out, a loop whose one iteration's working set (all buffers) fits the cache, and
//    whose lines of that access do not pile into a few sets (power-of-two strides),
//    re-uses them across iterations; otherwise they come again from the level below
//    (once per vector iteration in LLVM's vector loops). Unrolled copies inside the
//    innermost loop touch their lines once, in no order; a fused loop's modulo walk
//    re-uses a line only if what it touches until it comes back fits. Lines cost
//    bandwidth, or latency over memory-level parallelism for walks the prefetchers
//    cannot follow; TLB misses are walked the same way over pages; runs repeat back
//    to back, so data that fits a level is warm there;
//  - each loop region costs max(compute, memory); parallel loops divide what they
//    contain by the threads (with the imbalance of a static split of their extent),
//    DRAM traffic by the shared bandwidth, and pay a fork/join per execution; heap
//    allocations pay malloc/free and the page faults the C library's allocator
//    causes on every run (simulated).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/lower/loop_nest.h"

namespace tensorgym {

// The machine the model describes. Frequency-free: every rate is per cycle.
struct MachineModel {
  std::string name = "reference";
  // Core.
  int vector_bits = 256;       // widest vector register the code generator uses
  int auto_vector_bits = 256;  // vector width LLVM's own loop vectorizer picks
  int vector_registers = 16;
  int fma_units = 2;                // vector FP pipes (FMA, add, multiply)
  double fp_latency = 4;            // cycles of an FMA or multiply
  double fp_add_latency = 2;        // cycles of an add: one step of an accumulation chain
  int load_ports = 2;               // loads per cycle
  int store_ports = 1;              // stores per cycle
  int issue_width = 4;              // instructions per cycle the front end sustains
  double divide_cycles = 5;         // throughput of one vector divide or square root
  double math_call_cycles = 20;     // one scalar exp / log / tanh call
  double gather_lane_cycles = 0.8;   // per lane of a vector gather (throughput)
  double scatter_lane_cycles = 1.6;  // per lane of a vector scatter
  // Gathers and scatters run one after another through the microcode sequencer (AMD
  // Zen 4: a gather and a scatter cost the sum of the two), not spread over the load
  // and store ports beside the other accesses (Intel: the larger of the two).
  bool indexed_accesses_serialize = false;
  double masked_access_factor = 2;  // a masked vector load or store (tail guards) against a plain one
  // Vector gathers (AVX2) and scatters (AVX-512): with them LLVM's loop vectorizer also
  // vectorizes loops with strided, indirect or guarded accesses.
  bool vector_gather = true;
  bool vector_scatter = true;
  double loop_entry_cycles = 3;     // entering a loop (setup, exit branch)
  // A load that partly overlaps an earlier store still in the store buffer (a vector
  // read back shifted by less than its width) cannot be forwarded: it waits until the
  // store commits.
  double store_forward_stall_cycles = 25;
  double store_buffer_entries = 64;  // stores in flight before the oldest commits (Zen 4: 64)
  // The code generator (LLVM) fully unrolls a serial loop of constant trip count when
  // its unrolled body stays under this many instructions; for loops of at most
  // `full_unroll_analyzed_trips` iterations, when what is left once the parts that
  // become constants in each copy fold stays under it times the ratio of the two
  // sizes (at most `full_unroll_max_boost`). An access counts
  // `full_unroll_access_size` in each distinct copy (the load or store) and
  // `full_unroll_address_size` once per iteration (the address register's update).
  double full_unroll_budget = 300;
  double full_unroll_analyzed_trips = 10;
  double full_unroll_max_boost = 4;
  double full_unroll_access_size = 1.25;
  double full_unroll_address_size = 1.5;
  // LLVM unswitches a branch that does not move with a loop (duplicating the loop)
  // when the loop's body is at most this many instructions (-unswitch-threshold).
  double unswitch_budget = 50;
  // Out-of-order overlap of dependence chains inside one loop iteration: chained FP
  // operations of later iterations that the scheduler holds while the current ones wait
  // (Golden Cove / Raptor Cove: a 97-entry unified math scheduler).
  double scheduler_window = 97;
  // A local buffer of at most this many elements, indexed only by unrolled loops,
  // lives in registers.
  int64_t register_buffer_elements = 64;
  int cores = 8;
  // Caches. L1 and L2 per core, L3 shared; one line size.
  int line_bytes = 64;
  int64_t l1_bytes = int64_t(48) << 10;
  int l1_ways = 12;
  int64_t l2_bytes = int64_t(2) << 20;
  int l2_ways = 16;
  int64_t l3_bytes = int64_t(32) << 20;
  int l3_ways = 16;
  double cache_utilization = 0.75;  // fraction of a cache a working set may use and still fit
  // How far past that (a fraction of it) a working set must grow before every line is
  // fetched again each iteration; in between the share grows linearly. 0: a cliff.
  double cache_overflow_span = 0.5;
  // Bandwidth (bytes per cycle into the level above, per core) and latency (cycles)
  // of each level as a source of lines.
  double l2_bandwidth = 32;
  double l3_bandwidth = 10;
  double dram_bandwidth = 8;         // one core
  double dram_bandwidth_total = 16;  // all cores together
  // What writing a dirty line back to DRAM costs against a fill. One core is held back
  // by its outstanding misses, not by the bus: write-backs leave through the caches
  // beside the fills.
  double dram_writeback_cost = 0.2;
  double l2_latency = 14;
  double l3_latency = 70;
  double dram_latency = 250;
  double memory_parallelism = 8;  // outstanding line misses per core
  // How far a walk must run on in memory for the prefetchers to bring all its lines in
  // time; shorter runs wait for part of theirs (0: every walk the prefetchers track
  // is streamed).
  double prefetch_run_bytes = 2048;
  // Address translation: a walk whose step is a page or more touches a new page per
  // access; past the first-level TLB that costs a second-level lookup, past the
  // second level a page walk.
  int page_bytes = 4096;
  int dtlb_entries = 96;
  int stlb_entries = 2048;
  double dtlb_miss_cycles = 7;
  double stlb_miss_cycles = 30;
  // Runtime.
  double fork_join_cycles = 3000;  // one parallel loop execution on more than one thread
  double call_cycles = 30;         // an outlined parallel body run on one thread
  double heap_alloc_cycles = 500;  // an Allocate above the stack limit (per execution)
  int64_t stack_limit_bytes = int64_t(512) << 10;
  // The runtime's workspace pool keeps freed blocks up to this many bytes a thread
  // (kWorkspacePoolBytes); a larger buffer goes back to the C library after each
  // execution and faults its pages in again on the next (`page_fault_cycles` a page:
  // the trap and the zeroing of a 4 KiB page).
  int64_t workspace_pool_bytes = int64_t(256) << 20;
  double page_fault_cycles = 6000;

  // A fixed machine (see docs/cost_model.md): 8 x86-64 cores with the development
  // VM's caches and AVX-512 gathers and scatters, code generated with 256-bit
  // vectors, latencies and bandwidths calibrated on that VM. Every field has the
  // default value above; results computed with it are the same on every host.
  static MachineModel reference();
  // The reference machine with this host's vector width (AVX-512 / AVX2 / SSE from
  // CPUID), core count, cache sizes and associativities (sysfs) and gather and
  // scatter costs and L3 bandwidth (measured once per process:
  // support/host_vector_costs.h, support/host_memory_bandwidth.h); whatever cannot be
  // read keeps the reference value. Not reproducible across hosts.
  static MachineModel from_host();
  // The reference machine with the given vector width and cores (e.g. a CpuTarget's
  // vector_bits and num_cores) and this host's caches and gather and scatter costs.
  static MachineModel from_host(int vector_bits, int cores);
};

// One For loop of the nest (pre-order).
struct LoopCost {
  std::string loop;
  int depth = 0;
  ForKind kind = ForKind::kSerial;
  int64_t extent = 0;
  double executions = 0;         // times the loop is entered over the whole run
  double working_set_bytes = 0;  // footprint of one iteration (all buffers)
  int fits = 0;                  // smallest cache level the per-iteration working set fits: 1, 2, 3; 4 = none
  bool vectorized = false;       // vectorized by the backend (explicit) or by LLVM (auto)
  bool gathers = false;          // vectorized by LLVM with gathers or scatters
  bool fully_unrolled = false;   // fully unrolled by LLVM (its loop unroller, not the schedule)
  double cycles = 0;             // estimated cycles of all its executions, inner loops included
};

// One Store of the nest (program order).
struct StoreCost {
  std::string buffer;
  double instances = 0;       // scalar instances over the whole run
  double compute_cycles = 0;  // its share of the compute estimate
  double memory_cycles = 0;   // cycles of its cache and memory traffic (address translation included)
  double tlb_cycles = 0;      // of which address translation
  double l1_misses = 0, l2_misses = 0, l3_misses = 0;  // lines
  const char* bound = "";                              // what limits its region: compute, latency, memory, calls
};

struct CostBreakdown {
  double total_cycles = 0;
  double compute_cycles = 0;  // sum over regions, before parallel speedup
  double memory_cycles = 0;
  double overhead_cycles = 0;  // loop entries, fork/join, allocations
  std::vector<StoreCost> stores;
  std::vector<LoopCost> loops;
  // A readable table of the above.
  std::string to_string() const;
};

// Estimated cycles of one run of `nest` on `machine`.
double est_cycles(const LoopNest& nest, const MachineModel& machine = MachineModel::reference());
// The same estimate with its breakdown.
CostBreakdown estimate_cost(const LoopNest& nest, const MachineModel& machine = MachineModel::reference());

}  // namespace tensorgym
