// What the backend and LLVM will make of the nest, decided before anything is costed:
// which vectorized loops the backend vectorizes, which serial loops LLVM fully unrolls,
// how often each loop runs, which initial values GVN forwards, which small buffers
// live in registers. LLVM's loop vectorizer has a file of its own (auto_vectorize.cc).
#include "codegen/analysis/cost_model_internal.h"
#include "codegen/ir/ir_visitor.h"

namespace tensorgym {
namespace cost_model_internal {

void Model::prepare() {
  const size_t n = S.loops.size();
  stores_under_.assign(n, {});
  for (size_t si = 0; si < S.stores.size(); ++si)
    for (int l : S.stores[si].loops) stores_under_[size_t(l)].push_back(int(si));
  find_backend_vectorized();
  find_full_unrolls();
  count_executions();
  find_forwarded_inits();
  assign_regions();
  find_register_buffers();
  find_auto_vectorized();
  describe_caches();
}

// Which vectorized loops the backend really vectorizes (vectorize_loops.cc): at most
// 64 lanes, no parallel or vectorized loop or allocation inside, and no store that
// every lane would write.
void Model::find_backend_vectorized() {
  const size_t n = S.loops.size();
  const auto& L = S.loops;
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
}

// The size LLVM's full unroller sees for each loop once the loops inside it are
// unrolled (its LoopSize), and the part of it that folds to constants in each
// unrolled copy (LLVM simulates the first `full_unroll_analyzed_trips` iterations and
// drops what becomes constant). Checked against the `-unroll-threshold` at which
// `opt -O3` starts to unroll:
// - one instruction per operation of the value (two per FMA: a multiply and an add in
//   the IR), in every copy;
// - each access `full_unroll_access_size` in each distinct copy (the load or store:
//   the copies' addresses are constant offsets from one register) and
//   `full_unroll_address_size` once per iteration (that register's update); copies of
//   an access that does not move with the loop are hoisted by LICM (an accumulator
//   promoted to registers) before LLVM considers the loop. The pipeline simplifies
//   the kernel twice (the body function, then inlined into its caller), so that holds
//   for copies the first round's unrolls made too;
// - a compare and a branch per distinct copy of a guard that reads the loop or a loop
//   inside it and can fail in that copy.
// What folds reads only the loop and the loops inside it: such a guard, the value's
// integer tests on them (a padding select's `w >= 1`), and the part of an index that
// walks the loop by more than one element (by one element LLVM adds the counter to
// the address register, and nothing folds).
// Explicit vector code (a vectorized loop at or around the store) is one vector per
// copy: each operation is as many instructions as registers its lanes fill, a gather
// or scatter one per lane (LLVM prices them scalarized).
void Model::unrolled_body_sizes(std::vector<double>* body_size, std::vector<double>* folded_size) const {
  const auto& L = S.loops;
  for (size_t si = 0; si < S.stores.size(); ++si) {
    const NestStore& st = S.stores[si];
    ValueOps ops;
    count_value(st.node->value, &ops);
    int vl = -1;
    for (int l : st.loops)
      if (vec_ok_[size_t(l)]) vl = l;
    const double regs =
        vl < 0 ? 1.0 : std::ceil(ext(vl) / lanes_per_vector(S.buffers[size_t(st.buffer)].dtype, M.vector_bits));
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
        const double span = double(std::max<int64_t>(1, 2 * strided_span(a, vl)));  // loads and permutes
        size += per_lane(a, vl) ? distinct * ext(vl)
                                : (distinct * M.full_unroll_access_size + M.full_unroll_address_size) * regs * span;
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
      (*body_size)[size_t(l)] += size;
      (*folded_size)[size_t(l)] += std::min(folded, size);
      copies *= vec_ok_[size_t(l)] ? 1.0 : ext(l);
    }
  }
}

// LLVM fully unrolls small serial loops of constant trip count, innermost first: a
// loop whose inner loops all went becomes a candidate in turn. Its test: the unrolled
// size under the threshold or, for a loop it simulates, the size left after folding
// under the threshold times the ratio of the two (at most `full_unroll_max_boost`).
// The loops left are the iterating ones (`real_`).
void Model::find_full_unrolls() {
  const size_t n = S.loops.size();
  const auto& L = S.loops;
  real_.assign(n, 0);
  llvm_unrolled_.assign(n, 0);
  std::vector<double> body_size(n, 0.0);    // instructions of one iteration, inner loops unrolled
  std::vector<double> folded_size(n, 0.0);  // of which fold to constants in each copy
  unrolled_body_sizes(&body_size, &folded_size);
  std::vector<char> blocked(n, 0);  // has an inner loop that stays a loop
  for (size_t l = n; l-- > 0;) {
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
}

// How often each loop is entered and its body run over the whole run (a loop under a
// guard runs only in the guard's share of its parent's iterations), and the outermost
// parallel loop around each.
void Model::count_executions() {
  const size_t n = S.loops.size();
  const auto& L = S.loops;
  iters_.assign(n, 1);
  execs_.assign(n, 1);
  outer_parallel_.assign(n, -1);
  for (size_t l = 0; l < n; ++l) {  // pre-order: parents first
    const int p = L[l].parent;
    execs_[l] = (p >= 0 ? iters_[size_t(p)] : 1) * L[l].fraction;
    iters_[l] = execs_[l] * (vec_ok_[l] ? 1.0 : ext(int(l)));
    outer_parallel_[l] = p >= 0 ? outer_parallel_[size_t(p)] : -1;
    if (outer_parallel_[l] < 0 && L[l].kind == ForKind::kParallel) outer_parallel_[l] = int(l);
  }
}

// An initial value stored just before its only update, in the same loops (the
// reduction loops between them all have extent 1, as a 1x1 convolution's after
// rfactor of its channels): GVN forwards it into the update and DSE deletes it.
void Model::find_forwarded_inits() {
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
}

// Each store's region (its innermost iterating loop) and explicit vector loop.
void Model::assign_regions() {
  const size_t n = S.loops.size();
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
}

// Small local buffers whose every index is constant once the unrolled loops are
// unrolled live in registers (LLVM's SROA): no loads, no stores, no traffic.
void Model::find_register_buffers() {
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
}

void Model::describe_caches() {
  const size_t n = S.loops.size();
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

}  // namespace cost_model_internal
}  // namespace tensorgym
