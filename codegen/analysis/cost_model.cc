#include "codegen/analysis/cost_model.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <numeric>
#include <string>

#include "codegen/analysis/features.h"
#include "codegen/ir/ir_visitor.h"
#include "support/host_caches.h"
#include "support/host_memory_bandwidth.h"
#include "support/host_vector_costs.h"

namespace tensorgym {

// ---- machines -------------------------------------------------------------------------

MachineModel MachineModel::reference() { return MachineModel(); }

namespace {

void read_host_caches(MachineModel* m) {
  for (const HostCache& c : host_data_caches()) {
    if (c.line_bytes > 0) m->line_bytes = c.line_bytes;
    if (c.level == 1) {
      m->l1_bytes = c.bytes;
      if (c.ways > 0) m->l1_ways = c.ways;
    } else if (c.level == 2) {
      m->l2_bytes = c.bytes;
      if (c.ways > 0) m->l2_ways = c.ways;
    } else if (c.level == 3) {
      m->l3_bytes = c.bytes;
      if (c.ways > 0) m->l3_ways = c.ways;
    }
  }
}

}  // namespace

MachineModel MachineModel::from_host() {
  int bits = 128;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    bits = 512;
  } else if (__builtin_cpu_supports("avx2")) {
    bits = 256;
  }
#endif
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return from_host(bits, n > 0 ? int(n) : 1);
}

MachineModel MachineModel::from_host(int vector_bits, int cores) {
  MachineModel m;
  m.name = "host";
  m.vector_bits = std::max(vector_bits, 128);
  // LLVM's loop vectorizer prefers 256-bit vectors on AVX-512 parts.
  m.auto_vector_bits = std::min(m.vector_bits, 256);
  m.vector_registers = m.vector_bits >= 512 ? 32 : 16;
  m.vector_gather = m.vector_bits >= 256;
  m.vector_scatter = m.vector_bits >= 512;
  m.cores = std::max(cores, 1);
  read_host_caches(&m);
  // Measured: the same gather costs 0.8 cycles a lane on one Xeon and 3.5 on another.
  const HostVectorCosts& v = host_vector_costs();
  if (v.gather_lane_cycles > 0) m.gather_lane_cycles = v.gather_lane_cycles;
  if (v.scatter_lane_cycles > 0) m.scatter_lane_cycles = v.scatter_lane_cycles;
  // Together nearer their sum than the larger of the two: one sequencer runs both.
  const double g = v.gather_lane_cycles, sc = v.scatter_lane_cycles;
  if (g > 0 && sc > 0 && v.gather_scatter_lane_cycles > 0)
    m.indexed_accesses_serialize = v.gather_scatter_lane_cycles > (std::max(g, sc) + g + sc) / 2;
  // Measured: a Zen 4 core streams 27 bytes a cycle from its L3, the reference 10.
  const HostMemoryBandwidth& bw = host_memory_bandwidth();
  if (bw.l3_bytes_per_cycle > 0) m.l3_bandwidth = bw.l3_bytes_per_cycle;
  return m;
}

// ---- the model ------------------------------------------------------------------------

namespace {

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
void count_value(const Expr& e, ValueOps* o, const IsInvariant* invariant = nullptr) {
  if (!e.defined()) return;
  if (invariant && !e.type().is_float() && (*invariant)(e)) return;
  switch (e.kind()) {
    case NodeKind::kAdd:
    case NodeKind::kSub: {
      const Expr& a = e.kind() == NodeKind::kAdd ? e.as<Add>()->a : e.as<Sub>()->a;
      const Expr& b = e.kind() == NodeKind::kAdd ? e.as<Add>()->b : e.as<Sub>()->b;
      if (!e.type().is_float()) {
        o->alu += 1;
        count_value(a, o, invariant);
        count_value(b, o, invariant);
        return;
      }
      // a * b + c contracts into one FMA.
      const Mul* m = a.as<Mul>() ? a.as<Mul>() : b.as<Mul>();
      o->fp += 1;
      if (m) {
        o->fma += 1;
        count_value(m->a, o, invariant);
        count_value(m->b, o, invariant);
        count_value(a.as<Mul>() ? b : a, o, invariant);
      } else {
        count_value(a, o, invariant);
        count_value(b, o, invariant);
      }
      return;
    }
// clang-format off
#define TG_ARITH(Node, float_field, int_cost)              \
  case NodeKind::k##Node: {                                \
    const Node* op = e.as<Node>();                         \
    if (op->a.type().is_float()) {                         \
      o->float_field += 1;                                 \
    } else {                                               \
      o->alu += int_cost;                                  \
    }                                                      \
    count_value(op->a, o, invariant);                      \
    count_value(op->b, o, invariant);                      \
    return;                                                \
  }
      TG_ARITH(Mul, fp, 1)
      TG_ARITH(Div, div, 4)
      TG_ARITH(Mod, div, 5)
      TG_ARITH(Min, fp, 1)
      TG_ARITH(Max, fp, 1)
      TG_ARITH(EQ, fp, 1)
      TG_ARITH(NE, fp, 1)
      TG_ARITH(LT, fp, 1)
      TG_ARITH(LE, fp, 1)
      TG_ARITH(GT, fp, 1)
      TG_ARITH(GE, fp, 1)
#undef TG_ARITH
    // clang-format on
    case NodeKind::kAnd:
      o->alu += 1;
      count_value(e.as<And>()->a, o, invariant);
      count_value(e.as<And>()->b, o, invariant);
      return;
    case NodeKind::kOr:
      o->alu += 1;
      count_value(e.as<Or>()->a, o, invariant);
      count_value(e.as<Or>()->b, o, invariant);
      return;
    case NodeKind::kNot:
      o->alu += 1;
      count_value(e.as<Not>()->a, o, invariant);
      return;
    case NodeKind::kSelect: {
      const Select* s = e.as<Select>();
      if (e.type().is_float()) {
        o->fp += 1;
      } else {
        o->alu += 1;
      }
      count_value(s->condition, o, invariant);
      count_value(s->true_value, o, invariant);
      count_value(s->false_value, o, invariant);
      return;
    }
    case NodeKind::kCast: {
      const Cast* c = e.as<Cast>();
      if (c->type.is_float() != c->value.type().is_float()) o->fp += 1;
      count_value(c->value, o, invariant);
      return;
    }
    case NodeKind::kCall: {
      const Call* c = e.as<Call>();
      switch (c->op) {
        case CallOp::kAbs: o->fp += 1; break;
        case CallOp::kSqrt: o->div += 1; break;
        default: o->calls += 1; break;
      }
      for (const Expr& a : c->args) count_value(a, o, invariant);
      return;
    }
    case NodeKind::kBroadcast: count_value(e.as<Broadcast>()->value, o, invariant); return;
    default: return;  // loads (their indices are addressing), constants, variables
  }
}

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

double ceil_div(double a, double b) { return std::ceil(a / b); }

int64_t gcd64(int64_t a, int64_t b) {
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

class Model {
 public:
  Model(const NestSummary& s, const MachineModel& m) : S(s), M(m) {}

  CostBreakdown run() {
    prepare();
    compute_working_sets();
    CostBreakdown out;
    out.loops.resize(S.loops.size());
    out.stores.resize(S.stores.size());
    for (size_t i = 0; i < S.stores.size(); ++i) {
      out.stores[i].buffer = S.buffers[size_t(S.stores[i].buffer)].name;
      out.stores[i].instances = store_instances(int(i));
    }
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

    // Memory traffic per access, grouped by region.
    std::vector<double> region_mem(S.loops.size() + 1, 0.0), region_dram(S.loops.size() + 1, 0.0);
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
        auto per_line = [&](double bandwidth, double latency) {
          const double b = line / bandwidth;
          return streamed * b + (1 - streamed) * std::max(b, latency / M.memory_parallelism);
        };
        const double t2 = misses[0] * frac * write_factor * per_line(M.l2_bandwidth, M.l2_latency);
        const double t3 = misses[1] * frac * write_factor * per_line(M.l3_bandwidth, M.l3_latency);
        const double td = misses[2] * frac * dram_write_factor * per_line(M.dram_bandwidth, M.dram_latency);
        const double private_cycles = std::max(t2, t3) + 0.5 * std::min(t2, t3);
        mem_private += private_cycles;
        // DRAM lines, weighted by how much slower than streaming they arrive.
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

    // Compute per region, combined with memory; parallel loops scale what is inside them.
    const int n = int(S.loops.size());
    std::vector<double> region_total(size_t(n) + 1, 0.0);
    for (int r = -1; r < n; ++r) {
      if (r >= 0 && !real_[size_t(r)]) continue;
      const std::vector<int>& stores = region_stores_[size_t(r + 1)];
      const double compute = region_compute(r, stores, out);
      double mem = region_mem[size_t(r + 1)];
      const double dram_lines = region_dram[size_t(r + 1)];
      // Threads running this region: those of the outermost parallel loop around it.
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

    // Overheads: loop entries, fork/join, heap allocations.
    double overhead = 0;
    std::vector<double> loop_overhead(size_t(n), 0.0);
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
    // Heap allocations: a trip to the runtime's workspace pool per execution. The pool
    // keeps freed blocks, so a steady-state run faults in no pages for its scratch
    // (codegen/cpu/workspace_pool.h), unless the block is larger than the pool keeps:
    // then every execution maps it anew and faults in each page it touches (gmm-4's
    // `rfactor` of k split by 5, 860 MB of partial sums: 1.27 s measured, where the
    // traffic alone is estimated at 0.17 s; first touches of 860 MB take 0.44 s).
    for (const NestAlloc& a : S.allocs) {
      const NestBuffer& b = S.buffers[size_t(a.buffer)];
      const double bytes = double(b.elements) * b.dtype.bytes() * b.dtype.lanes;
      if (bytes <= double(M.stack_limit_bytes)) continue;
      double execs = 1;
      for (int l : a.loops) execs *= vec_ok_[size_t(l)] ? 1.0 : double(S.loops[size_t(l)].extent);
      overhead += execs * M.heap_alloc_cycles;
      if (bytes > double(M.workspace_pool_bytes))
        overhead += execs * std::ceil(bytes / double(M.page_bytes)) * M.page_fault_cycles;
    }
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

 private:
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
  struct Entry {  // lines of one access pattern of a buffer
    int buffer;
    const NestAccess* access;
    double lines;
  };
  std::vector<std::vector<Entry>> lr_iter_, lr_whole_;  // long_reuse_ loops: per iteration, whole loop
  std::vector<std::vector<int>> mchains_;        // per store: its loops in memory order
  double total_lines_ = 0;                       // lines of every buffer
  std::vector<char> chain_bound_, calls_bound_;  // per region
  CacheSpec caches_[3];

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

  void prepare() {
    const size_t n = S.loops.size();
    const auto& L = S.loops;
    stores_under_.assign(n, {});
    for (size_t si = 0; si < S.stores.size(); ++si)
      for (int l : S.stores[si].loops) stores_under_[size_t(l)].push_back(int(si));

    // Which vectorized loops the backend really vectorizes (vectorize_loops.cc).
    vec_ok_.assign(n, 0);
    std::vector<char> has_bad_inner(n, 0);
    for (size_t l = 0; l < n; ++l) {
      if (L[l].kind == ForKind::kParallel || L[l].kind == ForKind::kVectorized)
        for (int p = L[l].parent; p >= 0; p = L[size_t(p)].parent) has_bad_inner[size_t(p)] = 1;
    }
    for (const NestAlloc& a : S.allocs)
      for (int l : a.loops) has_bad_inner[size_t(l)] = 1;
    for (size_t l = 0; l < n; ++l) {
      if (L[l].kind != ForKind::kVectorized || L[l].extent < 2 || L[l].extent > 64 || has_bad_inner[l]) continue;
      bool ok = true;
      for (int si : stores_under_[l]) {
        const NestStore& st = S.stores[size_t(si)];
        if (st.accesses[0].index.depends_on(int(l))) continue;
        for (size_t k = 1; k < st.accesses.size(); ++k) ok &= !st.accesses[k].index.depends_on(int(l));
      }
      vec_ok_[l] = ok;
    }
    real_.assign(n, 0);
    // LLVM fully unrolls small serial loops of constant trip count (innermost first;
    // a loop whose inner loops all went becomes a candidate in turn).
    llvm_unrolled_.assign(n, 0);
    std::vector<double> body_size(n, 0.0);  // instructions of one iteration, inner loops unrolled
    std::vector<char> blocked(n, 0);        // has an inner loop that stays a loop
    // What of it folds to constants in each unrolled copy (LLVM simulates the first
    // `full_unroll_analyzed_trips` iterations and drops what becomes constant).
    std::vector<double> folded_size(n, 0.0);
    for (size_t si = 0; si < S.stores.size(); ++si) {
      const NestStore& st = S.stores[si];
      ValueOps ops;
      count_value(st.node->value, &ops);
      // The size LLVM's unroller sees for loop `l` once the loops inside it are
      // unrolled (its LoopSize; measured as the `-unroll-threshold` at which `opt -O3`
      // starts to unroll: c2d-2's channel loop, 64 multiply-adds walked one by one, at
      // about 400; gmm-4 `tile(C.k, C.i, 8, 8)`, 64 copies, at about 200; c2d-2 seed
      // 45 #149, 57 guarded copies, at about 350):
      // - one instruction per operation of the value (two per FMA: a multiply and an
      //   add in the IR), in every copy;
      // - each access `full_unroll_access_size` in each distinct copy (the load or
      //   store: the copies' addresses are constant offsets from one register) and
      //   `full_unroll_address_size` once per iteration (that register's update);
      //   copies of an access that does not move with `l` are loop-invariant, and
      //   LICM hoists them (and promotes an accumulator to registers) before LLVM
      //   considers `l`. The pipeline simplifies the kernel twice (the body function,
      //   then inlined into its caller), so that holds for copies the first round's
      //   unrolls made too (`opt -print-before=loop-unroll-full`);
      // - a compare and a branch per distinct copy of a guard that reads `l` or a
      //   loop inside it and can fail in that copy.
      // Of that, what reads only `l` and the loops inside it folds: such a guard, the
      // value's integer tests on them (a padding select's `w >= 1`), and the part of
      // an index that walks `l` by more than one element (`o << 13`; by one element
      // LLVM adds the counter to the address register).
      // Explicit vector code (a vectorized loop at or around the store) is one vector
      // per copy: each operation is as many instructions as registers its lanes fill,
      // a gather or scatter one per lane (LLVM prices them scalarized).
      int vl = -1;
      for (int l : st.loops)
        if (vec_ok_[size_t(l)]) vl = l;
      const double regs =
          vl < 0 ? 1.0
                 : std::ceil(ext(vl) / lanes_per_vector(S.buffers[size_t(st.buffer)].dtype, M.vector_bits));
      // The distinct copies, inside the loop at `k`, of something that reads `reads`.
      auto distinct_inside = [&](size_t k, const auto& reads) {
        double distinct = 1;
        for (size_t j = k + 1; j < st.loops.size(); ++j) {
          const int u = st.loops[j];
          if (!vec_ok_[size_t(u)] && reads(u)) distinct *= ext(u);
        }
        return distinct;
      };
      double copies = 1;  // unrolled copies of the store inside the loop at `k`
      for (size_t k = st.loops.size(); k-- > 0;) {
        const int l = st.loops[k];
        const int depth = L[size_t(l)].depth;
        auto at_or_inside = [&](int u) { return L[size_t(u)].depth >= depth; };
        // Integer parts of the value that read only `l` and the loops inside it.
        const IsInvariant folds = [&](const Expr& x) {
          bool only_inside = true;
          visit_exprs(x, [&](const Expr& y) {
            if (y.kind() == NodeKind::kLoad) only_inside = false;
            if (const Variable* var = y.as<Variable>()) {
              const int u = loop_named(st, var->name);
              only_inside &= u >= 0 && at_or_inside(u);
            }
          });
          return only_inside;
        };
        ValueOps left;
        count_value(st.node->value, &left, &folds);
        double size = (ops.fp + ops.fma + ops.alu + 4 * ops.div) * regs * copies + 10 * ops.calls * copies;
        double folded = (ops.alu - left.alu) * regs * copies;
        for (const NestAccess& a : st.accesses) {
          if (!a.index.depends_on(l)) continue;  // hoisted out of `l` (or promoted)
          const double distinct = distinct_inside(k, [&](int u) { return a.index.depends_on(u); });
          size += per_lane(a, vl) ? distinct * ext(vl)
                                  : (distinct * M.full_unroll_access_size + M.full_unroll_address_size) * regs;
          const int64_t stride = a.index.stride_of(l);
          if (stride != 1 && stride != -1) folded += distinct * regs;
        }
        for (const NestStore::Guard& g : st.guards) {
          auto reads = [&](int u) { return std::find(g.loops.begin(), g.loops.end(), u) != g.loops.end(); };
          const bool inside_only = std::all_of(g.loops.begin(), g.loops.end(), at_or_inside);
          const double distinct = distinct_inside(k, reads);
          // One on outer loops only is unswitched; one on the loops inside only was
          // folded when they were unrolled.
          if (!reads(l) && (inside_only || distinct == 1)) continue;
          // Only the copies it can fail in keep a test (IndVarSimplify proves the
          // others true): about as many as the points it leaves out.
          const double tests = 2 * std::min(distinct, std::ceil(distinct * (1 - g.fraction)));
          size += tests;
          if (inside_only) folded += tests;
        }
        body_size[size_t(l)] += size;
        folded_size[size_t(l)] += std::min(folded, size);
        copies *= vec_ok_[size_t(l)] ? 1.0 : ext(l);
      }
    }
    for (size_t l = n; l-- > 0;) {
      // LLVM's test: the unrolled size under the threshold; for a loop it simulates,
      // the size left after folding under the threshold times the ratio of the two
      // (at most `full_unroll_max_boost`).
      const double rolled = ext(int(l)) * body_size[l];
      const double unrolled = ext(int(l)) * std::max(body_size[l] - folded_size[l], 1.0);
      const bool small = rolled <= M.full_unroll_budget ||
                         (ext(int(l)) <= M.full_unroll_analyzed_trips &&
                          unrolled <= M.full_unroll_budget * std::min(M.full_unroll_max_boost, rolled / unrolled));
      const bool candidate =
          (L[l].kind == ForKind::kSerial || (L[l].kind == ForKind::kVectorized && !vec_ok_[l])) && !blocked[l] && small;
      llvm_unrolled_[l] = candidate;
      const bool stays_loop = !(candidate || vec_ok_[l] || L[l].kind == ForKind::kUnrolled);
      if (stays_loop || blocked[l])
        if (L[l].parent >= 0) blocked[size_t(L[l].parent)] = 1;
    }
    for (size_t l = 0; l < n; ++l) real_[l] = !vec_ok_[l] && L[l].kind != ForKind::kUnrolled && !llvm_unrolled_[l];

    iters_.assign(n, 1);
    execs_.assign(n, 1);
    outer_parallel_.assign(n, -1);
    for (size_t l = 0; l < n; ++l) {  // pre-order: parents first
      const int p = L[l].parent;
      execs_[l] = (p >= 0 ? iters_[size_t(p)] : 1) * L[l].fraction;  // not under a failing guard
      iters_[l] = execs_[l] * (vec_ok_[l] ? 1.0 : ext(int(l)));
      outer_parallel_[l] = p >= 0 ? outer_parallel_[size_t(p)] : -1;
      if (outer_parallel_[l] < 0 && L[l].kind == ForKind::kParallel) outer_parallel_[l] = int(l);
    }

    // An initial value stored just before its only update, in the same loops (the
    // reduction loops between them all have extent 1, as a 1x1 convolution's after
    // rfactor of its channels): GVN forwards it into the update and DSE deletes it.
    dead_init_.assign(S.stores.size(), 0);
    forwarded_.assign(S.stores.size(), 0);
    for (size_t si = 0; si + 1 < S.stores.size(); ++si) {
      const NestStore& init = S.stores[si];
      const NestStore& update = S.stores[si + 1];
      if (init.accesses.size() != 1 || update.buffer != init.buffer || update.loops != init.loops ||
          update.fraction != init.fraction || update.guard_loops != init.guard_loops ||
          !same_index(update.accesses[0].index, init.accesses[0].index))
        continue;
      for (size_t k = 1; k < update.accesses.size(); ++k)
        if (update.accesses[k].buffer == init.buffer && same_index(update.accesses[k].index, init.accesses[0].index))
          dead_init_[si] = forwarded_[si + 1] = 1;
    }

    region_.assign(S.stores.size(), -1);
    vec_of_.assign(S.stores.size(), -1);
    region_stores_.assign(n + 1, {});
    for (size_t si = 0; si < S.stores.size(); ++si) {
      for (int l : S.stores[si].loops) {
        if (real_[size_t(l)]) region_[si] = l;
        if (vec_ok_[size_t(l)]) vec_of_[si] = l;
      }
      if (!dead_init_[si]) region_stores_[size_t(region_[si] + 1)].push_back(int(si));
    }

    // LLVM's loop vectorizer on innermost iterating loops of plain code.
    // Small local buffers whose every index is constant once the unrolled loops are
    // unrolled live in registers (LLVM's SROA): no loads, no stores, no traffic.
    sroa_.assign(S.buffers.size(), 0);
    for (size_t b = 0; b < S.buffers.size(); ++b) {
      if (S.buffers[b].alloc < 0 || S.buffers[b].elements > M.register_buffer_elements) continue;
      // One element: whatever the index says, it is 0.
      bool ok = true;
      for (const NestStore& st : S.stores) {
        if (S.buffers[b].elements == 1) break;
        for (const NestAccess& a : st.accesses) {
          if (a.buffer != int(b)) continue;
          for (const IndexTerm& term : a.index.terms) {
            if (term.loop >= 0) {
              ok &= !real_[size_t(term.loop)];
            } else {
              for (int dep : term.deps) ok &= !real_[size_t(dep)];
            }
          }
        }
      }
      sroa_[b] = ok;
    }

    // LLVM's loop vectorizer on innermost iterating loops of plain code: no float
    // reduction (no reassociation), no library calls. Unit-stride and invariant
    // accesses are plain vector loads and stores; strided ones are interleaved groups
    // when unrolled copies fill the gaps, otherwise gathers and scatters (where the
    // target has them: AVX2 gathers, AVX-512 scatters). Guards do not stop it: at O3
    // LLVM unswitches a guard that does not move with the loop and peels a split's
    // tail test off it, so the vector loop runs unguarded. LLVM's own cost model
    // prices a gather at about its lanes plus two, a scalar access at one: it
    // vectorizes when the FP work, address arithmetic and contiguous accesses that
    // get cheaper outweigh that (a copy of unrolled strided rows stays scalar;
    // anything computed goes).
    autovec_.assign(n, 0);
    autovec_folded_.assign(n, 0);
    autovec_gathers_.assign(n, 0);
    std::vector<char> has_inner(n, 0);
    for (size_t l = 0; l < n; ++l)
      if (real_[l] || vec_ok_[l])
        for (int p = L[l].parent; p >= 0; p = L[size_t(p)].parent) has_inner[size_t(p)] = 1;
    // The scalar body of an innermost iterating loop once the loops inside are fully
    // unrolled: each copy's accesses, operations and guard compares.
    body_size_.assign(n, 0);
    for (size_t l = 0; l < n; ++l) {
      if (!real_[l] || has_inner[l]) continue;
      for (int si : stores_under_[l]) {
        const NestStore& st = S.stores[size_t(si)];
        ValueOps ops;
        count_value(st.node->value, &ops);
        const double copies = copies_inside(int(l), st);
        body_size_[l] += copies * (double(st.accesses.size() + st.guards.size()) + ops.fp + ops.div + ops.alu);
      }
    }
    for (size_t l = 0; l < n; ++l) {
      if (!real_[l] || has_inner[l] || L[l].extent < 3 || stores_under_[l].empty()) continue;
      bool ok = true, in_vector = false;
      for (int p = L[l].parent; p >= 0; p = L[size_t(p)].parent) in_vector |= vec_ok_[size_t(p)] != 0;
      if (in_vector) continue;
      DataType t = DataType::f32();
      // Per scalar iteration: gathered accesses; what vectorizing makes cheaper (FP
      // operations, contiguous accesses, address arithmetic, guards).
      double gathers = 0, cheap = 0, interleaved = 0;
      bool scalar_gathers = false;  // accesses that gather even without a mask
      for (int si : stores_under_[l]) {
        const NestStore& st = S.stores[size_t(si)];
        ValueOps ops;
        count_value(st.node->value, &ops);
        if (ops.calls > 0 || range_test_is_switch(st, int(l)) || copies_jump_threaded(st, int(l)) ||
            select_taps_unrolled_late(st, int(l)))
          ok = false;
        // Unrolled copies inside `l`: each costs its accesses and operations again.
        const double copies = copies_inside(int(l), st);
        cheap += copies * (ops.fp + ops.div);
        if (sroa_[size_t(st.buffer)]) {
          // A register value, not a store; a float accumulation into it is still a
          // reduction LLVM may not reorder.
          bool self_read = false;
          for (size_t ai = 1; ai < st.accesses.size(); ++ai)
            self_read |= at_target(st, st.accesses[ai]);
          // (Not when the buffer is allocated inside `l`: each iteration has its own,
          // as a one-element accumulator computed at the output's x.)
          const NestBuffer& buf = S.buffers[size_t(st.buffer)];
          bool per_iteration = false;
          if (buf.alloc >= 0) {
            const std::vector<int>& around = S.allocs[size_t(buf.alloc)].loops;
            per_iteration = std::find(around.begin(), around.end(), int(l)) != around.end();
          }
          if (self_read && !st.accesses[0].index.depends_on(int(l)) && buf.dtype.is_float() && !per_iteration)
            ok = false;
          continue;
        }
        t = S.buffers[size_t(st.buffer)].dtype;
        if (!st.guard_loops.empty()) cheap += copies;  // the guards' compares
        const double ms = masked_share(int(l), st);    // copies whose guard stays: masked
        for (const NestAccess& a : st.accesses) {
          // Address arithmetic, shared by the copies: divisions and modulos, steps.
          for (const IndexTerm& term : a.index.terms) cheap += term.loop < 0 ? 3 : 0;
          cheap += a.index.depends_on(int(l)) ? 1 : 0;
          if (sroa_[size_t(a.buffer)]) continue;
          const int64_t s = a.index.stride_of(int(l));
          if (a.kind == AccessKind::kWrite && s == 0 && t.is_float()) ok = false;  // a float reduction
          if (remainder_wraps(a, int(l))) ok = false;
          const VecAccess k = vec_access(int(l), st, a);
          const double gathered = k == VecAccess::kGather ? 1 : k == VecAccess::kUnit ? 0 : ms;
          scalar_gathers |= k == VecAccess::kGather;
          if (k == VecAccess::kInterleaved) interleaved += copies * (1 - gathered);
          if (gathered > 0 && !(a.kind == AccessKind::kWrite ? M.vector_scatter : M.vector_gather)) ok = false;
          gathers += copies * gathered;
          if (a.kind == AccessKind::kWrite || s != 0) cheap += copies * (1 - gathered);
        }
      }
      if (!ok) continue;
      // Short loops are vectorized only when no scalar remainder is left.
      int widest = lanes_per_vector(t, M.auto_vector_bits);
      // A fused loop's parts line up over at most fused_lanes lanes.
      for (int si : stores_under_[l])
        for (const NestAccess& a : S.stores[size_t(si)].accesses)
          if (nonaffine_in(a, int(l)) && fused_lanes(a, int(l)) >= 4)
            widest = int(std::min<int64_t>(widest, fused_lanes(a, int(l))));
      int vf = widest;
      while (vf > int(L[l].extent)) vf /= 2;
      // Under 16 iterations LLVM leaves no scalar remainder: a power-of-two count
      // takes a vector as long as itself; any other, where the target masks every
      // access, runs whole vectors with the tail's lanes masked off (it does not look
      // for a smaller factor that divides the count), so each access is a masked load
      // or store and a strided group a masked gather (dep-1 seed 42 #110, x split by
      // 8 and the 8 copies unrolled: the 14 blocks as one 16-lane vector of masked
      // gathers, 1.84 ms run, estimated 0.29 ms as vectors of 8). Where an access
      // gathers anyway (c2d-2 seed 42 #63: the output at a stride of 18816, 11
      // blocks) the IR shows no such loop: the old halving rule holds there.
      bool folded = false;
      if (L[l].extent < 16 && L[l].extent % vf != 0) {
        folded = M.vector_gather && M.vector_scatter && !scalar_gathers && !power_of_two(L[l].extent);
        if (folded) {
          // (Three iterations run as one vector of 4: c2d-2 seed 45 #149's optimized IR.)
          vf = std::min(widest, std::max(vf, 4));
          // Masked groups are gathers. (They stay in `cheap` as well: priced as
          // plain gathers against a scalar loop, LLVM leaves #110 scalar, and it
          // vectorizes it.)
          gathers += interleaved;
        } else {
          while (vf >= 4 && L[l].extent % vf != 0) vf /= 2;
        }
      }
      if (vf < 4) continue;
      // Lanes doing work per vector: all of them, or the folded count spread over
      // its vectors. Vectorized when (gathers (vf + 2) + cheap) per vector beats
      // (gathers + cheap) per lane.
      const double used = folded ? ext(int(l)) / std::ceil(ext(int(l)) / vf) : double(vf);
      if (gathers > 0 && gathers * (vf + 2 - used) >= (used - 1) * cheap) continue;
      autovec_[l] = vf;
      autovec_gathers_[l] = gathers > 0;
      autovec_folded_[l] = folded;
    }

    const double line = M.line_bytes;
    auto spec = [&](int64_t bytes, int ways, bool conflicts) {
      CacheSpec c;
      c.capacity_lines = double(bytes) / line * M.cache_utilization;
      c.ways = std::max(ways, 1);
      c.sets = std::max(1.0, double(bytes) / line / c.ways);
      c.conflicts = conflicts;
      return c;
    };
    caches_[0] = spec(M.l1_bytes, M.l1_ways, true);
    caches_[1] = spec(M.l2_bytes, M.l2_ways, true);
    caches_[2] = spec(M.l3_bytes, M.l3_ways, false);
    chain_bound_.assign(n + 1, 0);
    calls_bound_.assign(n + 1, 0);
  }

  // Whether `ix` moves with loop `l` through a non-affine part (divisions, modulos of
  // fused loops that the summary could not fold back into an affine walk).
  static bool nonaffine_in(const IndexForm& ix, int l) {
    for (const IndexTerm& term : ix.terms)
      if (term.loop < 0 && std::find(term.deps.begin(), term.deps.end(), l) != term.deps.end()) return true;
    return false;
  }
  bool nonaffine_in(const NestAccess& a, int l) const { return nonaffine_in(a.index, l); }
  // How far `ix` ranges while loop `l` runs through its extent (the others fixed).
  double span_in(const IndexForm& ix, int l) const {
    double span = 0;
    for (const IndexTerm& term : ix.terms) {
      if (term.loop == l) span += std::fabs(double(term.coeff)) * (ext(l) - 1);
      if (term.loop < 0 && std::find(term.deps.begin(), term.deps.end(), l) != term.deps.end())
        span += std::fabs(double(term.coeff)) * double(term.max_value - term.min_value);
    }
    return span;
  }

  // Lines every access under `l` (a long_reuse_ loop) touches over `p` consecutive
  // iterations: each pattern its lines of one iteration, then what it advances by.
  double ws_over(int l, double p) const {
    const std::vector<Entry>& es = lr_iter_[size_t(l)];
    double total = 0;
    for (size_t i = 0; i < es.size(); ++i) {
      bool first = true;
      for (size_t j = 0; j < i; ++j) first &= es[j].buffer != es[i].buffer;
      if (!first) continue;
      const NestBuffer& b = S.buffers[size_t(es[i].buffer)];
      const double eb = double(b.dtype.bytes()) * b.dtype.lanes;
      double lines = 0, whole = 0;
      for (size_t j = i; j < es.size(); ++j) {
        if (es[j].buffer != es[i].buffer) continue;
        const double advance = std::fabs(double(es[j].access->index.stride_of(l))) * eb / M.line_bytes;
        lines += es[j].lines * (1 + (p - 1) * std::min(1.0, advance));
      }
      for (const Entry& e : lr_whole_[size_t(l)])
        if (e.buffer == es[i].buffer) whole += e.lines;
      total += std::min({lines, whole > 0 ? whole : lines, buffer_lines(es[i].buffer)});
    }
    return total;
  }

  // The share of the straight-line copies of `st` inside loop `l` that keep a guard
  // when LLVM vectorizes `l`. LLVM unswitches loop-invariant branches before it
  // fully unrolls the loops inside, so a guard on an unrolled loop (a split's tail
  // test, `outer * f + inner < n`) is still there when the vectorizer runs: the
  // copies it can fail in keep it, the others have it folded away. About as many
  // copies can fail as the guard leaves points out; a guard on `l` alone is a tail
  // LLVM peels off, one on outer loops only does not move with `l`. A guard on `l` and
  // on unrolled copies inside it is masked in the copies it can fail in (gmm-4
  // `reorder(C, i, k, j); split(C.j, 3, o, jj)`: masked gathers and scatters in the IR).
  double masked_share(int l, const NestStore& st) const {
    if (l >= 0 && size_t(l) < autovec_folded_.size() && autovec_folded_[size_t(l)]) return 1;
    if (st.guard_loops.empty() || st.fraction >= 1) return 0;
    const int depth = S.loops[size_t(l)].depth;
    // Guard by guard: one that reads only loops outside `l` does not move with it
    // (unswitched); one that reads only the unrolled loops inside it is a constant in
    // each copy (folded once unrolled, its failing copies deleted). Only one that
    // reads both keeps, in the copies it can fail, a test the vector loop masks.
    double unmasked = 1;
    for (const NestStore::Guard& g : st.guards) {
      if (g.fraction >= 1) continue;
      double space = 1, copies = 1;
      bool outer = false;
      const bool moves = std::find(g.loops.begin(), g.loops.end(), l) != g.loops.end();
      for (int gl : g.loops) {
        space *= ext(gl);
        if (S.loops[size_t(gl)].depth > depth) {
          copies *= ext(gl);
        } else {
          outer = true;
        }
      }
      // Once the copies are unrolled, their tests no longer move with `l`: the
      // function's second simplification (after the body is inlined into the entry)
      // unswitches them where the body is small enough to duplicate.
      // A test that moves with `l` itself is a tail: LLVM peels it off a loop without
      // copies, and masks the copies it can fail in (not unswitched: it moves).
      if (copies <= 1 || !outer || (!moves && body_size_[size_t(l)] <= M.unswitch_budget)) continue;
      const double failing = std::ceil((1 - g.fraction) * space - 1e-9);
      unmasked *= 1 - std::min(1.0, failing / copies);
    }
    return 1 - unmasked;
  }

  // The share of the iterations of region `r` in which `st` runs: its guards inside
  // the region (those outside already thin out the region's iterations, iters_).
  double fraction_within(const NestStore& st, int r) const {
    if (r < 0) return st.fraction;
    const int depth = S.loops[size_t(r)].depth;
    double outside = 1;
    for (int l : st.loops)
      if (S.loops[size_t(l)].depth <= depth) outside *= S.loops[size_t(l)].fraction;
    return outside > 0 ? std::min(1.0, st.fraction / outside) : 0.0;
  }

  // Whether LLVM's jump threading leaves loop `l` scalar: `st`'s value loads under a
  // select (a branch around the load, emitted so that padding is never read) and the
  // schedule unrolls two or more loops of `st` inside `l`, whose copies' tests share
  // clauses (`y != 0` in each row's copies). Jump threading duplicates the blocks
  // between them, the loop's increment becomes a phi of copies, and the vectorizer
  // cannot count its iterations. dep-1 `compute_inline(P); unroll(D.r); unroll(D.s)`:
  // scalar, 1.6 ms; with `unroll(D.s)` alone vectorized, 0.2 ms (docs/cost_model.md).
  bool copies_jump_threaded(const NestStore& st, int l) const {
    const int depth = S.loops[size_t(l)].depth;
    int unrolled = 0;
    for (int u : st.loops) {
      const NestLoop& U = S.loops[size_t(u)];
      unrolled += U.depth > depth && U.kind == ForKind::kUnrolled && U.extent > 1;
    }
    if (unrolled < 2) return false;
    for (const NestAccess& a : st.accesses)
      if (a.kind == AccessKind::kRead && a.fraction < 1) return true;  // a load under a select
    return false;
  }

  // Whether LLVM unrolls the taps around a select after its loop vectorizer ran, which
  // leaves loop `l` scalar: `st` accumulates a value that selects between arms that
  // load, evaluated whatever the condition (a padding test on an input, inlined;
  // speculative_loads.h), and two nested loops inside `l` are left for LLVM to unroll. The vectorizer meets the
  // innermost tap loop (3 iterations, not worth it) and the taps are unrolled later.
  // dep-1 `compute_inline(P)`: scalar, 1.4-2.4 ms; with `unroll(D.r)` or `unroll(D.s)`
  // (one loop left to LLVM) the pixels vectorize, 0.40 ms.
  bool select_taps_unrolled_late(const NestStore& st, int l) const {
    for (const NestAccess& a : st.accesses)
      if (a.kind == AccessKind::kRead && a.fraction < 1) return false;  // a branch: the rules above
    bool loading_select = false;
    visit_exprs(st.node->value, [&](const Expr& e) {
      if (const Select* sel = e.as<Select>())
        for (const Expr* arm : {&sel->true_value, &sel->false_value})
          visit_exprs(*arm, [&](const Expr& x) { loading_select |= x.kind() == NodeKind::kLoad; });
    });
    // The select is in an accumulation's value (the taps' update). A padding tile
    // computed in loops of its own before the taps read it vectorizes (dep-1
    // `compute_at(P, D.r)`, `compute_at(P, D.x)`: 0.48 and 0.57 ms).
    bool accumulates = false;
    for (size_t k = 1; k < st.accesses.size(); ++k) accumulates |= at_target(st, st.accesses[k]);
    if (!loading_select || !accumulates) return false;
    const int depth = S.loops[size_t(l)].depth;
    int late = 0;
    for (int u : st.loops) {
      const NestLoop& U = S.loops[size_t(u)];
      late += U.depth > depth && llvm_unrolled_[size_t(u)] && U.extent > 1;
    }
    return late >= 2;
  }

  // Whether a select in `st`'s value tests loop `l` against both ends of its range,
  // excluding exactly its first and last values (`w >= 1 && w <= 112` over 0..114: a
  // padding stage's columns, padding 1). LLVM turns the two tests into `w != 0` and
  // `w != 113`, and SimplifyCFG that chain of compares into a switch, which its loop
  // vectorizer does not take ("loop contains a switch statement"): dep-1's padding
  // stage at the output's rows, `compute_at(P, Y.y)`, 0.54 ms against the naive 0.24.
  bool range_test_is_switch(const NestStore& st, int l) const {
    const NestLoop& L = S.loops[size_t(l)];
    if (L.extent < 3) return false;
    const int64_t first = L.min, last = L.min + L.extent - 1;
    bool low = false, high = false;
    // `v op c` (or `c op v`) on the loop variable alone: the values it leaves out.
    auto clause = [&](const Expr& c) {
      Expr x, y;
      NodeKind k = c.kind();
      if (const LT* e = c.as<LT>()) x = e->a, y = e->b;
      if (const LE* e = c.as<LE>()) x = e->a, y = e->b;
      if (const GT* e = c.as<GT>()) x = e->a, y = e->b;
      if (const GE* e = c.as<GE>()) x = e->a, y = e->b;
      if (!x.defined()) return;
      const Variable* v = x.as<Variable>();
      const IntImm* n = y.as<IntImm>();
      if (!v || !n) {  // the constant on the left: mirror the comparison
        v = y.as<Variable>();
        n = x.as<IntImm>();
        if (!v || !n) return;
        k = k == NodeKind::kLT ? NodeKind::kGT : k == NodeKind::kLE ? NodeKind::kGE
          : k == NodeKind::kGT ? NodeKind::kLT : NodeKind::kLE;
      }
      if (v->name != L.name) return;
      const int64_t c0 = n->value;
      if (k == NodeKind::kGE) low |= c0 == first + 1;
      if (k == NodeKind::kGT) low |= c0 == first;
      if (k == NodeKind::kLE) high |= c0 == last - 1;
      if (k == NodeKind::kLT) high |= c0 == last;
    };
    bool sw = false;
    visit_exprs(st.node->value, [&](const Expr& e) {
      if (const Select* s = e.as<Select>()) {
        low = high = false;
        for_each_clause(s->condition, clause);
        sw |= low && high;
      }
    });
    return sw;
  }

  // The loop of `st` a variable of its value names (the innermost of that name); -1 for
  // a let's variable.
  int loop_named(const NestStore& st, const std::string& name) const {
    for (size_t k = st.loops.size(); k-- > 0;)
      if (S.loops[size_t(st.loops[k])].name == name) return st.loops[k];
    return -1;
  }

  // Whether `x` (a part of `st`'s value) changes within an iteration of region `r`:
  // it loads, or reads `r` or the vector loop `vl` (or a let's variable, assumed to).
  // Otherwise it reads only constants and outer loops, per unrolled copy.
  bool moves_in_region(const Expr& x, const NestStore& st, int r, int vl) const {
    bool moves = false;
    visit_exprs(x, [&](const Expr& y) {
      if (y.kind() == NodeKind::kLoad) moves = true;
      if (const Variable* var = y.as<Variable>()) {
        const int l = loop_named(st, var->name);
        moves |= l < 0 || l == r || l == vl;
      }
    });
    return moves;
  }

  // Whether the padding tests of the selects in `st`'s value lose, before LLVM
  // vectorizes region `r`, every part that does not move within it (as `masked_share`
  // has it for a store's guards: a part on outer loops only is unswitched; one on
  // outer loops and unrolled copies inside `r` too, where the body is small). Then
  // the loads beside a select stay plain (the invariant ones hoisted) and only the
  // guarded load is masked (a constant mask once LLVM fully unrolls a short vector
  // loop): dep-1 `reorder(Y, c, r, x); compute_inline(P)` (the rows outside the pixel
  // loop) has no gather and runs 0.15 ms; `compute_inline(P)` (the row taps unrolled
  // inside it, see `arms_split_inside`) has 18 and runs 3.3 ms.
  bool select_test_unswitched(const NestStore& st, int r, int vl) const {
    if (r < 0) return false;
    const int depth = S.loops[size_t(r)].depth;
    bool invariant_part = false, kept = false;
    auto clause = [&](const Expr& c) {
      if (moves_in_region(c, st, r, vl)) return;
      invariant_part = true;
      bool copies = false;  // reads an unrolled loop inside `r`
      visit_exprs(c, [&](const Expr& y) {
        if (const Variable* var = y.as<Variable>()) {
          const int l = loop_named(st, var->name);
          copies |= l >= 0 && S.loops[size_t(l)].depth > depth;
        }
      });
      kept |= copies && body_size_[size_t(r)] > M.unswitch_budget;
    };
    visit_exprs(st.node->value, [&](const Expr& e) {
      if (const Select* s = e.as<Select>()) for_each_clause(s->condition, clause);
    });
    return invariant_part && !kept;
  }

  // Whether `buffer` (a register) is written, in the same innermost loop as `st`, by
  // a store whose value loads under a select.
  bool conditional_producer(int buffer, const NestStore& st, int r) const {
    if (st.loops.empty()) return false;
    for (const NestStore& p : S.stores) {
      if (p.buffer != buffer || &p == &st || p.loops.empty() || p.loops.back() != st.loops.back()) continue;
      for (const NestAccess& a : p.accesses)
        if (a.kind == AccessKind::kRead && a.fraction < 1 && arms_split_inside(p, r)) return true;
    }
    return false;
  }

  // Whether LLVM splits a select in `st`'s value into two versions of a loop it
  // unrolls inside region `r`: the select's leading clause (a padding test's row
  // clause) does not move in that loop, which is small, so LLVM unswitches the clause
  // out of it before unrolling it. Both versions keep the loads after the select
  // (W's, even where the row is padding), and when LLVM vectorizes `r` it runs them
  // under the clause's mask, as masked gathers. Where no such loop is left inside `r`
  // (the column taps unrolled by the schedule, the rows in a loop of their own that
  // the clause moves in), the clause is one more bit of the guarded load's mask. dep-1
  // with the padding inlined: 18 gathers, 3.3 ms; with `unroll(Y.s)`, none, 0.16 ms;
  // `reorder(Y, s, r); unroll(Y.s)`, none; `reorder(Y, s, r); unroll(Y.r)` (the row
  // clause a constant in each copy of r, inside the loop over s), 26.
  bool arms_split_inside(const NestStore& st, int r) const {
    if (r < 0) return false;
    const int depth = S.loops[size_t(r)].depth;
    bool split = false;
    visit_exprs(st.node->value, [&](const Expr& e) {
      const Select* sel = e.as<Select>();
      if (!sel || split) return;
      Expr lead = sel->condition;
      while (const And* a = lead.as<And>()) lead = a->a;
      // The depth of the deepest loop the clause reads: loops of extent 1 and the
      // schedule's unrolled copies are constants in each copy.
      int deepest = -1;
      visit_exprs(lead, [&](const Expr& y) {
        if (y.kind() == NodeKind::kLoad) deepest = std::numeric_limits<int>::max();
        if (const Variable* var = y.as<Variable>()) {
          const int l = loop_named(st, var->name);
          if (l < 0) {
            deepest = std::numeric_limits<int>::max();  // a let's variable
          } else if (S.loops[size_t(l)].extent > 1 && S.loops[size_t(l)].kind != ForKind::kUnrolled) {
            deepest = std::max(deepest, S.loops[size_t(l)].depth);
          }
        }
      });
      for (int l : st.loops) {
        const NestLoop& L = S.loops[size_t(l)];
        split |= L.depth > depth && L.kind == ForKind::kSerial && L.extent > 1 && deepest < L.depth;
      }
      // The same when the clause reads such a loop through a division: the taps fused,
      // `y + f / 3` holds for three copies in a row once LLVM unrolls `f` (dep-1
      // `fuse(Y.r, Y.s); compute_inline(P)`: 8 gathers in the IR, 1.87 ms).
      visit_exprs(lead, [&](const Expr& y) {
        const Div* dv = y.as<Div>();
        if (!dv) return;
        visit_exprs(dv->a, [&](const Expr& z) {
          const Variable* var = z.as<Variable>();
          const int l = var ? loop_named(st, var->name) : -1;
          if (l < 0) return;
          const NestLoop& L = S.loops[size_t(l)];
          split |= L.depth > depth && L.kind == ForKind::kSerial && L.extent > 1;
        });
      });
    });
    return split;
  }

  // Whether a guard of `st` is still tested on every iteration of region `r`: one
  // that reads `r`, or both a loop outside it and an unrolled one inside (a test per
  // copy). One that reads only outer loops is hoisted out of the region, one that
  // reads only the unrolled loops inside it folds in each copy.
  bool guard_tested_in(const NestStore& st, int r) const {
    const int depth = r >= 0 ? S.loops[size_t(r)].depth : -1;
    for (const NestStore::Guard& g : st.guards) {
      bool inner = false, outer = false;
      for (int gl : g.loops) {
        if (gl == r) return true;
        (S.loops[size_t(gl)].depth > depth ? inner : outer) = true;
      }
      if (inner && outer) return true;
    }
    return false;
  }

  // How many of the straight-line copies of `st` inside a region at depth `r_depth`
  // (its unrolled loops) read the same address through `a`.
  double same_address_copies(const NestStore& st, const NestAccess& a, int r_depth) const {
    double n = 1;
    for (int u : st.loops)
      if (S.loops[size_t(u)].depth > r_depth && !vec_ok_[size_t(u)] && !a.index.depends_on(u)) n *= ext(u);
    return n;
  }

  // How LLVM's loop vectorizer, vectorizing loop `l`, accesses `a` of `st`.
  enum class VecAccess { kInvariant, kUnit, kInterleaved, kGather };
  // The most lanes (a power of two) over which every non-affine part of `a` that moves
  // with `l` is a fused loop's quotient that stays put or remainder that steps by one
  // (IndexTerm::divisor), when VF divides c and v's first value plus o in (v + o) / c
  // and (v + o) % c. On a target without gathers LLVM's vectorizer computes each lane's
  // address and loads it alone, and where the lanes line up so, later passes merge the
  // loads into one vector (dep-1 `fuse(Y.y, Y.x)`, P[f / 112 * 114 + f % 112], through
  // opt -mcpu=haswell or znver3: 9 loads of <8 x float>). Where the target gathers, the
  // vectorizer gathers such a part (znver4 and every AVX-512 part: a udiv per lane and
  // 9 gathers; on the Zen 4 VM 1.6-2.0 ms against 0.26 ms unfused), unless the divisor
  // is a power of two: SCEV reads that quotient as a shift and sees it uniform (Y[f] =
  // X[f] * S[f / 1024]: S loaded once per vector). 0 when a part is of another kind.
  int64_t fused_lanes(const NestAccess& a, int l) const {
    // A parallel loop's body runs from a chunk's first iteration, a value LLVM does
    // not know: it cannot line the lanes up and gathers (fuse(Y.i, Y.j); parallel(Y.f)
    // over Y[f] = X[f] * S[f / 1024]: 16-lane gathers, 33 us against 5.5 serial).
    if (S.loops[size_t(l)].kind == ForKind::kParallel) return 0;
    int64_t g = 0;
    for (const IndexTerm& term : a.index.terms) {
      if (term.loop >= 0 || std::find(term.deps.begin(), term.deps.end(), l) == term.deps.end()) continue;
      if (term.divisor <= 0 || term.deps.size() != 1) return 0;
      if (M.vector_gather && !power_of_two(term.divisor)) return 0;
      g = std::gcd(g, term.divisor);
      const int64_t start = term.offset + S.loops[size_t(l)].min;
      if (start != 0) g = std::gcd(g, start < 0 ? -start : start);
    }
    return g & -g;  // the largest power of two that divides them all
  }
  // Whether `a` takes a remainder by a power of two that wraps around while one
  // thread runs `l`. InstCombine makes the remainder a mask, which SCEV reads as a
  // narrow induction (i10 for % 1024); the vectorizer guards its vector loop with a
  // check that this narrow induction does not wrap, which here always fails: the
  // vector loop it reports is never entered (fuse(Y.i, Y.j) over Y[f] = X[f] *
  // T[f % 1024]: vectorized per its remark, the optimized IR scalar, 24 us against 5.5
  // for the quotient's twin; gmm-4 seed 43 #114, a 4 MB fused loop: 0.37 s run,
  // estimated as vectors close to the i-k-j order's 0.05 s).
  bool remainder_wraps(const NestAccess& a, int l) const {
    const NestLoop& L = S.loops[size_t(l)];
    double run = ext(l);
    if (L.kind == ForKind::kParallel) run = std::ceil(run / threads_of(l));
    for (const IndexTerm& term : a.index.terms) {
      if (term.loop >= 0 || !term.remainder || term.deps.size() != 1 || term.deps[0] != l) continue;
      const int64_t c = term.divisor;
      if (!power_of_two(c)) continue;
      const int64_t first = ((term.offset + L.min) % c + c) % c;
      if (double(first) + run > double(c)) return true;
    }
    return false;
  }
  // How far `a` moves from one of those lanes to the next: its linear coefficient of
  // `l` plus the remainders'.
  static int64_t fused_lane_step(const NestAccess& a, int l) {
    int64_t step = 0;
    for (const IndexTerm& term : a.index.terms)
      if (term.loop == l || (term.loop < 0 && term.remainder && term.deps.size() == 1 && term.deps[0] == l))
        step += term.coeff;
    return step;
  }

  VecAccess vec_access(int l, const NestStore& st, const NestAccess& a) const {
    if (nonaffine_in(a, l)) {  // one address per lane, unless a fused loop's parts line up
      if (fused_lanes(a, l) < 4) return VecAccess::kGather;
      const int64_t s = fused_lane_step(a, l);
      return s == 0 ? VecAccess::kInvariant : s == 1 || s == -1 ? VecAccess::kUnit : VecAccess::kGather;
    }
    const int64_t s = a.index.stride_of(l);
    if (s == 0) return VecAccess::kInvariant;
    if (s == 1 || s == -1) return VecAccess::kUnit;
    // An interleaved group: unrolled copies inside `l` that fill the stride's gaps
    // (one wide load and shuffles).
    const int depth = S.loops[size_t(l)].depth;
    const int64_t as = s < 0 ? -s : s;
    if (as <= 8) {
      for (int u : st.loops) {
        if (S.loops[size_t(u)].depth <= depth || real_[size_t(u)] || vec_ok_[size_t(u)]) continue;
        const int64_t us = a.index.stride_of(u);
        if ((us == 1 || us == -1) && int64_t(ext(u)) >= as) return VecAccess::kInterleaved;
      }
    }
    return VecAccess::kGather;
  }

  // The order in which a store's loops walk memory: its loops outermost first, with
  // the vectorized loop (whose lanes run at once) moved innermost.
  std::vector<int> memory_chain(const NestStore& st) const {
    std::vector<int> chain;
    int vec = -1;
    for (int l : st.loops) {
      if (vec_ok_[size_t(l)]) {
        vec = l;
      } else {
        chain.push_back(l);
      }
    }
    if (vec >= 0) chain.push_back(vec);
    return chain;
  }

  // Lines one iteration of each loop touches, all buffers (accesses to one buffer
  // with the same strides are shifted copies; different strides add up), and the
  // footprint of the whole run.
  void compute_working_sets() {
    const size_t n = S.loops.size();
    ws_lines_.assign(n, 0.0);
    std::vector<std::vector<Entry>> entries(n);
    std::vector<std::vector<Entry>>& whole = lr_whole_;
    whole.assign(n, {});
    std::vector<char> varying(n, 0);
    mchains_.assign(S.stores.size(), {});
    // Loops some access walks through a non-affine index (fused loops' divisions and
    // modulos): such a walk comes back to its lines after many iterations, so it
    // re-uses them only if what the loop touches in between fits (ws_over).
    long_reuse_.assign(n, 0);
    for (const NestStore& st : S.stores)
      for (const NestAccess& a : st.accesses)
        for (const IndexTerm& term : a.index.terms)
          if (term.loop < 0)
            for (int dep : term.deps) long_reuse_[size_t(dep)] = 1;
    auto add = [&](std::vector<Entry>& list, const NestAccess& a, double lines) {
      for (Entry& e : list) {
        if (e.buffer != a.buffer) continue;
        const IndexForm& x = e.access->index;
        const IndexForm& y = a.index;
        bool same = x.terms.size() == y.terms.size();
        for (size_t k = 0; same && k < x.terms.size(); ++k)
          same = x.terms[k].loop == y.terms[k].loop && x.terms[k].coeff == y.terms[k].coeff;
        if (same) {
          e.lines = std::max(e.lines, lines);
          return;
        }
      }
      list.push_back({a.buffer, &a, lines});
    };
    for (size_t si = 0; si < S.stores.size(); ++si) {
      const NestStore& st = S.stores[si];
      mchains_[si] = memory_chain(st);
      const std::vector<int>& chain = mchains_[si];
      std::fill(varying.begin(), varying.end(), 0);
      for (size_t p = chain.size(); p-- > 0;) {
        // varying = the loops inside chain[p] in memory order.
        const int l = chain[p];
        // (With the loops inside chain[p] varying: one iteration of chain[p], and the
        // whole of chain[p + 1].)
        const int inner = p + 1 < chain.size() ? chain[p + 1] : -1;
        for (const NestAccess& a : st.accesses) {
          if (sroa_[size_t(a.buffer)]) continue;
          const double lines = access_footprint(S, a, varying, M.line_bytes).lines;
          add(entries[size_t(l)], a, lines);
          if (inner >= 0 && long_reuse_[size_t(inner)]) add(whole[size_t(inner)], a, lines);
        }
        varying[size_t(l)] = 1;
      }
      if (!chain.empty() && long_reuse_[size_t(chain[0])])
        for (const NestAccess& a : st.accesses)
          if (!sroa_[size_t(a.buffer)])
            add(whole[size_t(chain[0])], a, access_footprint(S, a, varying, M.line_bytes).lines);
    }
    auto total_lines = [&](const std::vector<Entry>& es) {
      double total = 0;
      for (size_t i = 0; i < es.size(); ++i) {
        bool first = true;
        for (size_t j = 0; j < i; ++j) first &= es[j].buffer != es[i].buffer;
        if (!first) continue;
        double lines = 0;
        for (size_t j = i; j < es.size(); ++j)
          if (es[j].buffer == es[i].buffer) lines += es[j].lines;
        total += std::min(lines, buffer_lines(es[i].buffer));
      }
      return total;
    };
    lr_iter_.assign(n, {});
    for (size_t l = 0; l < n; ++l) {
      ws_lines_[l] = total_lines(entries[l]);
      if (long_reuse_[l]) lr_iter_[l] = entries[l];
    }
    // Buffers the run touches (allocations once: a loop reuses the same storage).
    total_lines_ = 0;
    for (size_t b = 0; b < S.buffers.size(); ++b) total_lines_ += buffer_lines(int(b));
  }

  double buffer_lines(int b) const {
    const NestBuffer& buf = S.buffers[size_t(b)];
    return std::ceil(double(buf.elements) * buf.dtype.bytes() * buf.dtype.lanes / M.line_bytes);
  }

  // Whether the lines `fp` describes fit in `c` given its sets: runs a multiple of a
  // way apart land in the same sets.
  bool fits_sets(const Footprint& fp, double elem_bytes, const CacheSpec& c) const {
    if (!c.conflicts || fp.runs <= 1 || fp.run_stride <= 0) return true;
    const double stride_bytes = fp.run_stride * elem_bytes;
    if (std::fmod(stride_bytes, M.line_bytes) != 0) return true;
    const int64_t stride_lines = int64_t(stride_bytes / M.line_bytes);
    const int64_t sets = int64_t(c.sets);
    const int64_t g = gcd64(stride_lines % sets == 0 ? sets : stride_lines % sets, sets);
    const double positions = double(sets / std::max<int64_t>(g, 1));
    const double run_lines = std::max(1.0, std::ceil(fp.run * elem_bytes / M.line_bytes));
    const double used_sets = std::min(c.sets, run_lines * std::min(fp.runs, positions));
    // Spread over every set, it is a question of capacity alone (access_misses).
    return used_sets >= c.sets || fp.lines <= used_sets * c.ways * M.cache_utilization;
  }

  // Lines of `a` missing each cache level over one run. The walk goes from the
  // innermost loop out (in memory order): a loop whose one iteration's working set
  // fits the cache (and whose lines of `a` do not pile into a few sets) re-touches
  // the lines of `a` its previous iterations brought in; one that does not fit
  // fetches them again every iteration. Runs are repeated back to back, so a level
  // that holds everything the run touches has no compulsory misses.
  void access_misses(int si, const NestAccess& a, double misses[3]) const {
    const std::vector<int>& chain = mchains_[size_t(si)];
    const int d = int(chain.size());
    const NestBuffer& b = S.buffers[size_t(a.buffer)];
    const double eb = double(b.dtype.bytes()) * b.dtype.lanes;
    Footprint fps[65];
    const int levels = std::min(d, 64);
    std::vector<char> varying(S.loops.size(), 0);
    fps[levels] = access_footprint(S, a, varying, M.line_bytes);
    for (int k = levels - 1; k >= 0; --k) {
      varying[size_t(chain[size_t(k)])] = 1;
      fps[k] = access_footprint(S, a, varying, M.line_bytes);
    }
    for (int c = 0; c < 3; ++c) {
      double m = 1;
      bool conflict = false, straight = true;
      for (int k = levels - 1; k >= 0; --k) {
        const int l = chain[size_t(k)];
        if (straight && !real_[size_t(l)] && !vec_ok_[size_t(l)]) {
          // An unrolled loop inside the innermost iterating one is straight-line
          // code: its copies are scheduled freely, so it touches each of its lines
          // once (its order is no walk).
          m = fps[k].lines;
          continue;
        }
        straight = false;
        bool sets_ok = fits_sets(fps[k + 1], eb, caches_[c]);
        double ws = ws_lines_[size_t(l)];
        const double step = std::fabs(double(a.index.stride_of(l)));
        if (long_reuse_[size_t(l)] && step > 0 && nonaffine_in(a, l)) {
          // A wrapping walk (a modulo) comes back to its lines only after a cycle of
          // `period` iterations: what the loop touches in between must fit.
          const double period = std::min(ext(l), span_in(a.index, l) / step + 1);
          ws = ws_over(l, period);
          Footprint cycle;
          cycle.run_stride = step;
          cycle.runs = period;
          cycle.lines = 1 + (period - 1) * std::min(1.0, step * eb / M.line_bytes);
          sets_ok = fits_sets(cycle, eb, caches_[c]);
        }
        conflict |= !sets_ok;
        // Past the capacity the share of lines fetched again grows with the overflow
        // (caches are not LRU, and prefetchers refill part of what falls out); lines
        // that pile into a few sets miss outright.
        const double cap = caches_[c].capacity_lines;
        const double span = cap * M.cache_overflow_span;
        const double overflow = !sets_ok    ? 1.0
                                : span <= 0 ? double(ws > cap)
                                            : std::clamp((ws - cap) / span, 0.0, 1.0);
        const double kept = std::min(fps[k].lines, ext(l) * m);
        double refetched = ext(l) * m;
        if (autovec_[size_t(l)] > 0) {
          // LLVM's vector loop runs `vf` iterations at once: what does not stay in
          // the cache comes again once per vector iteration, its lanes' lines together.
          const double vf = autovec_[size_t(l)];
          const double lanes = m * (1 + (vf - 1) * std::min(1.0, step * eb / M.line_bytes));
          refetched = std::ceil(ext(l) / vf) * std::min(fps[k].lines, lanes);
        }
        m = overflow * refetched + (1 - overflow) * kept;
      }
      if (total_lines_ <= caches_[c].capacity_lines) m = std::max(0.0, m - fps[0].lines);
      (void)conflict;
      misses[c] = m;
    }
    misses[1] = std::min(misses[1], misses[0]);
    misses[2] = std::min(misses[2], misses[1]);
  }

  // Address translation misses of `a`, walked like a cache of pages: a loop whose one
  // iteration touches no more pages of `a` than a TLB level holds re-uses them across
  // iterations; otherwise every iteration looks its pages up again.
  double tlb_cycles(int si, const NestAccess& a) const {
    const std::vector<int>& chain = mchains_[size_t(si)];
    const int levels = std::min(int(chain.size()), 64);
    // Only walks that step a page or more per iteration somewhere can miss.
    bool large = false;
    const NestBuffer& b = S.buffers[size_t(a.buffer)];
    for (int l : chain) large |= std::fabs(double(a.index.stride_of(l))) * b.dtype.bytes() >= M.page_bytes;
    if (!large) return 0;
    double pages[65];
    std::vector<char> varying(S.loops.size(), 0);
    pages[levels] = 1;
    for (int k = levels - 1; k >= 0; --k) {
      varying[size_t(chain[size_t(k)])] = 1;
      pages[k] = access_footprint(S, a, varying, M.page_bytes).lines;
    }
    double cycles = 0;
    for (int level = 0; level < 2; ++level) {
      const double entries = level == 0 ? M.dtlb_entries : M.stlb_entries;
      double m = 1;
      for (int k = levels - 1; k >= 0; --k) {
        // A set-associative TLB does not fall off a cliff: the share of lookups that
        // miss grows with how far the iteration's pages overflow it.
        const double e = ext(chain[size_t(k)]);
        const double overflow = std::clamp((pages[k + 1] - entries) / entries, 0.0, 1.0);
        m = overflow * e * m + (1 - overflow) * std::min(pages[k], e * m);
      }
      // Compulsory lookups of a walk that fits are not misses in steady state.
      if (pages[0] <= entries) m = 0;
      cycles += m * (level == 0 ? M.dtlb_miss_cycles : M.stlb_miss_cycles);
    }
    return cycles;
  }

  // Whether the hardware prefetchers follow `a`: its innermost loop, or its innermost
  // iterating loop, walks memory in steps they track (within a page, at most 2 KiB
  // apart). Unrolled and vector loops inside the iterating loop do not iterate: each
  // of their copies is its own load instruction, stepping with the iterating loop (a
  // channel loop of stride 784 KiB unrolled inside a vectorized pixel loop is 64
  // unit-stride streams).
  //
  // The share of its lines they bring in time: all of them where the walk runs on in
  // memory for at least `prefetch_run_bytes`, its outer loops continuing where the
  // inner ones stop; less for shorter runs, each of whose first lines is a demand miss
  // (c2d-2 `reorder(Y, r, s, f, x); rfactor(Y.c)`: the 64 channels' partial sums read
  // in runs of 56 floats, 12.5 KiB apart, 13.7 ms; in the order f, y, x one run of
  // 12.5 KiB a channel, 6.6 ms).
  double prefetched(int si, const NestAccess& a) const {
    const std::vector<int>& chain = mchains_[size_t(si)];
    const NestBuffer& b = S.buffers[size_t(a.buffer)];
    const double bytes = b.dtype.bytes();
    auto step = [&](int l) { return std::fabs(double(a.index.stride_of(l))) * bytes; };
    auto near = [&](int l) { return step(l) <= 2048; };
    bool innermost = true;
    for (size_t k = chain.size(); k-- > 0;) {
      const int l = chain[k];
      if (!a.index.depends_on(l)) continue;
      if ((innermost || real_[size_t(l)]) && near(l)) {
        // The run of one load instruction: the walk of the innermost iterating loop
        // it moves with (each unrolled or vector copy inside is its own instruction),
        // and of each enclosing loop that steps by exactly that much (loops the
        // access does not move with repeat it).
        size_t at = k;
        while (!real_[size_t(chain[at])] || !a.index.depends_on(chain[at]))
          if (at-- == 0) return 1;  // no iterating loop: straight-line copies
        double run = std::max(step(chain[at]), bytes) * ext(chain[at]);
        for (size_t o = at; o-- > 0;) {
          const int u = chain[o];
          if (!a.index.depends_on(u)) continue;
          if (std::fabs(step(u) - run) > 0.5) break;
          run *= ext(u);
        }
        return std::min(1.0, run / std::max(M.prefetch_run_bytes, 1.0));
      }
      if (real_[size_t(l)]) return 0;
      innermost = false;
    }
    return innermost ? 1 : 0;
  }

  // Whether the store's target lives in a register across iterations of `r` (LLVM
  // promotes a location every access of which in the loop is invariant).
  bool promoted(const NestStore& st, int r, const std::vector<int>& region) const {
    if (r < 0 || st.accesses[0].index.depends_on(r)) return false;
    for (int si : region) {
      for (const NestAccess& a : S.stores[size_t(si)].accesses)
        if (a.buffer == st.buffer && a.index.depends_on(r)) return false;
    }
    return true;
  }

  // Whether a non-affine index term reads a loop deeper than `depth` (one that moves
  // within an iteration of the region at that depth; every loop for the top level).
  bool moves_within(const IndexTerm& term, int depth) const {
    if (depth < 0) return true;
    for (int dep : term.deps)
      if (S.loops[size_t(dep)].depth >= depth) return true;
    return false;
  }

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

  // Whether `a` takes one address per lane of vector loop `vl` (a gather or scatter):
  // it moves with the loop, but not by one element.
  bool per_lane(const NestAccess& a, int vl) const {
    if (vl < 0) return false;
    if (nonaffine_in(a, vl)) return true;
    const int64_t s = a.index.stride_of(vl);
    return s != 0 && s != 1 && s != -1;
  }

  // Instructions per unrolled copy of a store once the SLP vectorizer has packed the
  // copies of its innermost unrolled unit-stride loop (1 when nothing packs).
  double slp_factor(const NestStore& st, int r_depth) const {
    const DataType t = S.buffers[size_t(st.buffer)].dtype;
    if (sroa_[size_t(st.buffer)]) return 1;
    ValueOps ops;
    count_value(st.node->value, &ops);
    if (ops.calls > 0) return 1;
    for (size_t k = st.loops.size(); k-- > 0;) {
      const int l = st.loops[k];
      if (S.loops[size_t(l)].depth <= r_depth) break;
      if (real_[size_t(l)] || vec_ok_[size_t(l)] || ext(l) < 2) continue;
      const int64_t ws = st.accesses[0].index.stride_of(l);
      if (ws != 1 && ws != -1) continue;
      bool ok = true;
      for (const NestAccess& a : st.accesses) {
        if (sroa_[size_t(a.buffer)]) continue;
        const int64_t s = a.index.stride_of(l);
        ok &= s == 0 || s == 1 || s == -1;
        if (nonaffine_in(a, l)) ok = false;
      }
      if (!ok) continue;
      const double lanes = double(lanes_per_vector(t, M.auto_vector_bits));
      return ceil_div(ext(l), lanes) / ext(l);
    }
    return 1;
  }

  Demand region_demand(int r, const std::vector<int>& stores, bool autovec) const {
    Demand d;
    const int r_depth = r >= 0 ? S.loops[size_t(r)].depth : -1;
    for (int si : stores) {
      const NestStore& st = S.stores[size_t(si)];
      const DataType t = S.buffers[size_t(st.buffer)].dtype;
      const IndexForm& target = st.accesses[0].index;
      // Instances per region iteration (unrolled copies; the vector loop counts once),
      // and how many of them update one location one after the other (unrolled
      // reduction loops).
      double k = 1, steps = 1;
      for (int l : st.loops) {
        if (S.loops[size_t(l)].depth <= r_depth || vec_ok_[size_t(l)]) continue;
        k *= ext(l);
        if (!target.depends_on(l)) steps *= ext(l);
      }
      const int vl = vec_of_[size_t(si)];
      const double lanes = vl >= 0 ? ext(vl) : 1;
      const double v = vl >= 0 ? ceil_div(lanes, lanes_per_vector(t, M.vector_bits)) : 1;
      bool masked = false;
      if (vl >= 0) masked = std::find(st.guard_loops.begin(), st.guard_loops.end(), vl) != st.guard_loops.end();
      // LLVM's SLP vectorizer packs the unrolled copies of a unit-stride store (and
      // its unit-stride or invariant loads) into vector instructions.
      const double slp = vl < 0 && !autovec ? slp_factor(st, r_depth) : 1.0;
      const double avf = autovec ? double(autovec_[size_t(r)]) : 0.0;
      // The share of the copies whose guard LLVM's vector loop keeps, as masks.
      const double ms = autovec ? masked_share(r, st) : 0.0;
      const double kk = k * (masked || ms > 0 ? 1.0 : fraction_within(st, r)) * slp;
      // A load on one side of a select (a padding test inlined into the value), in a
      // loop LLVM vectorizes: it cannot be speculated, so it is a masked load (a masked
      // gather when not contiguous). Where LLVM split the select into two versions of
      // an inner loop first (`arms_split_inside`), the value's other loads run in both,
      // under the clause's masks, as masked gathers even of one address (the optimized
      // IR of dep-1 with its padding inlined: 9 masked loads and 18 gathers for 9 taps;
      // measured 1.3 ms, estimated 0.6 ms without this).
      bool conditional_value = false, arms_split = false;
      if (autovec && !select_test_unswitched(st, r, vl))
        for (const NestAccess& a : st.accesses) {
          if (a.kind == AccessKind::kRead && a.fraction < 1) {
            conditional_value = true;
            arms_split |= arms_split_inside(st, r);
          }
          // The same through a register written just before, copy by copy (a padding
          // stage computed per tap, inside the taps' loops): SROA makes it one value.
          // (A tile computed whole before the taps read it is not: its selects stay
          // in its own copies; dep-1 seed 13: 19 gathers in the first, none in the second.)
          if (a.kind == AccessKind::kRead && sroa_[size_t(a.buffer)] && conditional_producer(a.buffer, st, r))
            conditional_value = arms_split = true;
        }
      // Integer and boolean parts that read neither the region's loop nor the
      // store's vector loop are computed outside the region (per unrolled copy, they
      // read only constants and outer loops).
      const IsInvariant invariant = [&](const Expr& x) { return !moves_in_region(x, st, r, vl); };
      ValueOps ops;
      count_value(st.node->value, &ops, &invariant);
      if (!autovec && vl < 0 && r >= 0 && range_test_is_switch(st, r)) {
        // The range test is a switch: a compare and a branch in place of its clauses.
        visit_exprs(st.node->value, [&](const Expr& e) {
          const Select* sel = e.as<Select>();
          if (!sel) return;
          ValueOps test;
          count_value(sel->condition, &test, &invariant);
          ops.fp -= test.fp;
          ops.alu += 2 - test.alu;
        });
      }
      d.fp += kk * v * ops.fp;
      d.divide += kk * v * ops.div * M.divide_cycles;
      d.calls += kk * lanes * ops.calls * M.math_call_cycles;
      d.alu += kk * v * ops.alu;
      if (masked) d.alu += kk * v * 2;
      if (guard_tested_in(st, r)) d.alu += k * slp;

      bool self_read = false;
      for (size_t ai = 1; ai < st.accesses.size(); ++ai) self_read |= at_target(st, st.accesses[ai]);
      const bool scattered = per_lane(st.accesses[0], vl);
      // Loop-carried accumulation: the target does not move with the region's loop.
      const bool carried = self_read && r >= 0 && !target.depends_on(r) && !autovec;
      // A vector accumulator under a kept tail guard is a masked load and store: LICM
      // does not promote masked accesses, and a load waits for the masked store before
      // it to commit (no forwarding), every iteration of the region's loop.
      const bool masked_chain = carried && masked && !scattered;
      const bool prom = carried && !scattered && !masked_chain && promoted(st, r, stores);
      // The same where LLVM folded the region's tail into masked vectors: the next
      // update, in the next iteration of a reduction loop around the region, loads
      // what a masked store wrote, and waits for it to commit while it is still in
      // the store buffer, one vector after the other (c2d-2 seed 45 #149: 3 lanes of
      // 4 masked, 19 vectors an update, about 26 cycles a vector: 30 ms).
      if (autovec && autovec_folded_[size_t(r)] && self_read && !scattered && reread_from_store_buffer(st, r))
        d.chain_latency = std::max(d.chain_latency, kk * v * M.store_forward_stall_cycles);

      // Address arithmetic that does not fold: divisions and modulos of fused loops,
      // those that move within the region's iteration (LICM hoists the others: a
      // fused pixel loop's `f / 56` around a channel loop is computed once per pixel).
      // Each distinct part once (the update's read and write share their address, and
      // CSE one quotient between two buffers); by a power of two it is a shift or a
      // mask, by another constant a multiply, a shift and a correction (gmm-4 seed 43
      // #140: C[f / 1024 * 8192 + f % 1024] read and written, f / 1024 in A and f %
      // 1024 in B: about five operations an iteration in the optimized IR, not 18).
      std::vector<const IndexTerm*> parts;
      for (const NestAccess& a : st.accesses)
        for (const IndexTerm& term : a.index.terms) {
          if (term.loop >= 0 || !moves_within(term, r_depth)) continue;
          if (std::any_of(parts.begin(), parts.end(), [&](const IndexTerm* p) { return same_part(*p, term); }))
            continue;
          parts.push_back(&term);
          d.alu += kk * v * (power_of_two(term.divisor) ? 1 : 3);
        }
      for (size_t ai = 0; ai < st.accesses.size(); ++ai) {
        const NestAccess& a = st.accesses[ai];
        const bool write = a.kind == AccessKind::kWrite;
        const bool accumulator = at_target(st, a);
        if (prom && accumulator) continue;      // kept in a register across the loop
        if (sroa_[size_t(a.buffer)]) continue;  // a register
        const VecAccess ak = autovec ? vec_access(r, st, a) : VecAccess::kUnit;
        const bool agather = autovec && ak == VecAccess::kGather;
        // Under a kept guard a contiguous access is a masked load or store; any
        // other (strided, interleaved, even invariant) a masked gather or scatter.
        double masked_cost = 0;
        if (ms > 0) {
          masked_cost = ak == VecAccess::kUnit ? M.masked_access_factor : avf * lane_cycles(write);
          if (ak != VecAccess::kUnit) d.alu += kk * ms * 2;
          if (accumulator && self_read && steps > 1) masked_cost /= steps;
          if (!write && !accumulator) masked_cost /= same_address_copies(st, a, r_depth);
        }
        if (conditional_value && !write && !accumulator && (a.fraction < 1 || arms_split)) {
          const bool masked_load = a.fraction < 1 && ak == VecAccess::kUnit;
          const double each = masked_load ? M.masked_access_factor : avf * M.gather_lane_cycles;
          add_access(&d, false, !masked_load, kk * each / same_address_copies(st, a, r_depth));
          d.alu += kk;  // the mask
          continue;
        }
        if (!write && r >= 0 && !a.index.depends_on(r) && !agather) {
          bool stored = false;
          for (int sj : stores) stored |= S.stores[size_t(sj)].buffer == a.buffer;
          if (!stored) {
            d.hoisted += kk * v * (1 - ms);
            add_access(&d, false, ak != VecAccess::kUnit, kk * ms * masked_cost);
            continue;
          }
        }
        const double frac = vl >= 0 ? 1.0 : a.fraction;
        double cost;
        const bool indexed = per_lane(a, vl) || agather;
        if (per_lane(a, vl)) {
          cost = lanes * lane_cycles(write);  // gather / scatter
          d.alu += kk * lanes;
        } else if (agather) {
          cost = avf * lane_cycles(write);  // LLVM's gather / scatter
          d.alu += kk * 2;                                      // the lanes' addresses
        } else if (autovec && ak == VecAccess::kInterleaved) {
          cost = 1;
          d.alu += kk * 2;  // the shuffles of an interleaved group
        } else if (vl >= 0 && a.index.stride_of(vl) == 0) {
          cost = 1;  // broadcast
        } else {
          cost = v;
        }
        if (masked) cost *= M.masked_access_factor;
        // Straight-line updates of one location keep it in a register in between,
        // unless each lane is its own address: LLVM forwards nothing through a gather
        // or scatter, so every unrolled copy gathers and scatters it again.
        if (accumulator && self_read && steps > 1 && !per_lane(a, vl)) cost /= steps;
        // Unrolled copies that load the same address load it once (GVN).
        if (!write && !accumulator) cost /= same_address_copies(st, a, r_depth);
        add_access(&d, write, indexed, kk * frac * (1 - ms) * cost);
        add_access(&d, write, ak != VecAccess::kUnit, kk * frac * ms * masked_cost);
      }
      if (vl >= 0 && r >= 0 && self_read && !scattered) {
        // The vector this iteration stores is read back, shifted by less than its
        // width, by the next one (a masked tail walked in steps of its lanes): the
        // load cannot take its data from the store buffer and waits until the store
        // has committed. The width is what the store covers: its lanes, rounded up
        // to the power of two LLVM widens them to (5 lanes: a masked 8-lane store),
        // at most the machine's vectors. 4 lanes stored and the next 4 read are
        // neighbours, not overlapping (gmm-4 seed 41 #189, vectorize of a 4-lane
        // split: estimated 2.0 s with the whole 512-bit register, run in 96 ms).
        const double element = double(t.bytes()) * double(t.lanes);
        const double width =
            std::min(v * double(M.vector_bits / 8), double(std::bit_ceil(uint64_t(std::max(lanes, 1.0)))) * element);
        const double step = std::fabs(double(target.stride_of(r))) * element;
        if (step > 0 && step < width) d.chain_latency = std::max(d.chain_latency, M.store_forward_stall_cycles);
      }
      if (carried) {
        // Every iteration waits for the last: `steps` dependent updates per chain.
        // (The multiply of acc + a * b is off the chain: the chain is the add.)
        const double step = prom           ? M.fp_add_latency
                            : scattered    ? M.fp_add_latency + 10 + lanes * (M.gather_lane_cycles + M.scatter_lane_cycles)
                            : masked_chain ? M.fp_add_latency + M.store_forward_stall_cycles
                                           : M.fp_add_latency + 5;
        d.chain_latency = std::max(d.chain_latency, steps * step);
        d.chains += kk * v / steps;
      } else if (self_read && steps > 1) {
        // Dependent updates inside one iteration; later iterations overlap a little.
        d.inner_chain = std::max(d.inner_chain, steps * M.fp_add_latency);
      }
    }
    return d;
  }

  // Whether the next update of `st`'s target, in the next iteration of the innermost
  // reduction loop around vector region `r` (one the target does not move with),
  // comes while the store is still in the store buffer: fewer stores in between than
  // it holds.
  bool reread_from_store_buffer(const NestStore& st, int r) const {
    const IndexForm& target = st.accesses[0].index;
    const int r_depth = S.loops[size_t(r)].depth;
    int q = -1;
    for (int l : st.loops)
      if (S.loops[size_t(l)].depth < r_depth && !target.depends_on(l)) q = l;
    if (q < 0) return false;
    double between = 1;  // stores of one iteration of `q`
    for (int l : st.loops) {
      if (S.loops[size_t(l)].depth <= S.loops[size_t(q)].depth) continue;
      between *= l == r               ? std::ceil(ext(l) / std::max(1.0, double(autovec_[size_t(l)])))
                 : vec_ok_[size_t(l)] ? 1.0
                                      : ext(l);
    }
    return between < M.store_buffer_entries;
  }

  // One lane of a vector gather (a read) or scatter (a write).
  double lane_cycles(bool write) const { return write ? M.scatter_lane_cycles : M.gather_lane_cycles; }

  // Cycles of loads or stores: a gather's or scatter's (`indexed`) on their own
  // resource where the machine runs them one at a time, else on the ports.
  void add_access(Demand* d, bool write, bool indexed, double cycles) const {
    if (indexed && M.indexed_accesses_serialize) {
      d->indexed += cycles;
    } else if (write) {
      d->stores += cycles;
    } else {
      d->loads += cycles;
    }
  }

  double latency_bound(const Demand& d) const {
    double latency = d.chain_latency;
    if (d.inner_chain > 0)
      latency = std::max(latency, d.inner_chain / std::max(1.0, M.scheduler_window / std::max(d.fp, 1.0)));
    return latency;
  }

  double demand_cycles(const Demand& d, bool loop_overhead) const {
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
    const double c = std::max(
        {d.fp / M.fma_units, loads / M.load_ports, stores / M.store_ports, d.indexed, uops / M.issue_width, d.divide, latency});
    return c + d.calls;
  }

  double region_compute(int r, const std::vector<int>& stores, CostBreakdown& out) {
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
};

}  // namespace

namespace {

// The machine with every rate, size and count the model divides by kept positive, so
// that a hand-edited machine cannot produce infinities or NaNs.
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

}  // namespace

CostBreakdown estimate_cost(const LoopNest& nest, const MachineModel& given) {
  const MachineModel machine = sanitized(given);
  const NestSummary summary = summarize_nest(nest);
  return Model(summary, machine).run();
}

double est_cycles(const LoopNest& nest, const MachineModel& machine) {
  return estimate_cost(nest, machine).total_cycles;
}

std::string CostBreakdown::to_string() const {
  std::string s;
  char buf[512];
  std::snprintf(buf, sizeof buf, "total %.4g cycles (compute %.4g, memory %.4g, overhead %.4g)\n", total_cycles,
                compute_cycles, memory_cycles, overhead_cycles);
  s += buf;
  s += "stores:\n";
  for (const StoreCost& c : stores) {
    std::snprintf(buf, sizeof buf,
                  "  %-16s instances %-10.4g compute %-10.4g memory %-10.4g (tlb %-9.3g) misses L1 %-9.3g L2 %-9.3g "
                  "L3 %-9.3g %s\n",
                  c.buffer.c_str(), c.instances, c.compute_cycles, c.memory_cycles, c.tlb_cycles, c.l1_misses,
                  c.l2_misses, c.l3_misses, c.bound);
    s += buf;
  }
  s += "loops:\n";
  for (const LoopCost& l : loops) {
    std::snprintf(buf, sizeof buf, "  %*s%s %s[%lld] x%.4g  ws %.4g B (fits %s)%s  %.4g cycles\n", 2 * l.depth, "",
                  for_kind_name(l.kind), l.loop.c_str(), (long long)l.extent, l.executions, l.working_set_bytes,
                  l.fits == 1   ? "L1"
                  : l.fits == 2 ? "L2"
                  : l.fits == 3 ? "L3"
                                : "-",
                  l.gathers ? " vec(gathers)" : l.vectorized ? " vec" : "", l.cycles);
    s += buf;
  }
  return s;
}

}  // namespace tensorgym
