// The cost model's internals (private to codegen/analysis): the model of one nest on
// one machine, whose parts live in their own files:
//
//   value_ops.cc       operations of a stored value, as the machine executes them
//   code_generator.cc  what the backend and LLVM make of the nest (prepare's steps)
//   auto_vectorize.cc  LLVM's loop and SLP vectorizers: which loops, which accesses
//   select_rules.cc    padding selects and guards in vectorized code
//   cost_memory.cc     working sets, cache and TLB misses, prefetching
//   cost_compute.cc    per-iteration demand of a region on the core's resources
//   cost_assembly.cc   regions, parallel loops and overheads put together into cycles
//   machine_model.cc   the reference and host machines
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <vector>

#include "codegen/analysis/cost_model.h"
#include "codegen/analysis/features.h"

namespace tensorgym {
namespace cost_model_internal {

// Operations of one evaluation of a stored value, as the machine executes them.
struct ValueOps {
  double fp = 0;     // FP pipe operations (an FMA, add, multiply, min/max, compare, blend, convert)
  double div = 0;    // divides and square roots
  double calls = 0;  // scalar math library calls (exp, log, tanh)
  double alu = 0;    // integer and boolean operations on data
  double fma = 0;    // of the FP operations, multiply-adds (two instructions in LLVM IR)
};

// Whether an integer or boolean part of a value stays the same across the iterations
// of the code being costed (LICM computes it once outside: a padding test's clauses on
// the rows, around a loop over the columns).
using IsInvariant = std::function<bool(const Expr&)>;

// Operations of one evaluation of `e`; with `invariant`, leaving out the integer and
// boolean parts it accepts.
void count_value(const Expr& e, ValueOps* o, const IsInvariant* invariant = nullptr);

// Calls `f` on each clause of a conjunction (`a && b && ...`, in order).
template <class F>
void for_each_clause(const Expr& c, F&& f) {
  if (const And* a = c.as<And>()) {
    for_each_clause(a->a, f);
    for_each_clause(a->b, f);
  } else {
    f(c);
  }
}

inline double ceil_div(double a, double b) { return std::ceil(a / b); }

inline int64_t gcd64(int64_t a, int64_t b) {
  a = std::abs(a);
  b = std::abs(b);
  while (b) {
    const int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

// Per-iteration demand of a region's straight-line code on the core's resources.
struct Demand {
  double fp = 0, loads = 0, stores = 0, alu = 0, divide = 0, calls = 0;
  double chains = 0;         // independent accumulator chains advanced per iteration
  double chain_latency = 0;  // cycles per iteration the slowest loop-carried chain needs
  double inner_chain = 0;    // cycles of the longest dependence chain inside one iteration
  double hoisted = 0;        // loads hoisted out of the loop: once per loop execution
  double indexed = 0;        // gathers and scatters, where they serialize (else in loads, stores)
  double uops() const { return fp + loads + stores + indexed + alu + divide; }
};

struct CacheSpec {
  double capacity_lines;
  double sets;
  double ways;
  bool conflicts;  // set-associative indexing (L3 slices hash their addresses)
};

// The machine with every rate, size and count the model divides by kept positive, so
// that a hand-edited machine cannot produce infinities or NaNs.
MachineModel sanitized(const MachineModel& m);

// The model of one summarized nest on one machine. Regions: the straight-line code
// under each iterating loop (index loop + 1; 0 is the top level).
class Model {
 public:
  Model(const NestSummary& s, const MachineModel& m) : S(s), M(m) {}

  CostBreakdown run();

 private:
  // How LLVM's loop vectorizer, vectorizing a loop, accesses one access of a store.
  enum class VecAccess { kInvariant, kUnit, kInterleaved, kGather };
  struct Entry {  // lines of one access pattern of a buffer
    int buffer;
    const NestAccess* access;
    double lines;
  };

  // ---- code_generator.cc: what the backend and LLVM make of the nest -----------------
  void prepare();
  void find_backend_vectorized();
  void find_full_unrolls();
  void unrolled_body_sizes(std::vector<double>* body_size, std::vector<double>* folded_size) const;
  void count_executions();
  void find_forwarded_inits();
  void assign_regions();
  void find_register_buffers();
  void describe_caches();

  // ---- auto_vectorize.cc: LLVM's loop and SLP vectorizers ---------------------------
  void find_auto_vectorized();
  void auto_vector_body_sizes(const std::vector<char>& has_inner);
  void auto_vectorize_loop(size_t l);
  double masked_share(int l, const NestStore& st) const;
  int64_t fused_lanes(const NestAccess& a, int l) const;
  bool remainder_wraps(const NestAccess& a, int l) const;
  static int64_t fused_lane_step(const NestAccess& a, int l);
  VecAccess vec_access(int l, const NestStore& st, const NestAccess& a) const;
  double slp_factor(const NestStore& st, int r_depth) const;

  // ---- select_rules.cc: selects and guards that decide LLVM's vector code ------------
  bool copies_jump_threaded(const NestStore& st, int l) const;
  bool select_taps_unrolled_late(const NestStore& st, int l) const;
  bool range_test_is_switch(const NestStore& st, int l) const;
  int loop_named(const NestStore& st, const std::string& name) const;
  bool moves_in_region(const Expr& x, const NestStore& st, int r, int vl) const;
  bool select_test_unswitched(const NestStore& st, int r, int vl) const;
  bool conditional_producer(int buffer, const NestStore& st, int r) const;
  bool arms_split_inside(const NestStore& st, int r) const;
  bool guard_tested_in(const NestStore& st, int r) const;
  double fraction_within(const NestStore& st, int r) const;

  // ---- cost_memory.cc: working sets and misses --------------------------------------
  std::vector<int> memory_chain(const NestStore& st) const;
  void compute_working_sets();
  double ws_over(int l, double p) const;
  double span_in(const IndexForm& ix, int l) const;
  double buffer_lines(int b) const;
  bool fits_sets(const Footprint& fp, double elem_bytes, const CacheSpec& c) const;
  void access_misses(int si, const NestAccess& a, double misses[3]) const;
  double tlb_cycles(int si, const NestAccess& a) const;
  double prefetched(int si, const NestAccess& a) const;

  // ---- cost_compute.cc: a region's demand on the core --------------------------------
  // One store as the code of region `r` runs it.
  struct RegionStore {
    const NestStore& st;
    int r = -1, r_depth = -1, vl = -1;
    bool autovec = false;
    DataType t;
    double k = 1;                                        // instances per region iteration (the vector loop counts once)
    double steps = 1;                                    // of which update one location one after the other
    double lanes = 1, v = 1;                             // the vector loop's lanes, and the registers they fill
    bool masked = false;                                 // the vector loop's tail guard kept, as masks
    double slp = 1;                                      // instructions per copy left by the SLP vectorizer
    double avf = 0;                                      // LLVM's vector factor of the region
    double ms = 0;                                       // the share of copies whose guard LLVM's vector loop masks
    double kk = 1;                                       // instances per iteration, as executed
    bool conditional_value = false, arms_split = false;  // loads under a select
    bool self_read = false, scattered = false;           // an update; a per-lane target
    bool carried = false, masked_chain = false, prom = false;  // its loop-carried chain
  };
  Demand region_demand(int r, const std::vector<int>& stores, bool autovec) const;
  RegionStore region_store(int r, int si, const std::vector<int>& stores, bool autovec) const;
  void add_value_demand(Demand* d, const RegionStore& rs) const;
  void add_access_demands(Demand* d, const RegionStore& rs, const std::vector<int>& stores) const;
  void add_chain_demand(Demand* d, const RegionStore& rs) const;
  bool reread_from_store_buffer(const NestStore& st, int r) const;
  void add_access(Demand* d, bool write, bool indexed, double cycles) const;
  bool promoted(const NestStore& st, int r, const std::vector<int>& region) const;
  bool moves_within(const IndexTerm& term, int depth) const;
  double same_address_copies(const NestStore& st, const NestAccess& a, int r_depth) const;
  bool per_lane(const NestAccess& a, int vl) const;
  int64_t strided_span(const NestAccess& a, int vl) const;

  // ---- cost_assembly.cc: everything into cycles --------------------------------------
  void describe_loops(CostBreakdown& out) const;
  void memory_per_region(CostBreakdown& out, std::vector<double>& region_mem, std::vector<double>& region_dram) const;
  void combine_regions(CostBreakdown& out, const std::vector<double>& region_mem,
                       const std::vector<double>& region_dram, std::vector<double>& region_total);
  double loop_overheads(std::vector<double>& loop_overhead) const;
  void add_allocation_overheads(double* overhead) const;
  double latency_bound(const Demand& d) const;
  double demand_cycles(const Demand& d, bool loop_overhead) const;
  double region_compute(int r, const std::vector<int>& stores, CostBreakdown& out);

  // ---- small shared helpers -------------------------------------------------------
  double ext(int l) const { return double(S.loops[size_t(l)].extent); }
  // Threads that run parallel loop `l`: one per core, at most one per iteration.
  double threads_of(int l) const { return std::min(double(std::max(M.cores, 1)), ext(l)); }
  static bool power_of_two(int64_t c) { return c > 0 && std::has_single_bit(uint64_t(c)); }
  // Instances of `st` in one iteration of loop `l`: the extents of its loops inside `l`.
  double copies_inside(int l, const NestStore& st) const {
    double copies = 1;
    for (int u : st.loops)
      if (S.loops[size_t(u)].depth > S.loops[size_t(l)].depth) copies *= ext(u);
    return copies;
  }
  double store_instances(int si) const {
    const NestStore& st = S.stores[size_t(si)];
    double n = st.fraction;
    for (int l : st.loops) n *= ext(l);
    return n;
  }
  int lanes_per_vector(DataType t, int bits) const { return std::max(1, bits / (8 * std::max(t.bytes(), 1))); }
  // One lane of a vector gather (a read) or scatter (a write).
  double lane_cycles(bool write) const { return write ? M.scatter_lane_cycles : M.gather_lane_cycles; }
  // Whether `ix` moves with loop `l` through a non-affine part (divisions, modulos of
  // fused loops that the summary could not fold back into an affine walk).
  static bool nonaffine_in(const IndexForm& ix, int l) {
    for (const IndexTerm& term : ix.terms)
      if (term.loop < 0 && std::find(term.deps.begin(), term.deps.end(), l) != term.deps.end()) return true;
    return false;
  }
  bool nonaffine_in(const NestAccess& a, int l) const { return nonaffine_in(a.index, l); }
  // Whether two non-affine parts of indices compute the same value (up to the
  // coefficient they are scaled by).
  static bool same_part(const IndexTerm& x, const IndexTerm& y) {
    return x.deps == y.deps && x.divisor == y.divisor && x.offset == y.offset && x.remainder == y.remainder &&
           x.min_value == y.min_value && x.max_value == y.max_value && x.dep_steps == y.dep_steps;
  }
  static bool same_index(const IndexForm& x, const IndexForm& y) {
    if (x.constant != y.constant || x.terms.size() != y.terms.size()) return false;
    for (size_t k = 0; k < x.terms.size(); ++k)
      if (x.terms[k].loop != y.terms[k].loop || x.terms[k].coeff != y.terms[k].coeff) return false;
    return true;
  }
  // Whether `a` touches the element `st` stores (the store itself, or a read of it).
  static bool at_target(const NestStore& st, const NestAccess& a) {
    return a.buffer == st.buffer && same_index(a.index, st.accesses[0].index);
  }

  const NestSummary& S;
  const MachineModel& M;
  std::vector<char> vec_ok_, real_, llvm_unrolled_;
  std::vector<char> sroa_;                       // per buffer: kept in registers
  std::vector<int> autovec_;                     // per loop: LLVM's vector factor, 0 when it stays scalar
  std::vector<char> autovec_gathers_;            // per loop: LLVM vectorizes it with gathers or scatters
  std::vector<char> autovec_folded_;             // per loop: its tail folded into one masked vector loop
  std::vector<double> body_size_;                // per innermost iterating loop: instructions of its unrolled body
  std::vector<int> outer_parallel_;              // per loop: the outermost parallel loop around it (itself included)
  std::vector<double> iters_, execs_;            // body runs / entries over the whole run
  std::vector<std::vector<int>> stores_under_;   // per loop: stores in its subtree
  std::vector<std::vector<int>> region_stores_;  // per region (loop + 1, 0 = top level)
  std::vector<int> region_, vec_of_;             // per store
  std::vector<char> dead_init_, forwarded_;      // per store: deleted init; update reading its init's value
  std::vector<double> ws_lines_;                 // per loop: lines one iteration touches
  std::vector<char> long_reuse_;                 // per loop: some access walks it through a non-affine index
  std::vector<std::vector<Entry>> lr_iter_, lr_whole_;  // long_reuse_ loops: per iteration, whole loop
  std::vector<std::vector<int>> mchains_;               // per store: its loops in memory order
  double total_lines_ = 0;                              // lines of every buffer
  std::vector<char> chain_bound_, calls_bound_;         // per region
  CacheSpec caches_[3];
};

}  // namespace cost_model_internal
}  // namespace tensorgym
