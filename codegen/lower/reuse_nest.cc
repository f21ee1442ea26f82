// Rewrites an earlier lowering's nest into the nest of a state one primitive away.
// Each rewrite applies only where it provably gives what a fresh lowering gives;
// tests/schedule_property_test.cc checks that on random traces of every operator.
#include "codegen/lower/reuse_nest.h"

#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "codegen/ir/ir_mutator.h"
#include "codegen/ir/ir_visitor.h"
#include "codegen/ir/linear_form.h"
#include "codegen/ir/substitute.h"
#include "codegen/schedule/bound_inference.h"

namespace tensorgym {
namespace {

bool same_iter_vars(const std::vector<IterVar>& a, const std::vector<IterVar>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || a[i].min != b[i].min || a[i].extent != b[i].extent) return false;
  return true;
}

// Conservative: bodies are compared by identity (primitives that leave a stage's
// definition alone copy its handle), and a definition the two states share is equal.
bool same_def(const CopyOnWrite<StageDef>& x, const CopyOnWrite<StageDef>& y) {
  if (x.shares_with(y)) return true;
  const StageDef &a = x, &b = y;
  return a.name == b.name && a.dtype == b.dtype && a.reduce == b.reduce && a.body.same_as(b.body) &&
         same_iter_vars(a.axes, b.axes) && same_iter_vars(a.reduce_axes, b.reduce_axes);
}

// Everything of a stage but its loops, their order and their relations.
bool same_placement(const StageSchedule& x, const StageSchedule& y) {
  return x.origin == y.origin && x.is_output == y.is_output && x.attach == y.attach &&
         x.attach_stage == y.attach_stage && x.attach_loop == y.attach_loop && x.storage_order == y.storage_order &&
         x.aligns == y.aligns && x.scope == y.scope && same_def(x.def, y.def);
}

bool same_loop_but_kind(const Loop& a, const Loop& b) {
  return a.name == b.name && a.extent == b.extent && a.is_reduce == b.is_reduce && a.thread_tag == b.thread_tag &&
         a.pragmas == b.pragmas;
}

// Whether the first `n` loops of a and b are the same (their kinds too, with `kinds`).
bool same_loops(const std::vector<Loop>& a, const std::vector<Loop>& b, size_t n, bool kinds = true) {
  if (a.size() < n || b.size() < n) return false;
  for (size_t l = 0; l < n; ++l)
    if (!same_loop_but_kind(a[l], b[l]) || (kinds && a[l].kind != b[l].kind)) return false;
  return true;
}

// Everything of a stage but the order of its leaf loops (and, without `kinds`, their
// kinds).
bool same_but_leaf_order(const StageSchedule& x, const StageSchedule& y, bool kinds = true) {
  return same_placement(x, y) && x.relations == y.relations && x.loops.size() == y.loops.size() &&
         same_loops(x.loops, y.loops, x.loops.size(), kinds);
}

// The index of the one stage in which `a` and `b` differ; -1 when they differ in
// more than one, in none, or in their programs or stage lists.
int changed_stage(const ScheduleState& a, const ScheduleState& b) {
  if (a.program_ptr() != b.program_ptr() || a.stages().size() != b.stages().size()) return -1;
  int changed = -1;
  for (size_t i = 0; i < a.stages().size(); ++i) {
    if (same_but_leaf_order(a.stages()[i], b.stages()[i]) && a.stages()[i].leaf == b.stages()[i].leaf) continue;
    if (changed >= 0) return -1;
    changed = int(i);
  }
  return changed;
}

// Whether some stage is computed at a loop of `s` (its bounds follow s's loops).
bool has_attached(const ScheduleState& state, const StageSchedule& s) {
  for (const StageSchedule& t : state.stages())
    if (t.attach == AttachKind::kAt && t.attach_stage == s.name()) return true;
  return false;
}

// The first statement of `s`, in pre-order, for which `match` holds; null when none.
template <class F>
const BaseStmtNode* find_stmt(const Stmt& s, const F& match) {
  if (!s.defined()) return nullptr;
  if (match(s)) return s.get();
  switch (s.kind()) {
    case NodeKind::kFor: return find_stmt(s.as<For>()->body, match);
    case NodeKind::kLetStmt: return find_stmt(s.as<LetStmt>()->body, match);
    case NodeKind::kAllocate: return find_stmt(s.as<Allocate>()->body, match);
    case NodeKind::kIfThenElse: {
      const IfThenElse* i = s.as<IfThenElse>();
      const BaseStmtNode* found = find_stmt(i->then_case, match);
      return found ? found : find_stmt(i->else_case, match);
    }
    case NodeKind::kBlock:
      for (const Stmt& t : s.as<Block>()->stmts)
        if (const BaseStmtNode* found = find_stmt(t, match)) return found;
      return nullptr;
    default: return nullptr;
  }
}

// Replaces one statement node (by identity); rebuilds only what leads to it.
class NodeReplacer : public IRMutator {
 public:
  NodeReplacer(const BaseStmtNode* target, Stmt replacement) : target_(target), replacement_(std::move(replacement)) {}
  using IRMutator::mutate;
  Expr mutate(const Expr& e) override { return e; }
  Stmt mutate(const Stmt& s) override { return s.get() == target_ ? replacement_ : IRMutator::mutate(s); }

 protected:
  Stmt visit(const Store* op) override { return op; }

 private:
  const BaseStmtNode* target_;
  Stmt replacement_;
};

// --- loop kinds ---

using KindChanges = std::vector<std::pair<std::string, ForKind>>;

// Whether `a` and `b` differ at most in the kinds of loops. The emitted loops (leaf
// loops of stages that are not inlined) whose kind differs go to *changes, with
// their loop variable and their kind in `b`.
bool differ_only_in_kinds(const ScheduleState& a, const ScheduleState& b, KindChanges* changes) {
  if (a.program_ptr() != b.program_ptr() || a.stages().size() != b.stages().size()) return false;
  for (size_t i = 0; i < a.stages().size(); ++i) {
    const StageSchedule& x = a.stages()[i];
    const StageSchedule& y = b.stages()[i];
    if (!same_but_leaf_order(x, y, /*kinds=*/false) || x.leaf != y.leaf) return false;
    if (y.attach == AttachKind::kInline) continue;
    for (int l : y.leaf)
      if (x.loops[size_t(l)].kind != y.loops[size_t(l)].kind)
        changes->emplace_back(ScheduleBounds::loop_var(y, y.loops[size_t(l)]), y.loops[size_t(l)].kind);
  }
  return true;
}

// Sets the kind of the loops named in `kinds`; rebuilds only what leads to them (the
// mutator's defaults) and leaves expressions alone.
class LoopKindSetter : public IRMutator {
 public:
  explicit LoopKindSetter(const KindChanges& kinds) : kinds_(kinds) {}
  using IRMutator::mutate;
  Expr mutate(const Expr& e) override { return e; }

 protected:
  Stmt visit(const For* op) override {
    ForKind kind = op->kind;
    for (const auto& [name, k] : kinds_)
      if (name == op->name) kind = k;
    Stmt body = mutate(op->body);
    if (kind == op->kind && body.same_as(op->body)) return op;
    return For::make(op->name, op->min, op->extent, kind, body, op->thread_tag);
  }
  Stmt visit(const Store* op) override { return op; }  // no loops below a store

 private:
  const KindChanges& kinds_;
};

// --- one split ---

struct SplitChange {
  std::string var, outer, inner;  // loop variables: the split loop's and its two parts'
  int64_t extent = 0, factor = 0;
  ForKind outer_kind = ForKind::kSerial, inner_kind = ForKind::kSerial;
};

// Whether y is x with one more split of a leaf loop, by a factor that divides it into
// two loops of at least two iterations each (so no tail guard, no loop the simplifier
// unwraps), in a stage whose loops come from splits only.
bool one_split(const StageSchedule& x, const StageSchedule& y, SplitChange* out) {
  const size_t n = x.loops.size();
  if (!same_placement(x, y) || y.loops.size() != n + 2 || !same_loops(x.loops, y.loops, n) ||
      y.relations.size() != x.relations.size() + 1 || y.leaf.size() != x.leaf.size() + 1)
    return false;
  // With a fuse among the relations, a fresh lowering orders index terms by the
  // quotient and remainder it takes apart: not rewritten.
  for (size_t r = 0; r < x.relations.size(); ++r)
    if (!(x.relations[r] == y.relations[r]) || x.relations[r].kind != LoopRelation::kSplit) return false;
  const LoopRelation& rel = y.relations.back();
  if (rel.kind != LoopRelation::kSplit || rel.outer != int(n) || rel.inner != int(n + 1) || rel.parent < 0 ||
      size_t(rel.parent) >= n)
    return false;
  int pos = x.leaf_position(rel.parent);
  if (pos < 0) return false;
  for (size_t p = 0, q = 0; p < x.leaf.size(); ++p, ++q) {
    if (int(p) != pos) {
      if (x.leaf[p] != y.leaf[q]) return false;
      continue;
    }
    if (y.leaf[q] != rel.outer || y.leaf[q + 1] != rel.inner) return false;
    ++q;
  }
  const Loop& parent = x.loops[size_t(rel.parent)];
  const Loop& outer = y.loops[n];
  const Loop& inner = y.loops[n + 1];
  if (rel.factor < 2 || parent.extent % rel.factor != 0 || parent.extent / rel.factor < 2 ||
      inner.extent != rel.factor || outer.extent != parent.extent / rel.factor || !outer.pragmas.empty() ||
      !inner.pragmas.empty() || !outer.thread_tag.empty() || !inner.thread_tag.empty())
    return false;
  out->var = ScheduleBounds::loop_var(x, parent);
  out->outer = ScheduleBounds::loop_var(y, outer);
  out->inner = ScheduleBounds::loop_var(y, inner);
  out->extent = parent.extent;
  out->factor = rel.factor;
  out->outer_kind = outer.kind;
  out->inner_kind = inner.kind;
  return true;
}

// Applies a split to a lowered nest: the split loop's For becomes two, and every
// buffer index that uses its variable is rebuilt with var = outer * factor + inner in
// the simplifier's canonical linear form (terms in order, the new ones where the
// variable was). Sets failed() where the variable appears anywhere else (a guard, a
// value, inside a non-linear part of an index): a fresh lowering might simplify that
// differently.
class SplitRewriter : public IRMutator {
 public:
  explicit SplitRewriter(const SplitChange& change) : c_(change) {}
  bool failed() const { return failed_; }
  using IRMutator::mutate;

 protected:
  Expr visit(const Variable* op) override {
    if (op->name == c_.var) failed_ = true;
    return op;
  }

  Expr visit(const Load* op) override {
    std::vector<Expr> idx;
    if (!map_if_changed(op->indices, &idx, [this](const Expr& e) { return index(e); })) return op;
    return Load::make(op->type, op->name, std::move(idx));
  }

  Stmt visit(const Store* op) override {
    std::vector<Expr> idx;
    bool changed = map_if_changed(op->indices, &idx, [this](const Expr& e) { return index(e); });
    Expr value = mutate(op->value);
    if (!changed && value.same_as(op->value)) return op;
    return Store::make(op->name, changed ? std::move(idx) : op->indices, std::move(value));
  }

  Stmt visit(const For* op) override {
    if (op->name != c_.var) return IRMutator::visit(op);
    const int64_t* min = as_const_int(op->min);
    const int64_t* extent = as_const_int(op->extent);
    if (!min || *min != 0 || !extent || *extent != c_.extent) {
      failed_ = true;
      return op;
    }
    Stmt body = mutate(op->body);
    Stmt inner = For::make(c_.inner, op->min, make_int(c_.factor), c_.inner_kind, std::move(body));
    return For::make(c_.outer, op->min, make_int(c_.extent / c_.factor), c_.outer_kind, std::move(inner));
  }

 private:
  // Indices are shared between the accesses of one element: rewritten once each.
  Expr index(const Expr& e) {
    for (const auto& [from, to] : done_)
      if (from.same_as(e)) return to;
    Expr out = rewrite_index(e);
    done_.emplace_back(e, out);
    return out;
  }

  // An index that does not use the split variable is kept as it is (the same node).
  Expr rewrite_index(const Expr& e) {
    if (failed_) return e;
    LinearForm f = linearize(e);
    LinearForm g;
    g.constant = f.constant;
    bool uses = false;
    for (const LinearTerm& t : f.terms) {
      const Variable* v = t.atom.as<Variable>();
      if (v && v->name == c_.var) {
        uses = true;
        g.add_term(part_var(v->type, true), t.coeff * c_.factor);
        g.add_term(part_var(v->type, false), t.coeff);
      } else if (!v && uses_var(t.atom, c_.var)) {
        failed_ = true;
        return e;
      } else {
        g.add_term(t.atom, t.coeff);
      }
    }
    return uses ? from_linear(g, e.type()) : e;
  }

  // The outer or inner loop's variable, made once per type (loop variables are i32).
  const Expr& part_var(DataType t, bool outer) {
    Expr& v = outer ? outer_var_ : inner_var_;
    if (!v.defined() || v.type() != t) v = Variable::make(t, outer ? c_.outer : c_.inner);
    return v;
  }

  const SplitChange& c_;
  bool failed_ = false;
  std::vector<std::pair<Expr, Expr>> done_;
  Expr outer_var_, inner_var_;
};

// Whether a division or a modulo is in the body of `s` or of a stage inlined anywhere:
// a fresh lowering folds quotient and remainder pairs back together and may order the
// index terms differently from the rewrite (rfactor of a fused loop does that).
bool divides_in_bodies(const ScheduleState& state, const StageSchedule& s) {
  bool found = false;
  auto look = [&found](const Expr& e) { found = found || e.kind() == NodeKind::kDiv || e.kind() == NodeKind::kMod; };
  visit_exprs(s.def->body, look);
  for (const StageSchedule& t : state.stages())
    if (t.attach == AttachKind::kInline) visit_exprs(t.def->body, look);
  return found;
}

Stmt split_loop(const ScheduleState& before, const StageSchedule& x, const StageSchedule& y, const Stmt& body) {
  SplitChange change;
  if (x.attach != AttachKind::kRoot || has_attached(before, x) || !one_split(x, y, &change) ||
      divides_in_bodies(before, x))
    return Stmt();
  SplitRewriter rewriter(change);
  Stmt out = rewriter.mutate(body);
  return rewriter.failed() ? Stmt() : out;
}

// --- one reorder ---

// A reorder of leaf positions [a, b] of x, all before its first reduction loop, whose
// For nodes are directly nested in the lowered nest (no guard, no initialization, no
// attached stage, no loop unwrapped between them): the For nodes are permuted, each
// keeping its bounds and kind; what lies inside the innermost one stays.
Stmt reorder_loops(const ScheduleState& before, const StageSchedule& x, const StageSchedule& y, const Stmt& body) {
  if (x.attach != AttachKind::kRoot || has_attached(before, x) || !same_but_leaf_order(x, y) ||
      x.leaf.size() != y.leaf.size())
    return Stmt();
  size_t a = 0, b = x.leaf.size();
  while (a < x.leaf.size() && x.leaf[a] == y.leaf[a]) ++a;
  while (b > a && x.leaf[b - 1] == y.leaf[b - 1]) --b;
  if (a == b) return Stmt();
  // No reduction loop up to b (the permuted loops are checked to be the same below).
  for (size_t p = 0; p < b; ++p)
    if (x.loops[size_t(x.leaf[p])].is_reduce) return Stmt();
  std::vector<const For*> chain;
  const std::string first = ScheduleBounds::loop_var(x, x.loops[size_t(x.leaf[a])]);
  const BaseStmtNode* found = find_stmt(body, [&](const Stmt& t) {
    const For* f = t.as<For>();
    return f && f->name == first;
  });
  const For* f = static_cast<const For*>(found);  // a For, or null
  for (size_t p = a; p < b; ++p) {
    if (!f || f->name != ScheduleBounds::loop_var(x, x.loops[size_t(x.leaf[p])])) return Stmt();
    chain.push_back(f);
    f = p + 1 < b ? f->body.as<For>() : nullptr;
  }
  Stmt inside = chain.back()->body;
  // A guard goes inside the deepest loop it depends on: one below the chain that
  // depends on a permuted loop may belong elsewhere in the new order.
  std::unordered_set<std::string> permuted;
  for (const For* c : chain) permuted.insert(c->name);
  if (find_stmt(inside, [&](const Stmt& t) {
        const IfThenElse* i = t.as<IfThenElse>();
        return i && uses_any_var(i->condition, permuted);
      }))
    return Stmt();
  for (size_t p = b; p-- > a;) {
    const std::string var = ScheduleBounds::loop_var(y, y.loops[size_t(y.leaf[p])]);
    const For* old = nullptr;
    for (const For* c : chain)
      if (c->name == var) old = c;
    if (!old) return Stmt();  // not a permutation of [a, b)
    inside = For::make(var, old->min, old->extent, old->kind, std::move(inside), old->thread_tag);
  }
  return NodeReplacer(chain.front(), inside).mutate(body);
}

}  // namespace

Stmt reuse_nest(const ScheduleState& before, const ScheduleState& after, const Stmt& body, bool simplified) {
  KindChanges changes;
  if (differ_only_in_kinds(before, after, &changes)) return LoopKindSetter(changes).mutate(body);
  int s = simplified ? changed_stage(before, after) : -1;
  if (s < 0) return Stmt();
  const StageSchedule& x = before.stages()[size_t(s)];
  const StageSchedule& y = after.stages()[size_t(s)];
  if (y.loops.size() == x.loops.size() + 2) return split_loop(before, x, y, body);
  return reorder_loops(before, x, y, body);
}

}  // namespace tensorgym
