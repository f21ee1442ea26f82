// Selects and guards, as LLVM's passes leave them around vectorized code: padding
// tests inlined into a value (jump threading, switches, unswitching, a select split
// into two versions of a loop) and a store's guards (hoisted, folded, or tested).
#include <limits>

#include "codegen/analysis/cost_model_internal.h"
#include "codegen/ir/ir_visitor.h"

namespace tensorgym {
namespace cost_model_internal {

// Whether LLVM's jump threading leaves loop `l` scalar: `st`'s value loads under a
// select (a branch around the load, emitted so that padding is never read) and the
// schedule unrolls two or more loops of `st` inside `l`, whose copies' tests share
// clauses (`y != 0` in each row's copies). Jump threading duplicates the blocks
// between them, the loop's increment becomes a phi of copies, and the vectorizer
// cannot count its iterations.
bool Model::copies_jump_threaded(const NestStore& st, int l) const {
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
// speculative_loads.h), and two nested loops inside `l` are left for LLVM to unroll.
// The vectorizer meets the innermost tap loop first (3 iterations, not worth it) and
// the taps are unrolled later.
bool Model::select_taps_unrolled_late(const NestStore& st, int l) const {
  for (const NestAccess& a : st.accesses)
    if (a.kind == AccessKind::kRead && a.fraction < 1) return false;  // a branch: the rules above
  bool loading_select = false;
  visit_exprs(st.node->value, [&](const Expr& e) {
    if (const Select* sel = e.as<Select>())
      for (const Expr* arm : {&sel->true_value, &sel->false_value})
        visit_exprs(*arm, [&](const Expr& x) { loading_select |= x.kind() == NodeKind::kLoad; });
  });
  // The select is in an accumulation's value (the taps' update); a padding tile
  // computed in loops of its own before the taps read it vectorizes.
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
// vectorizer does not take ("loop contains a switch statement").
bool Model::range_test_is_switch(const NestStore& st, int l) const {
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
      k = k == NodeKind::kLT   ? NodeKind::kGT
          : k == NodeKind::kLE ? NodeKind::kGE
          : k == NodeKind::kGT ? NodeKind::kLT
                               : NodeKind::kLE;
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
int Model::loop_named(const NestStore& st, const std::string& name) const {
  for (size_t k = st.loops.size(); k-- > 0;)
    if (S.loops[size_t(st.loops[k])].name == name) return st.loops[k];
  return -1;
}

// Whether `x` (a part of `st`'s value) changes within an iteration of region `r`: it
// loads, or reads `r` or the vector loop `vl` (or a let's variable, assumed to).
// Otherwise it reads only constants and outer loops, per unrolled copy.
bool Model::moves_in_region(const Expr& x, const NestStore& st, int r, int vl) const {
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
// has it for a store's guards: a part on outer loops only is unswitched; one on outer
// loops and unrolled copies inside `r` too, where the body is small). Then the loads
// beside a select stay plain (the invariant ones hoisted) and only the guarded load is
// masked (a constant mask once LLVM fully unrolls a short vector loop).
bool Model::select_test_unswitched(const NestStore& st, int r, int vl) const {
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

// Whether `buffer` (a register) is written, in the same innermost loop as `st`, by a
// store whose value loads under a select.
bool Model::conditional_producer(int buffer, const NestStore& st, int r) const {
  if (st.loops.empty()) return false;
  for (const NestStore& p : S.stores) {
    if (p.buffer != buffer || &p == &st || p.loops.empty() || p.loops.back() != st.loops.back()) continue;
    for (const NestAccess& a : p.accesses)
      if (a.kind == AccessKind::kRead && a.fraction < 1 && arms_split_inside(p, r)) return true;
  }
  return false;
}

// Whether LLVM splits a select in `st`'s value into two versions of a loop it unrolls
// inside region `r`: the select's leading clause (a padding test's row clause) does
// not move in that loop, which is small, so LLVM unswitches the clause out of it
// before unrolling it. Both versions keep the loads after the select, and when LLVM
// vectorizes `r` it runs them under the clause's mask, as masked gathers. Where no
// such loop is left inside `r` (the column taps unrolled by the schedule, the rows in
// a loop of their own that the clause moves in), the clause is one more bit of the
// guarded load's mask.
bool Model::arms_split_inside(const NestStore& st, int r) const {
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
    // The same when the clause reads such a loop through a division: with the taps
    // fused, `y + f / 3` holds for three copies in a row once LLVM unrolls `f`.
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

// Whether a guard of `st` is still tested on every iteration of region `r`: one that
// reads `r`, or both a loop outside it and an unrolled one inside (a test per copy).
// One that reads only outer loops is hoisted out of the region, one that reads only
// the unrolled loops inside it folds in each copy.
bool Model::guard_tested_in(const NestStore& st, int r) const {
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

// The share of the iterations of region `r` in which `st` runs: its guards inside the
// region (those outside already thin out the region's iterations, iters_).
double Model::fraction_within(const NestStore& st, int r) const {
  if (r < 0) return st.fraction;
  const int depth = S.loops[size_t(r)].depth;
  double outside = 1;
  for (int l : st.loops)
    if (S.loops[size_t(l)].depth <= depth) outside *= S.loops[size_t(l)].fraction;
  return outside > 0 ? std::min(1.0, st.fraction / outside) : 0.0;
}

}  // namespace cost_model_internal
}  // namespace tensorgym
