// LLVM's own vectorizers on the code the schedule leaves scalar: which innermost
// loops its loop vectorizer takes and at what factor, how it reaches each access
// (plain, interleaved, gathered, masked), and how far its SLP vectorizer packs
// unrolled copies.
#include <numeric>

#include "codegen/analysis/cost_model_internal.h"

namespace tensorgym {
namespace cost_model_internal {

// The scalar body of each innermost iterating loop once the loops inside are fully
// unrolled: each copy's accesses, operations and guard compares.
void Model::auto_vector_body_sizes(const std::vector<char>& has_inner) {
  const size_t n = S.loops.size();
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
}

// LLVM's loop vectorizer on innermost iterating loops of plain code: no float
// reduction (no reassociation), no library calls. Unit-stride and invariant accesses
// are plain vector loads and stores; strided ones are interleaved groups when unrolled
// copies fill the gaps, otherwise gathers and scatters (where the target has them:
// AVX2 gathers, AVX-512 scatters). Guards do not stop it: at O3 LLVM unswitches a
// guard that does not move with the loop and peels a split's tail test off it, so the
// vector loop runs unguarded.
void Model::find_auto_vectorized() {
  const size_t n = S.loops.size();
  const auto& L = S.loops;
  autovec_.assign(n, 0);
  autovec_folded_.assign(n, 0);
  autovec_gathers_.assign(n, 0);
  std::vector<char> has_inner(n, 0);
  for (size_t l = 0; l < n; ++l)
    if (real_[l] || vec_ok_[l])
      for (int p = L[l].parent; p >= 0; p = L[size_t(p)].parent) has_inner[size_t(p)] = 1;
  auto_vector_body_sizes(has_inner);
  for (size_t l = 0; l < n; ++l) {
    if (!real_[l] || has_inner[l] || L[l].extent < 3 || stores_under_[l].empty()) continue;
    bool in_vector = false;
    for (int p = L[l].parent; p >= 0; p = L[size_t(p)].parent) in_vector |= vec_ok_[size_t(p)] != 0;
    if (!in_vector) auto_vectorize_loop(l);
  }
}

// Whether and how LLVM vectorizes innermost iterating loop `l`. Its own cost model
// prices a gather at about its lanes plus two, a scalar access at one: it vectorizes
// when the FP work, address arithmetic and contiguous accesses that get cheaper
// outweigh that (a copy of unrolled strided rows stays scalar; anything computed goes).
void Model::auto_vectorize_loop(size_t l) {
  const auto& L = S.loops;
  bool ok = true;
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
      for (size_t ai = 1; ai < st.accesses.size(); ++ai) self_read |= at_target(st, st.accesses[ai]);
      // (Not when the buffer is allocated inside `l`: each iteration has its own,
      // as a one-element accumulator computed at the output's x.)
      const NestBuffer& buf = S.buffers[size_t(st.buffer)];
      bool per_iteration = false;
      if (buf.alloc >= 0) {
        const std::vector<int>& around = S.allocs[size_t(buf.alloc)].loops;
        per_iteration = std::find(around.begin(), around.end(), int(l)) != around.end();
      }
      if (self_read && !st.accesses[0].index.depends_on(int(l)) && buf.dtype.is_float() && !per_iteration) ok = false;
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
  if (!ok) return;
  // Short loops are vectorized only when no scalar remainder is left.
  int widest = lanes_per_vector(t, M.auto_vector_bits);
  // A fused loop's parts line up over at most fused_lanes lanes.
  for (int si : stores_under_[l])
    for (const NestAccess& a : S.stores[size_t(si)].accesses)
      if (nonaffine_in(a, int(l)) && fused_lanes(a, int(l)) >= 4)
        widest = int(std::min<int64_t>(widest, fused_lanes(a, int(l))));
  int vf = widest;
  while (vf > int(L[l].extent)) vf /= 2;
  // Under 16 iterations LLVM leaves no scalar remainder: a power-of-two count takes a
  // vector as long as itself; any other, where the target masks every access, runs
  // whole vectors with the tail's lanes masked off (it does not look for a smaller
  // factor that divides the count), so each access is a masked load or store and a
  // strided group a masked gather. Where an access gathers even unmasked, LLVM does
  // not fold the tail: the loop takes a factor that divides the count.
  bool folded = false;
  if (L[l].extent < 16 && L[l].extent % vf != 0) {
    folded = M.vector_gather && M.vector_scatter && !scalar_gathers && !power_of_two(L[l].extent);
    if (folded) {
      vf = std::min(widest, std::max(vf, 4));  // three iterations run as one vector of 4
      // Masked groups are gathers. They stay in `cheap` as well: LLVM vectorizes such
      // loops where pricing them as plain gathers against the scalar loop would not.
      gathers += interleaved;
    } else {
      while (vf >= 4 && L[l].extent % vf != 0) vf /= 2;
    }
  }
  if (vf < 4) return;
  // Lanes doing work per vector: all of them, or the folded count spread over its
  // vectors. Vectorized when (gathers (vf + 2) + cheap) per vector beats (gathers +
  // cheap) per lane.
  const double used = folded ? ext(int(l)) / std::ceil(ext(int(l)) / vf) : double(vf);
  if (gathers > 0 && gathers * (vf + 2 - used) >= (used - 1) * cheap) return;
  autovec_[l] = vf;
  autovec_gathers_[l] = gathers > 0;
  autovec_folded_[l] = folded;
}

// The share of the straight-line copies of `st` inside loop `l` that keep a guard
// when LLVM vectorizes `l`. LLVM unswitches loop-invariant branches before it fully
// unrolls the loops inside, so a guard on an unrolled loop (a split's tail test,
// `outer * f + inner < n`) is still there when the vectorizer runs: the copies it can
// fail in keep it, the others have it folded away. About as many copies can fail as
// the guard leaves points out; a guard on `l` alone is a tail LLVM peels off, one on
// outer loops only does not move with `l`. A guard on `l` and on unrolled copies
// inside it is masked in the copies it can fail in.
double Model::masked_share(int l, const NestStore& st) const {
  if (l >= 0 && size_t(l) < autovec_folded_.size() && autovec_folded_[size_t(l)]) return 1;
  if (st.guard_loops.empty() || st.fraction >= 1) return 0;
  const int depth = S.loops[size_t(l)].depth;
  // Guard by guard: one that reads only loops outside `l` does not move with it
  // (unswitched); one that reads only the unrolled loops inside it is a constant in
  // each copy (folded once unrolled, its failing copies deleted). Only one that reads
  // both keeps, in the copies it can fail, a test the vector loop masks.
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
    // unswitches them where the body is small enough to duplicate. A test that moves
    // with `l` itself is a tail: LLVM peels it off a loop without copies, and masks
    // the copies it can fail in (not unswitched: it moves).
    if (copies <= 1 || !outer || (!moves && body_size_[size_t(l)] <= M.unswitch_budget)) continue;
    const double failing = std::ceil((1 - g.fraction) * space - 1e-9);
    unmasked *= 1 - std::min(1.0, failing / copies);
  }
  return 1 - unmasked;
}

// The most lanes (a power of two) over which every non-affine part of `a` that moves
// with `l` is a fused loop's quotient that stays put or remainder that steps by one
// (IndexTerm::divisor), when VF divides c and v's first value plus o in (v + o) / c
// and (v + o) % c. On a target without gathers LLVM's vectorizer computes each lane's
// address and loads it alone, and where the lanes line up so, later passes merge the
// loads into one vector. Where the target gathers, the vectorizer gathers such a part
// (a divide per lane), unless the divisor is a power of two: SCEV reads that quotient
// as a shift and sees it uniform. 0 when a part is of another kind.
int64_t Model::fused_lanes(const NestAccess& a, int l) const {
  // A parallel loop's body runs from a chunk's first iteration, a value LLVM does not
  // know: it cannot line the lanes up, and gathers.
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

// Whether `a` takes a remainder by a power of two that wraps around while one thread
// runs `l`. InstCombine makes the remainder a mask, which SCEV reads as a narrow
// induction (i10 for % 1024); the vectorizer guards its vector loop with a check that
// this narrow induction does not wrap, which here always fails: the vector loop it
// reports is never entered.
bool Model::remainder_wraps(const NestAccess& a, int l) const {
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
int64_t Model::fused_lane_step(const NestAccess& a, int l) {
  int64_t step = 0;
  for (const IndexTerm& term : a.index.terms)
    if (term.loop == l || (term.loop < 0 && term.remainder && term.deps.size() == 1 && term.deps[0] == l))
      step += term.coeff;
  return step;
}

// How LLVM's loop vectorizer, vectorizing loop `l`, accesses `a` of `st`.
Model::VecAccess Model::vec_access(int l, const NestStore& st, const NestAccess& a) const {
  if (nonaffine_in(a, l)) {  // one address per lane, unless a fused loop's parts line up
    if (fused_lanes(a, l) < 4) return VecAccess::kGather;
    const int64_t s = fused_lane_step(a, l);
    return s == 0 ? VecAccess::kInvariant : s == 1 || s == -1 ? VecAccess::kUnit : VecAccess::kGather;
  }
  const int64_t s = a.index.stride_of(l);
  if (s == 0) return VecAccess::kInvariant;
  if (s == 1 || s == -1) return VecAccess::kUnit;
  // An interleaved group: unrolled copies inside `l` that fill the stride's gaps (one
  // wide load and shuffles).
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

// Instructions per unrolled copy of a store once the SLP vectorizer has packed the
// copies of its innermost unrolled unit-stride loop (1 when nothing packs).
double Model::slp_factor(const NestStore& st, int r_depth) const {
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

}  // namespace cost_model_internal
}  // namespace tensorgym
