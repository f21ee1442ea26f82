// Compute: what one iteration of a region's straight-line code asks of the core (FP
// pipes, load and store ports, issue width, divider, library calls) and the latency
// of its dependence chains, given what the code generator made of it.
#include "codegen/analysis/cost_model_internal.h"
#include "codegen/ir/ir_visitor.h"
#include "codegen/lower/strided_loads.h"

namespace tensorgym {
namespace cost_model_internal {

Demand Model::region_demand(int r, const std::vector<int>& stores, bool autovec) const {
  Demand d;
  for (int si : stores) {
    const RegionStore rs = region_store(r, si, stores, autovec);
    add_value_demand(&d, rs);
    add_access_demands(&d, rs, stores);
    add_chain_demand(&d, rs);
  }
  return d;
}

// Store `si` as region `r`'s code runs it: its copies and vectors per iteration, what
// LLVM's vectorizers make of it, and how its accumulation chains.
Model::RegionStore Model::region_store(int r, int si, const std::vector<int>& stores, bool autovec) const {
  RegionStore rs{S.stores[size_t(si)]};
  const NestStore& st = rs.st;
  rs.r = r;
  rs.r_depth = r >= 0 ? S.loops[size_t(r)].depth : -1;
  rs.autovec = autovec;
  rs.t = S.buffers[size_t(st.buffer)].dtype;
  const IndexForm& target = st.accesses[0].index;
  // Instances per region iteration (unrolled copies; the vector loop counts once),
  // and how many of them update one location one after the other (unrolled
  // reduction loops).
  for (int l : st.loops) {
    if (S.loops[size_t(l)].depth <= rs.r_depth || vec_ok_[size_t(l)]) continue;
    rs.k *= ext(l);
    if (!target.depends_on(l)) rs.steps *= ext(l);
  }
  rs.vl = vec_of_[size_t(si)];
  rs.lanes = rs.vl >= 0 ? ext(rs.vl) : 1;
  rs.v = rs.vl >= 0 ? ceil_div(rs.lanes, lanes_per_vector(rs.t, M.vector_bits)) : 1;
  if (rs.vl >= 0) rs.masked = std::find(st.guard_loops.begin(), st.guard_loops.end(), rs.vl) != st.guard_loops.end();
  // LLVM's SLP vectorizer packs the unrolled copies of a unit-stride store (and its
  // unit-stride or invariant loads) into vector instructions.
  rs.slp = rs.vl < 0 && !autovec ? slp_factor(st, rs.r_depth) : 1.0;
  rs.avf = autovec ? double(autovec_[size_t(r)]) : 0.0;
  // The share of the copies whose guard LLVM's vector loop keeps, as masks.
  rs.ms = autovec ? masked_share(r, st) : 0.0;
  rs.kk = rs.k * (rs.masked || rs.ms > 0 ? 1.0 : fraction_within(st, r)) * rs.slp;
  // A load on one side of a select (a padding test inlined into the value), in a loop
  // LLVM vectorizes: it cannot be speculated, so it is a masked load (a masked gather
  // when not contiguous). Where LLVM split the select into two versions of an inner
  // loop first (`arms_split_inside`), the value's other loads run in both, under the
  // clause's masks, as masked gathers even of one address.
  if (autovec && !select_test_unswitched(st, r, rs.vl))
    for (const NestAccess& a : st.accesses) {
      if (a.kind == AccessKind::kRead && a.fraction < 1) {
        rs.conditional_value = true;
        rs.arms_split |= arms_split_inside(st, r);
      }
      // The same through a register written just before, copy by copy (a padding
      // stage computed per tap, inside the taps' loops): SROA makes it one value. (A
      // tile computed whole before the taps read it is not: its selects stay in its
      // own copies.)
      if (a.kind == AccessKind::kRead && sroa_[size_t(a.buffer)] && conditional_producer(a.buffer, st, r))
        rs.conditional_value = rs.arms_split = true;
    }
  for (size_t ai = 1; ai < st.accesses.size(); ++ai) rs.self_read |= at_target(st, st.accesses[ai]);
  rs.scattered = per_lane(st.accesses[0], rs.vl);
  // Loop-carried accumulation: the target does not move with the region's loop.
  rs.carried = rs.self_read && r >= 0 && !target.depends_on(r) && !autovec;
  // A vector accumulator under a kept tail guard is a masked load and store: LICM does
  // not promote masked accesses, and a load waits for the masked store before it to
  // commit (no forwarding), every iteration of the region's loop.
  rs.masked_chain = rs.carried && rs.masked && !rs.scattered;
  rs.prom = rs.carried && !rs.scattered && !rs.masked_chain && promoted(st, r, stores);
  return rs;
}

// The operations of the store's value, and the address arithmetic that does not fold.
void Model::add_value_demand(Demand* d, const RegionStore& rs) const {
  const NestStore& st = rs.st;
  const int r = rs.r;
  // Integer and boolean parts that read neither the region's loop nor the store's
  // vector loop are computed outside the region (per unrolled copy, they read only
  // constants and outer loops). The backend's vector loop is ramps from constant
  // bases (vectorize_loops.cc), so a part that reads it besides those is a constant
  // vector combined with them, folded or hoisted as well (a fused pixel loop's
  // `i / 7 + r >= 1` in a padding test).
  const int moving_vl = rs.autovec ? rs.vl : -1;
  const IsInvariant invariant = [&](const Expr& x) { return !moves_in_region(x, st, r, moving_vl); };
  ValueOps ops;
  count_value(st.node->value, &ops, &invariant);
  if (!rs.autovec && rs.vl < 0 && r >= 0 && range_test_is_switch(st, r)) {
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
  d->fp += rs.kk * rs.v * ops.fp;
  d->divide += rs.kk * rs.v * ops.div * M.divide_cycles;
  d->calls += rs.kk * rs.lanes * ops.calls * M.math_call_cycles;
  d->alu += rs.kk * rs.v * ops.alu;
  if (rs.masked) d->alu += rs.kk * rs.v * 2;
  if (guard_tested_in(st, r)) d->alu += rs.k * rs.slp;
  // Divisions and modulos of fused loops, those that move within the region's
  // iteration (LICM hoists the others: a fused pixel loop's `f / 56` around a channel
  // loop is computed once per pixel). Each distinct part once (the update's read and
  // write share their address, and CSE one quotient between two buffers); by a power
  // of two it is a shift or a mask, by another constant a multiply, a shift and a
  // correction.
  std::vector<const IndexTerm*> parts;
  for (const NestAccess& a : st.accesses)
    for (const IndexTerm& term : a.index.terms) {
      if (term.loop >= 0 || !moves_within(term, rs.r_depth)) continue;
      if (std::any_of(parts.begin(), parts.end(), [&](const IndexTerm* p) { return same_part(*p, term); })) continue;
      parts.push_back(&term);
      d->alu += rs.kk * rs.v * (power_of_two(term.divisor) ? 1 : 3);
    }
}

// The store's loads and stores on the ports (or the gather sequencer).
void Model::add_access_demands(Demand* d, const RegionStore& rs, const std::vector<int>& stores) const {
  const NestStore& st = rs.st;
  const int r = rs.r, vl = rs.vl;
  const double kk = rs.kk, ms = rs.ms, avf = rs.avf;
  for (size_t ai = 0; ai < st.accesses.size(); ++ai) {
    const NestAccess& a = st.accesses[ai];
    const bool write = a.kind == AccessKind::kWrite;
    const bool accumulator = at_target(st, a);
    if (rs.prom && accumulator) continue;   // kept in a register across the loop
    if (sroa_[size_t(a.buffer)]) continue;  // a register
    const VecAccess ak = rs.autovec ? vec_access(r, st, a) : VecAccess::kUnit;
    const bool agather = rs.autovec && ak == VecAccess::kGather;
    // Under a kept guard a contiguous access is a masked load or store; any other
    // (strided, interleaved, even invariant) a masked gather or scatter.
    double masked_cost = 0;
    if (ms > 0) {
      masked_cost = ak == VecAccess::kUnit ? M.masked_access_factor : avf * lane_cycles(write);
      if (ak != VecAccess::kUnit) d->alu += kk * ms * 2;
      if (accumulator && rs.self_read && rs.steps > 1) masked_cost /= rs.steps;
      if (!write && !accumulator) masked_cost /= same_address_copies(st, a, rs.r_depth);
    }
    if (rs.conditional_value && !write && !accumulator && (a.fraction < 1 || rs.arms_split)) {
      const bool masked_load = a.fraction < 1 && ak == VecAccess::kUnit;
      const double each = masked_load ? M.masked_access_factor : avf * M.gather_lane_cycles;
      add_access(d, false, !masked_load, kk * each / same_address_copies(st, a, rs.r_depth));
      d->alu += kk;  // the mask
      continue;
    }
    if (!write && r >= 0 && !a.index.depends_on(r) && !agather) {
      bool stored = false;
      for (int sj : stores) stored |= S.stores[size_t(sj)].buffer == a.buffer;
      if (!stored) {
        d->hoisted += kk * rs.v * (1 - ms);
        add_access(d, false, ak != VecAccess::kUnit, kk * ms * masked_cost);
        continue;
      }
    }
    const double frac = vl >= 0 ? 1.0 : a.fraction;
    double cost;
    const bool indexed = per_lane(a, vl) || agather;
    if (per_lane(a, vl)) {
      cost = rs.lanes * lane_cycles(write);  // gather / scatter
      d->alu += kk * rs.lanes;
    } else if (agather) {
      cost = avf * lane_cycles(write);  // LLVM's gather / scatter
      d->alu += kk * 2;                 // the lanes' addresses
    } else if (const int64_t span = strided_span(a, vl)) {
      cost = rs.v * double(span);           // the span's vectors
      d->alu += kk * rs.v * double(span - 1);  // the permutes that pick the lanes
    } else if (rs.autovec && ak == VecAccess::kInterleaved) {
      cost = 1;
      d->alu += kk * 2;  // the shuffles of an interleaved group
    } else if (vl >= 0 && a.index.stride_of(vl) == 0) {
      cost = 1;  // broadcast
    } else {
      cost = rs.v;
    }
    if (rs.masked) cost *= M.masked_access_factor;
    // Straight-line updates of one location keep it in a register in between, unless
    // each lane is its own address: LLVM forwards nothing through a gather or scatter,
    // so every unrolled copy gathers and scatters it again.
    if (accumulator && rs.self_read && rs.steps > 1 && !per_lane(a, vl)) cost /= rs.steps;
    // Unrolled copies that load the same address load it once (GVN).
    if (!write && !accumulator) cost /= same_address_copies(st, a, rs.r_depth);
    add_access(d, write, indexed, kk * frac * (1 - ms) * cost);
    add_access(d, write, ak != VecAccess::kUnit, kk * frac * ms * masked_cost);
  }
}

// The latency of the store's dependence chains: loop-carried accumulations, unrolled
// reductions inside one iteration, and stores read back before they commit.
void Model::add_chain_demand(Demand* d, const RegionStore& rs) const {
  const NestStore& st = rs.st;
  const int r = rs.r;
  // Where LLVM folded the region's tail into masked vectors, the next update, in the
  // next iteration of a reduction loop around the region, loads what a masked store
  // wrote, and waits for it to commit while it is still in the store buffer, one
  // vector after the other.
  if (rs.autovec && autovec_folded_[size_t(r)] && rs.self_read && !rs.scattered && reread_from_store_buffer(st, r))
    d->chain_latency = std::max(d->chain_latency, rs.kk * rs.v * M.store_forward_stall_cycles);
  if (rs.vl >= 0 && r >= 0 && rs.self_read && !rs.scattered) {
    // The vector this iteration stores is read back, shifted by less than its width,
    // by the next one (a masked tail walked in steps of its lanes): the load cannot
    // take its data from the store buffer and waits until the store has committed.
    // The width is what the store covers: its lanes, rounded up to the power of two
    // LLVM widens them to (5 lanes: a masked 8-lane store), at most the machine's
    // vectors: 4 lanes stored and the next 4 read are neighbours, not overlapping.
    const double element = double(rs.t.bytes()) * double(rs.t.lanes);
    const double width =
        std::min(rs.v * double(M.vector_bits / 8), double(std::bit_ceil(uint64_t(std::max(rs.lanes, 1.0)))) * element);
    const double step = std::fabs(double(st.accesses[0].index.stride_of(r))) * element;
    if (step > 0 && step < width) d->chain_latency = std::max(d->chain_latency, M.store_forward_stall_cycles);
  }
  if (rs.carried) {
    // Every iteration waits for the last: `steps` dependent updates per chain. (The
    // multiply of acc + a * b is off the chain: the chain is the add.)
    const double step = rs.prom ? M.fp_add_latency
                        : rs.scattered
                            ? M.fp_add_latency + 10 + rs.lanes * (M.gather_lane_cycles + M.scatter_lane_cycles)
                        : rs.masked_chain ? M.fp_add_latency + M.store_forward_stall_cycles
                                          : M.fp_add_latency + 5;
    d->chain_latency = std::max(d->chain_latency, rs.steps * step);
    d->chains += rs.kk * rs.v / rs.steps;
  } else if (rs.self_read && rs.steps > 1) {
    // Dependent updates inside one iteration; later iterations overlap a little.
    d->inner_chain = std::max(d->inner_chain, rs.steps * M.fp_add_latency);
  }
}

// Whether the next update of `st`'s target, in the next iteration of the innermost
// reduction loop around vector region `r` (one the target does not move with),
// comes while the store is still in the store buffer: fewer stores in between than
// it holds.
bool Model::reread_from_store_buffer(const NestStore& st, int r) const {
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

// Cycles of loads or stores: a gather's or scatter's (`indexed`) on their own
// resource where the machine runs them one at a time, else on the ports.
void Model::add_access(Demand* d, bool write, bool indexed, double cycles) const {
  if (indexed && M.indexed_accesses_serialize) {
    d->indexed += cycles;
  } else if (write) {
    d->stores += cycles;
  } else {
    d->loads += cycles;
  }
}

// Whether the store's target lives in a register across iterations of `r` (LLVM
// promotes a location every access of which in the loop is invariant).
bool Model::promoted(const NestStore& st, int r, const std::vector<int>& region) const {
  if (r < 0 || st.accesses[0].index.depends_on(r)) return false;
  for (int si : region) {
    for (const NestAccess& a : S.stores[size_t(si)].accesses)
      if (a.buffer == st.buffer && a.index.depends_on(r)) return false;
  }
  return true;
}

// Whether a non-affine index term reads a loop deeper than `depth` (one that moves
// within an iteration of the region at that depth; every loop for the top level).
bool Model::moves_within(const IndexTerm& term, int depth) const {
  if (depth < 0) return true;
  for (int dep : term.deps)
    if (S.loops[size_t(dep)].depth >= depth) return true;
  return false;
}

// How many of the straight-line copies of `st` inside a region at depth `r_depth`
// (its unrolled loops) read the same address through `a`.
double Model::same_address_copies(const NestStore& st, const NestAccess& a, int r_depth) const {
  double n = 1;
  for (int u : st.loops)
    if (S.loops[size_t(u)].depth > r_depth && !vec_ok_[size_t(u)] && !a.index.depends_on(u)) n *= ext(u);
  return n;
}

// Whether `a` takes one address per lane of vector loop `vl` (a gather or scatter):
// it moves with the loop, but not by one element.
bool Model::per_lane(const NestAccess& a, int vl) const {
  if (vl < 0) return false;
  if (nonaffine_in(a, vl)) return true;
  const int64_t s = a.index.stride_of(vl);
  return s != 0 && s != 1 && s != -1 && strided_span(a, vl) == 0;
}

// The stride of a read of vector loop `vl` that the backend loads as one wide load and
// a shuffle (codegen/lower/strided_loads.h), or 0.
int64_t Model::strided_span(const NestAccess& a, int vl) const {
  if (vl < 0 || a.kind != AccessKind::kRead || nonaffine_in(a, vl)) return 0;
  const int64_t s = std::abs(a.index.stride_of(vl));
  return s >= 2 && strided_load_fits(s, int64_t(ext(vl))) ? s : 0;
}

}  // namespace cost_model_internal
}  // namespace tensorgym
