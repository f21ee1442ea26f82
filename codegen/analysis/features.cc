#include "codegen/analysis/features.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "codegen/analysis/constant_work.h"
#include "codegen/analysis/speculative_loads.h"
#include "codegen/ir/interval.h"
#include "codegen/ir/ir_equality.h"
#include "codegen/ir/ir_visitor.h"
#include "codegen/ir/linear_form.h"

namespace tensorgym {

// ---- access summary -------------------------------------------------------------------

bool IndexForm::depends_on(int loop) const {
  for (const IndexTerm& t : terms) {
    if (t.loop == loop) return true;
    if (t.loop < 0 && std::find(t.deps.begin(), t.deps.end(), loop) != t.deps.end()) return true;
  }
  return false;
}

int64_t IndexForm::stride_of(int loop) const {
  int64_t stride = 0;
  for (const IndexTerm& t : terms) {
    if (t.loop == loop) return t.coeff;
    if (t.loop >= 0) continue;
    for (size_t i = 0; i < t.deps.size(); ++i)
      if (t.deps[i] == loop) stride += t.coeff * t.dep_steps[i];
  }
  return stride;
}

void IndexForm::value_range(const std::vector<NestLoop>& loops, double* lo, double* hi) const {
  double l = double(constant), h = double(constant);
  for (const IndexTerm& t : terms) {
    double a, b;
    if (t.loop >= 0) {
      const NestLoop& L = loops[size_t(t.loop)];
      a = double(t.coeff) * double(L.min);
      b = double(t.coeff) * double(L.min + L.extent - 1);
    } else {
      a = double(t.coeff) * double(t.min_value);
      b = double(t.coeff) * double(t.max_value);
    }
    l += std::min(a, b);
    h += std::max(a, b);
  }
  *lo = l;
  *hi = h;
}

namespace {

constexpr int kMaxLetDepth = 16;

bool bounded(const IntRange& r) { return r.min != IntRange::kNegInf && r.max != IntRange::kPosInf; }

class Summarizer {
 public:
  explicit Summarizer(NestSummary* out) : out_(*out) {}

  void run(const LoopNest& nest) {
    inputs_ = &nest.inputs.get();
    for (const BufferArg& a : nest.inputs) add_arg(a);
    for (const BufferArg& a : nest.outputs) add_arg(a);
    if (nest.body.defined()) stmt(nest.body);
  }

 private:
  struct Guard {
    Expr condition;
    bool truth;
  };

  NestSummary& out_;
  std::vector<int> chain_;
  std::vector<std::pair<std::string, int>> loop_scope_;
  std::vector<std::pair<std::string, Expr>> let_scope_;
  std::vector<std::pair<std::string, int>> buffer_scope_;
  std::vector<Guard> guards_;
  std::vector<size_t> guard_base_;  // per enclosing loop: guards_.size() when its body began
  RangeScope ranges_;
  const std::vector<BufferArg>* inputs_ = nullptr;
  const Select* store_value_ = nullptr;  // the value of the store being summarized, when a select

  void add_arg(const BufferArg& a) {
    NestBuffer b;
    b.name = a.name;
    b.dtype = a.dtype;
    b.shape = a.shape;
    b.elements = 1;
    for (int64_t d : a.shape) b.elements *= d;
    out_.buffers.push_back(std::move(b));
    buffer_scope_.push_back({a.name, int(out_.buffers.size()) - 1});
  }

  int find_buffer(const std::string& name) const {
    for (size_t i = buffer_scope_.size(); i-- > 0;)
      if (buffer_scope_[i].first == name) return buffer_scope_[i].second;
    return -1;
  }
  int find_loop(const std::string& name) const {
    for (size_t i = loop_scope_.size(); i-- > 0;)
      if (loop_scope_[i].first == name) return loop_scope_[i].second;
    return -1;
  }
  const Expr* find_let(const std::string& name) const {
    for (size_t i = let_scope_.size(); i-- > 0;)
      if (let_scope_[i].first == name) return &let_scope_[i].second;
    return nullptr;
  }

  // Sets ranges_[name], returning what to restore.
  std::pair<bool, IntRange> bind_range(const std::string& name, IntRange r) {
    auto it = ranges_.find(name);
    std::pair<bool, IntRange> old{it != ranges_.end(), it != ranges_.end() ? it->second : IntRange()};
    ranges_[name] = r;
    return old;
  }
  void restore_range(const std::string& name, const std::pair<bool, IntRange>& old) {
    if (old.first) {
      ranges_[name] = old.second;
    } else {
      ranges_.erase(name);
    }
  }

  // Statement instances of one execution of `s`.
  double stmt(const Stmt& s) {
    if (!s.defined()) return 0;
    switch (s.kind()) {
      case NodeKind::kFor: return loop(s.as<For>());
      case NodeKind::kLetStmt: {
        const LetStmt* l = s.as<LetStmt>();
        auto old = bind_range(l->name, constant_bounds(l->value, ranges_));
        let_scope_.push_back({l->name, l->value});
        const double steps = stmt(l->body);
        let_scope_.pop_back();
        restore_range(l->name, old);
        return steps;
      }
      case NodeKind::kIfThenElse: {
        const IfThenElse* i = s.as<IfThenElse>();
        guards_.push_back({i->condition, true});
        double steps = stmt(i->then_case);
        guards_.pop_back();
        if (i->else_case.defined()) {
          guards_.push_back({i->condition, false});
          steps = std::max(steps, stmt(i->else_case));
          guards_.pop_back();
        }
        return steps;
      }
      case NodeKind::kAllocate: {
        const Allocate* a = s.as<Allocate>();
        NestBuffer b;
        b.name = a->name;
        b.dtype = a->dtype;
        b.elements = a->num_elements();
        b.shape = a->extents;
        b.alloc = int(out_.allocs.size());
        out_.buffers.push_back(std::move(b));
        out_.allocs.push_back({int(out_.buffers.size()) - 1, chain_});
        buffer_scope_.push_back({a->name, int(out_.buffers.size()) - 1});
        const double steps = stmt(a->body);
        buffer_scope_.pop_back();
        return steps;
      }
      case NodeKind::kStore: store(s.as<Store>()); return 1;
      case NodeKind::kBlock: {
        double steps = 0;
        for (const Stmt& c : s.as<Block>()->stmts) steps += stmt(c);
        return steps;
      }
      default: return 0;
    }
  }

  double loop(const For* f) {
    const IntRange rmin = constant_bounds(f->min, ranges_);
    const IntRange rext = constant_bounds(f->extent, ranges_);
    NestLoop L;
    L.name = f->name;
    L.kind = f->kind;
    L.thread_tag = f->thread_tag;
    L.min = rmin.min == IntRange::kNegInf ? 0 : rmin.min;
    L.extent = rext.max == IntRange::kPosInf ? 1 : std::max<int64_t>(rext.max, 1);
    L.parent = chain_.empty() ? -1 : chain_.back();
    L.depth = int(chain_.size());
    for (size_t g = guard_base_.empty() ? 0 : guard_base_.back(); g < guards_.size(); ++g)
      L.fraction *= share(guards_[g]);
    const int id = int(out_.loops.size());
    out_.loops.push_back(L);
    IntRange r{L.min, (rmin.max == IntRange::kPosInf ? L.min : rmin.max) + L.extent - 1};
    auto old = bind_range(f->name, r);
    chain_.push_back(id);
    guard_base_.push_back(guards_.size());
    loop_scope_.push_back({f->name, id});
    const double body = stmt(f->body);
    loop_scope_.pop_back();
    guard_base_.pop_back();
    chain_.pop_back();
    restore_range(f->name, old);
    out_.loops[size_t(id)].steps = double(L.extent) * body;
    return out_.loops[size_t(id)].steps;
  }

  // ---- index decomposition ----

  void collect_deps(const Expr& e, std::vector<int>* deps, int depth) const {
    visit_exprs(e, [&](const Expr& x) {
      const Variable* v = x.as<Variable>();
      if (!v) return;
      const int l = find_loop(v->name);
      if (l >= 0) {
        if (std::find(deps->begin(), deps->end(), l) == deps->end()) deps->push_back(l);
      } else if (const Expr* let = find_let(v->name); let && depth < kMaxLetDepth) {
        collect_deps(*let, deps, depth + 1);
      }
    });
  }

  // Evaluates `e` with every loop variable at its first value, except `loop` at its
  // second (when >= 0); let-bound names are evaluated the same way.
  int64_t evaluate_at_start(const Expr& e, int loop) const {
    RangeScope points;
    for (const auto& [name, id] : loop_scope_) {
      const NestLoop& L = out_.loops[size_t(id)];
      points[name] = IntRange::point(L.min + (id == loop ? 1 : 0));
    }
    for (const auto& [name, value] : let_scope_) points[name] = constant_bounds(value, points);
    const IntRange r = constant_bounds(e, points);
    return r.is_point() ? r.min : 0;
  }

  void add_term(IndexForm* f, int loop, int64_t coeff) {
    for (IndexTerm& t : f->terms) {
      if (t.loop == loop) {
        t.coeff += coeff;
        return;
      }
    }
    IndexTerm t;
    t.loop = loop;
    t.coeff = coeff;
    f->terms.push_back(std::move(t));
  }

  // Sets t's divisor, offset and remainder when `atom` is (v + offset) / c or
  // (v + offset) % c, v the variable of `loop` itself (not a let-bound name).
  void describe_fused_part(const Expr& atom, int loop, IndexTerm* t) const {
    const Div* d = atom.as<Div>();
    const Mod* m = atom.as<Mod>();
    if (!d && !m) return;
    const int64_t* c = as_const_int(d ? d->b : m->b);
    if (!c || *c <= 0) return;
    const LinearForm x = linearize(d ? d->a : m->a);
    if (x.terms.size() != 1 || x.terms[0].coeff != 1) return;
    const Variable* v = x.terms[0].atom.as<Variable>();
    if (!v || find_let(v->name) || find_loop(v->name) != loop) return;
    t->divisor = *c;
    t->offset = x.constant;
    t->remainder = m != nullptr;
  }

  void add_linear(const Expr& e, int64_t scale, IndexForm* f, int depth) {
    LinearForm lf = linearize(e);
    // c * (x / c) + x % c is x (the simplifier folds it too; a nest lowered without
    // it still has the pairs).
    for (const auto& [x, k] : take_quotient_remainder_pairs(&lf))
      if (depth < kMaxLetDepth) add_linear(x, scale * k, f, depth + 1);
    f->constant += scale * lf.constant;
    for (const LinearTerm& t : lf.terms) {
      const int64_t coeff = scale * t.coeff;
      if (const Variable* v = t.atom.as<Variable>()) {
        if (const Expr* let = find_let(v->name); let && depth < kMaxLetDepth) {
          add_linear(*let, coeff, f, depth + 1);
          continue;
        }
        const int l = find_loop(v->name);
        if (l >= 0) add_term(f, l, coeff);
        continue;  // an unknown name: nothing to say about it
      }
      IndexTerm nt;
      nt.coeff = coeff;
      collect_deps(t.atom, &nt.deps, depth);
      std::sort(nt.deps.begin(), nt.deps.end());
      const IntRange r = constant_bounds(t.atom, ranges_);
      if (nt.deps.empty()) {
        if (bounded(r)) f->constant += coeff * r.min;
        continue;
      }
      double product = 1;
      for (int d : nt.deps) product *= double(out_.loops[size_t(d)].extent);
      if (bounded(r)) {
        nt.min_value = r.min;
        nt.max_value = r.max;
        nt.values = std::min(product, double(r.max) - double(r.min) + 1);
      } else {
        nt.min_value = 0;
        nt.max_value = int64_t(std::min(product, 1e15)) - 1;
        nt.values = product;
      }
      const int64_t base = evaluate_at_start(t.atom, -1);
      for (int d : nt.deps) nt.dep_steps.push_back(evaluate_at_start(t.atom, d) - base);
      if (nt.deps.size() == 1) describe_fused_part(t.atom, nt.deps[0], &nt);
      f->terms.push_back(std::move(nt));
    }
  }

  IndexForm form(const Expr& e) {
    IndexForm f;
    add_linear(e, 1, &f, 0);
    f.terms.erase(std::remove_if(f.terms.begin(), f.terms.end(), [](const IndexTerm& t) { return t.coeff == 0; }),
                  f.terms.end());
    return f;
  }

  IndexForm flat_form(int buffer, const std::vector<Expr>& indices) {
    if (indices.size() == 1) return form(indices[0]);
    IndexForm f;
    if (indices.empty()) return f;
    const std::vector<int64_t>& shape = out_.buffers[size_t(buffer)].shape;
    int64_t stride = 1;
    for (size_t d = indices.size(); d-- > 0;) {
      add_linear(indices[d], stride, &f, 0);
      if (d < shape.size()) stride *= shape[d];
    }
    f.terms.erase(std::remove_if(f.terms.begin(), f.terms.end(), [](const IndexTerm& t) { return t.coeff == 0; }),
                  f.terms.end());
    return f;
  }

  // ---- conditions ----

  // The estimated share of the points of its loops at which the guard lets code run.
  double share(const Guard& g) {
    const double f = fraction(g.condition);
    return g.truth ? f : 1 - f;
  }

  // Fraction of the iteration space at which `c` holds.
  double fraction(const Expr& c) {
    if (const int64_t* v = as_const_int(c)) return *v ? 1.0 : 0.0;
    switch (c.kind()) {
      case NodeKind::kAnd: return fraction(c.as<And>()->a) * fraction(c.as<And>()->b);
      case NodeKind::kOr: {
        const double a = fraction(c.as<Or>()->a), b = fraction(c.as<Or>()->b);
        return a + b - a * b;
      }
      case NodeKind::kNot:
        return 1 - fraction(c.as<Not>()->a);
// clang-format off
#define TG_CMP(Node, kind_value) \
  case NodeKind::k##Node: return compare_fraction(c.as<Node>()->a, c.as<Node>()->b, kind_value);
        TG_CMP(LT, 0) TG_CMP(LE, 1) TG_CMP(GT, 2) TG_CMP(GE, 3) TG_CMP(EQ, 4) TG_CMP(NE, 5)
#undef TG_CMP
      default: return 0.5;
        // clang-format on
    }
  }

  // kind: 0 <, 1 <=, 2 >, 3 >=, 4 ==, 5 !=.
  double compare_fraction(const Expr& a, const Expr& b, int kind) {
    if (!a.type().is_int() && !a.type().is_bool()) return 0.5;
    IndexForm d = form(a);
    IndexForm fb = form(b);
    d.constant -= fb.constant;
    for (IndexTerm& t : fb.terms) {
      t.coeff = -t.coeff;
      d.terms.push_back(std::move(t));
    }
    double lo, hi;
    d.value_range(out_.loops, &lo, &hi);  // the range of a - b
    const double n = hi - lo + 1;
    if (!(n > 0) || !std::isfinite(n)) return 0.5;
    auto clamp01 = [](double x) { return std::clamp(x, 0.0, 1.0); };
    switch (kind) {
      case 0: return clamp01((0 - lo) / n);  // a - b <= -1
      case 1: return clamp01((1 - lo) / n);  // a - b <= 0
      case 2: return clamp01((hi - 0) / n);  // a - b >= 1
      case 3: return clamp01((hi + 1) / n);  // a - b >= 0
      case 4: return lo <= 0 && 0 <= hi ? 1 / n : 0.0;
      default: return lo <= 0 && 0 <= hi ? 1 - 1 / n : 1.0;
    }
  }

  // ---- stores ----

  void loads(const Expr& e, double frac, NestStore* s) {
    if (!e.defined()) return;
    switch (e.kind()) {
      case NodeKind::kLoad: {
        const Load* l = e.as<Load>();
        for (const Expr& i : l->indices) loads(i, frac, s);
        const int b = find_buffer(l->name);
        if (b < 0) return;
        NestAccess a;
        a.buffer = b;
        a.kind = AccessKind::kRead;
        a.index = flat_form(b, l->indices);
        a.fraction = frac;
        s->accesses.push_back(std::move(a));
        return;
      }
      case NodeKind::kSelect: {
        const Select* sel = e.as<Select>();
        loads(sel->condition, frac, s);
        if (select_evaluates_both_arms(*sel, sel == store_value_, *inputs_, ranges_)) {
          // The code generator evaluates both arms whatever the condition: their
          // loads run every time (codegen/analysis/speculative_loads.h).
          loads(sel->true_value, frac, s);
          loads(sel->false_value, frac, s);
          return;
        }
        const double f = fraction(sel->condition);
        loads(sel->true_value, frac * f, s);
        loads(sel->false_value, frac * (1 - f), s);
        return;
      }
      case NodeKind::kCast: loads(e.as<Cast>()->value, frac, s); return;
      case NodeKind::kNot: loads(e.as<Not>()->a, frac, s); return;
      case NodeKind::kCall:
        for (const Expr& a : e.as<Call>()->args) loads(a, frac, s);
        return;
      case NodeKind::kRamp:
        loads(e.as<Ramp>()->base, frac, s);
        loads(e.as<Ramp>()->stride, frac, s);
        return;
      case NodeKind::kBroadcast:
        loads(e.as<Broadcast>()->value, frac, s);
        return;
// clang-format off
#define TG_BIN(Node)                    \
  case NodeKind::k##Node:               \
    loads(e.as<Node>()->a, frac, s);    \
    loads(e.as<Node>()->b, frac, s);    \
    return;
        TG_BIN(Add) TG_BIN(Sub) TG_BIN(Mul) TG_BIN(Div) TG_BIN(Mod) TG_BIN(Min) TG_BIN(Max) TG_BIN(EQ) TG_BIN(NE)
        TG_BIN(LT) TG_BIN(LE) TG_BIN(GT) TG_BIN(GE) TG_BIN(And) TG_BIN(Or)
#undef TG_BIN
      default: return;
        // clang-format on
    }
  }

  void store(const Store* st) {
    const int b = find_buffer(st->name);
    if (b < 0) return;  // a malformed nest: nothing to summarize
    NestStore s;
    s.node = st;
    s.buffer = b;
    s.loops = chain_;
    NestAccess w;
    w.buffer = b;
    w.kind = AccessKind::kWrite;
    w.index = flat_form(b, st->indices);
    s.accesses.push_back(std::move(w));
    for (const Expr& i : st->indices) loads(i, 1, &s);
    store_value_ = st->value.as<Select>();
    loads(st->value, 1, &s);
    store_value_ = nullptr;
    for (const Guard& g : guards_) {
      NestStore::Guard one;
      one.fraction = share(g);
      collect_deps(g.condition, &one.loops, 0);
      std::sort(one.loops.begin(), one.loops.end());
      one.loops.erase(std::unique(one.loops.begin(), one.loops.end()), one.loops.end());
      s.fraction *= one.fraction;
      s.guard_loops.insert(s.guard_loops.end(), one.loops.begin(), one.loops.end());
      s.guards.push_back(std::move(one));
    }
    std::sort(s.guard_loops.begin(), s.guard_loops.end());
    s.guard_loops.erase(std::unique(s.guard_loops.begin(), s.guard_loops.end()), s.guard_loops.end());
    out_.stores.push_back(std::move(s));
  }
};

}  // namespace

NestSummary summarize_nest(const LoopNest& nest) {
  NestSummary s;
  // What the runs repeat: a backend does the constant work once, ahead of them. The
  // split shares the nest's statements, so the Store pointers stay the nest's.
  if (std::optional<ConstantWork> work = split_constant_work(nest))
    Summarizer(&s).run(work->main);
  else
    Summarizer(&s).run(nest);
  return s;
}

namespace {

template <class Varies>
Footprint footprint_of(const NestSummary& summary, const NestAccess& access, Varies&& varies, int line_bytes) {
  struct Item {
    double step;
    double count;
  };
  Item items[32];
  int n_items = 0;
  const NestBuffer& buffer = summary.buffers[size_t(access.buffer)];
  const double elem_bytes = buffer.dtype.bytes() * double(buffer.dtype.lanes);
  const double line = line_bytes;
  bool aligned = std::fmod(std::fabs(double(access.index.constant)) * elem_bytes, line) == 0;
  for (const IndexTerm& t : access.index.terms) {
    double step, count = 1;
    if (t.loop >= 0) {
      const NestLoop& L = summary.loops[size_t(t.loop)];
      step = std::fabs(double(t.coeff));
      if (varies(t.loop)) count = double(L.extent);
    } else {
      double product = 1;
      for (int d : t.deps)
        if (varies(d)) product *= double(summary.loops[size_t(d)].extent);
      count = std::min(product, t.values);
      const double spacing = t.values > 1 ? double(t.max_value - t.min_value) / (t.values - 1) : 1.0;
      step = std::fabs(double(t.coeff)) * std::max(1.0, spacing);
    }
    if (std::fmod(step * elem_bytes, line) != 0 && step * elem_bytes >= line) aligned = false;
    if (count > 1 && step > 0 && n_items < 32) items[n_items++] = {step, count};
  }
  std::sort(items, items + n_items, [](const Item& a, const Item& b) { return a.step < b.step; });

  // Lines a contiguous stretch of `elements` covers (aligned stretches start on a
  // line; others anywhere, on average).
  auto dense_lines = [&](double elements) {
    const double bytes = elements * elem_bytes;
    if (aligned) return std::ceil(bytes / line);
    return (bytes - elem_bytes) / line + 1;
  };
  // The pattern grows one term at a time, smallest step first: n copies of the pattern
  // so far, s elements apart. Its lines are the copies' lines, unless the copies are
  // so close that the whole span is denser.
  double run = 1, span = 1, count = 1, run_stride = 0, lines = dense_lines(1);
  for (int i = 0; i < n_items; ++i) {
    const double s = items[i].step, n = items[i].count;
    const double added = s * (n - 1);
    if (s <= run && count == run) {  // extends the contiguous run
      run += added;
      count = run;
      span = run;
      lines = dense_lines(run);
      continue;
    }
    if (s >= span) {  // disjoint copies of the pattern
      count *= n;
    } else {  // overlapping copies
      count = std::min(count * n, span + added);
    }
    if (run_stride == 0) run_stride = s;
    span += added;
    lines = std::min(n * lines, dense_lines(span));
  }
  const double elements = std::min(count, double(std::max<int64_t>(buffer.elements, 1)));
  const double runs = count / run;
  lines = std::min(lines, std::ceil(double(std::max<int64_t>(buffer.elements, 1)) * elem_bytes / line));
  lines = std::max({lines, elements * elem_bytes / line, 1.0});
  Footprint fp;
  fp.elements = std::max(elements, 1.0);
  fp.lines = std::min(lines, fp.elements);
  fp.run = run;
  fp.runs = std::max(runs, 1.0);
  fp.run_stride = run_stride;
  return fp;
}

}  // namespace

Footprint access_footprint(const NestSummary& summary, const NestStore& store, const NestAccess& access, int level,
                           int line_bytes) {
  (void)store;
  return footprint_of(
      summary, access, [&](int loop) { return summary.loops[size_t(loop)].depth >= level; }, line_bytes);
}

Footprint access_footprint(const NestSummary& summary, const NestAccess& access, const std::vector<char>& varying,
                           int line_bytes) {
  return footprint_of(
      summary, access, [&](int loop) { return size_t(loop) < varying.size() && varying[size_t(loop)] != 0; },
      line_bytes);
}

// ---- per-store features --------------------------------------------------------------

namespace {

// Column offsets of the layout.
enum Column : int {
  kOps = 0,   // 16 arithmetic counts
  kVec = 16,  // num, prod, len, 8 positions
  kUnroll = 27,
  kParallel = 38,
  kGpu = 49,      // is_gpu, blockIdx xyz, threadIdx xyz, vthread
  kBuffers = 57,  // 5 x 18
  kCurve = 147,   // 10
  kAlloc = 157,   // size, prod, outer_prod, inner_prod
  kOther = 161,   // outer_prod, num_loops, auto_unroll_max_step
};
constexpr int kPerBuffer = 18;
constexpr int kCurvePoints = 10;
static_assert(kBuffers + kFeatureBuffers * kPerBuffer == kCurve);
static_assert(kOther + 3 == kFeaturesPerStore);

enum OpColumn : int {
  kFloatMad,
  kFloatAddSub,
  kFloatMul,
  kFloatDivMod,
  kFloatCmp,
  kFloatMathFunc,
  kFloatOtherFunc,
  kIntMad,
  kIntAddSub,
  kIntMul,
  kIntDivMod,
  kIntCmp,
  kIntMathFunc,
  kIntOtherFunc,
  kBoolOp,
  kSelectOp,
};

// Annotation positions (Ansor's encoding).
enum Position : int {
  kPosNone,
  kPosInnerSpatial,
  kPosMiddleSpatial,
  kPosOuterSpatial,
  kPosInnerReduce,
  kPosMiddleReduce,
  kPosOuterReduce,
  kPosMixed,
};

enum ReuseType : int { kLoopMultipleRead, kSerialMultipleReadWrite, kNoReuse };
enum AccType : int { kAccRead, kAccWrite, kAccReadWrite };

// Ansor's math-op counter over a whole expression (load indices included), with
// multiply-add detection: an add or subtract with a multiply operand of its type
// counts as one MAD instead of a multiply and an add.
class MathOpCounter {
 public:
  double c[16] = {};

  void count(const Expr& e) {
    if (!e.defined()) return;
    const double lanes = e.type().lanes;
    switch (e.kind()) {
      case NodeKind::kAdd: add_sub(e.as<Add>()->a, e.as<Add>()->b, lanes); return;
      case NodeKind::kSub:
        add_sub(e.as<Sub>()->a, e.as<Sub>()->b, lanes);
        return;
// clang-format off
#define TG_OP(Node, fcol, icol)                                               \
  case NodeKind::k##Node: {                                                   \
    const Node* op = e.as<Node>();                                            \
    c[op->a.type().is_float() ? fcol : icol] += double(op->a.type().lanes);  \
    count(op->a);                                                             \
    count(op->b);                                                             \
    return;                                                                   \
  }
        TG_OP(Mul, kFloatMul, kIntMul)
        TG_OP(Div, kFloatDivMod, kIntDivMod)
        TG_OP(Mod, kFloatDivMod, kIntDivMod)
        TG_OP(Min, kFloatCmp, kIntCmp)
        TG_OP(Max, kFloatCmp, kIntCmp)
        TG_OP(EQ, kFloatCmp, kIntCmp)
        TG_OP(NE, kFloatCmp, kIntCmp)
        TG_OP(LT, kFloatCmp, kIntCmp)
        TG_OP(LE, kFloatCmp, kIntCmp)
        TG_OP(GT, kFloatCmp, kIntCmp)
        TG_OP(GE, kFloatCmp, kIntCmp)
#undef TG_OP
      // clang-format on
      case NodeKind::kAnd:
        c[kBoolOp] += lanes;
        count(e.as<And>()->a);
        count(e.as<And>()->b);
        return;
      case NodeKind::kOr:
        c[kBoolOp] += lanes;
        count(e.as<Or>()->a);
        count(e.as<Or>()->b);
        return;
      case NodeKind::kNot:
        c[kBoolOp] += lanes;
        count(e.as<Not>()->a);
        return;
      case NodeKind::kSelect: {
        const Select* s = e.as<Select>();
        c[kSelectOp] += lanes;
        count(s->condition);
        count(s->true_value);
        count(s->false_value);
        return;
      }
      case NodeKind::kCall: {
        const Call* call = e.as<Call>();
        c[e.type().is_float() ? kFloatMathFunc : kIntMathFunc] += lanes;
        for (const Expr& a : call->args) count(a);
        return;
      }
      case NodeKind::kCast: count(e.as<Cast>()->value); return;
      case NodeKind::kLoad:
        for (const Expr& i : e.as<Load>()->indices) count(i);
        return;
      case NodeKind::kRamp:
        count(e.as<Ramp>()->base);
        count(e.as<Ramp>()->stride);
        return;
      case NodeKind::kBroadcast: count(e.as<Broadcast>()->value); return;
      default: return;
    }
  }

 private:
  void add_sub(const Expr& a, const Expr& b, double lanes) {
    const bool is_float = a.type().is_float();
    const Mul* ma = a.as<Mul>();
    const Mul* mb = b.as<Mul>();
    if (ma || mb) {
      c[is_float ? kFloatMad : kIntMad] += lanes;
      const Mul* m = ma ? ma : mb;
      count(m->a);
      count(m->b);
      count(ma ? b : a);
      return;
    }
    c[is_float ? kFloatAddSub : kIntAddSub] += lanes;
    count(a);
    count(b);
  }
};

float slog(double x, bool log_scale) {
  if (!log_scale) return float(x);
  return float(x < 0 ? -std::log2(1 - x) : std::log2(1 + x));
}

std::string stage_of(const std::string& loop_name) { return loop_name.substr(0, loop_name.find('.')); }

// Ansor's annotation position of `loop` for `store` (see docs/features.md).
int position_of(const NestSummary& S, const NestStore& st, int loop) {
  const IndexForm& w = st.accesses[0].index;
  for (const IndexTerm& t : w.terms)
    if (t.loop < 0 && std::find(t.deps.begin(), t.deps.end(), loop) != t.deps.end()) return kPosMixed;
  const int64_t mine = std::abs(w.stride_of(loop));
  if (mine != 0) {
    bool smaller = false, larger = false;
    for (const IndexTerm& t : w.terms) {
      if (t.loop < 0 || t.loop == loop) continue;
      const int64_t other = std::abs(t.coeff);
      smaller |= other < mine;
      larger |= other > mine;
    }
    if (!smaller) return kPosInnerSpatial;
    if (!larger) return kPosOuterSpatial;
    return kPosMiddleSpatial;
  }
  const std::string& stage = S.buffers[size_t(st.buffer)].name;
  if (stage_of(S.loops[size_t(loop)].name) != stage) return kPosOuterSpatial;
  // A reduction loop of the store's stage: its place among the stage's reduction loops.
  std::vector<int> reduce;
  for (int l : st.loops)
    if (stage_of(S.loops[size_t(l)].name) == stage && !w.depends_on(l)) reduce.push_back(l);
  if (reduce.size() <= 1 || reduce.back() == loop) return kPosInnerReduce;
  if (reduce.front() == loop) return kPosOuterReduce;
  return kPosMiddleReduce;
}

struct Group {
  int buffer = -1;
  int acc_type = kAccRead;
  std::vector<const NestAccess*> accesses;
};

struct Record {
  int buffer;
  double elements;
  double elem_bytes;
};

// The union of a group's accesses at `level`: accesses with the same terms and
// different constants are shifted copies; different terms add up.
Footprint group_footprint(const NestSummary& S, const NestStore& st, const Group& g, int level, int line) {
  Footprint total{0, 0};
  std::vector<bool> done(g.accesses.size(), false);
  for (size_t i = 0; i < g.accesses.size(); ++i) {
    if (done[i]) continue;
    const Footprint fp = access_footprint(S, st, *g.accesses[i], level, line);
    int64_t lo = g.accesses[i]->index.constant, hi = lo;
    int copies = 1;
    for (size_t j = i + 1; j < g.accesses.size(); ++j) {
      const IndexForm& a = g.accesses[i]->index;
      const IndexForm& b = g.accesses[j]->index;
      bool same = a.terms.size() == b.terms.size();
      for (size_t k = 0; same && k < a.terms.size(); ++k) {
        same = a.terms[k].loop == b.terms[k].loop && a.terms[k].coeff == b.terms[k].coeff &&
               a.terms[k].deps == b.terms[k].deps;
      }
      if (!same) continue;
      done[j] = true;
      lo = std::min(lo, b.constant);
      hi = std::max(hi, b.constant);
      ++copies;
    }
    const double extra = std::min(double(hi - lo), (copies - 1) * fp.elements);
    const double scale = (fp.elements + extra) / fp.elements;
    total.elements += fp.elements * scale;
    total.lines += fp.lines * scale;
  }
  const NestBuffer& b = S.buffers[size_t(g.buffer)];
  total.elements = std::min(total.elements, double(std::max<int64_t>(b.elements, 1)));
  total.lines = std::min(total.lines, total.elements);
  return total;
}

}  // namespace

NestFeatures extract_features(const LoopNest& nest, const FeatureOptions& options) {
  const NestSummary S = summarize_nest(nest);
  const int line = std::max(options.cache_line_bytes, 1);
  const bool ls = options.log_scale;
  NestFeatures out;
  out.rows.reserve(S.stores.size());
  std::vector<std::vector<Record>> records(S.loops.size());

  for (const NestStore& st : S.stores) {
    StoreFeatureRow row{};
    const int d = int(st.loops.size());
    double outer_prod = 1;
    for (int l : st.loops) outer_prod *= double(S.loops[size_t(l)].extent);

    // Arithmetic.
    MathOpCounter ops;
    ops.count(st.node->value);
    for (int i = 0; i < 16; ++i) row[size_t(kOps + i)] = slog(ops.c[i] * outer_prod, ls);

    // Vectorize, unroll, parallel.
    auto annotation = [&](ForKind kind, int base) {
      int num = 0, innermost = -1;
      double prod = 1;
      for (int l : st.loops) {
        if (S.loops[size_t(l)].kind != kind) continue;
        ++num;
        prod *= double(S.loops[size_t(l)].extent);
        innermost = l;
      }
      row[size_t(base)] = slog(num, ls);
      row[size_t(base + 1)] = slog(num ? prod : 0, ls);
      row[size_t(base + 2)] = slog(num ? double(S.loops[size_t(innermost)].extent) : 0, ls);
      row[size_t(base + 3 + (num ? position_of(S, st, innermost) : kPosNone))] = 1;
    };
    annotation(ForKind::kVectorized, kVec);
    annotation(ForKind::kUnrolled, kUnroll);
    annotation(ForKind::kParallel, kParallel);
    // GPU: the extents of the loops around the store bound to each launch dimension
    // (zero on the CPU, which binds none).
    for (int l : st.loops) {
      const std::string& tag = S.loops[size_t(l)].thread_tag;
      if (tag.empty()) continue;
      static const char* const kTags[] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z", "threadIdx.x",
                                          "threadIdx.y", "threadIdx.z", "vthread"};
      for (int t = 0; t < 7; ++t)
        if (tag == kTags[t]) row[size_t(kGpu + 1 + t)] = slog(double(S.loops[size_t(l)].extent), ls);
      row[size_t(kGpu)] = 1;
    }

    // Buffer groups: the written buffer first, then reads in order.
    std::vector<Group> groups;
    for (const NestAccess& a : st.accesses) {
      Group* g = nullptr;
      for (Group& x : groups)
        if (x.buffer == a.buffer) g = &x;
      if (!g) {
        groups.push_back({a.buffer, a.kind == AccessKind::kWrite ? kAccWrite : kAccRead, {}});
        g = &groups.back();
      } else if (a.kind == AccessKind::kRead && g->acc_type == kAccWrite) {
        g->acc_type = kAccReadWrite;
      }
      g->accesses.push_back(&a);
    }

    // Touched elements per loop level (innermost first, as Ansor lists them).
    std::vector<double> mem_bytes(size_t(d), 0.0);
    std::vector<std::vector<Footprint>> fps(groups.size(), std::vector<Footprint>(size_t(d + 1)));
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      const NestBuffer& b = S.buffers[size_t(groups[gi].buffer)];
      const double eb = b.dtype.bytes();
      for (int lvl = 0; lvl <= d; ++lvl) fps[gi][size_t(lvl)] = group_footprint(S, st, groups[gi], lvl, line);
      for (int lvl = 0; lvl < d; ++lvl) {
        const double elems = fps[gi][size_t(lvl)].elements;
        records[size_t(st.loops[size_t(lvl)])].push_back({groups[gi].buffer, elems, eb});
        mem_bytes[size_t(lvl)] += elems * eb;
      }
    }

    struct BufferRow {
      float values[kPerBuffer];
      double lines, bytes;
    };
    std::vector<BufferRow> rows;
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      const Group& g = groups[gi];
      const double eb = S.buffers[size_t(g.buffer)].dtype.bytes();
      const double bytes = outer_prod * eb;
      double unique_bytes = eb, lines = 1, unique_lines = 1;
      int64_t stride = 0;
      if (d > 0) {
        unique_bytes = fps[gi][0].elements * eb;
        double reduce_ratio = 1;
        int i;
        for (i = d - 1; i >= 0; --i) {
          const int l = st.loops[size_t(i)];
          int64_t best = 0;
          for (const NestAccess* a : g.accesses) {
            const int64_t s = std::abs(a->index.stride_of(l));
            if (s != 0 && (best == 0 || s < best)) best = s;
          }
          stride = best;
          if (stride != 0) break;
          reduce_ratio *= double(S.loops[size_t(l)].extent);
        }
        lines = outer_prod / reduce_ratio * std::min(1.0, double(stride) * eb / line);
        lines = std::max(lines, 1.0);
        if (i != d - 1) stride = 0;
        unique_lines = std::max(fps[gi][0].lines, 1.0);
      }

      // Reuse (Ansor's rule, walking the loops from the innermost out).
      int reuse_type = kNoReuse;
      double dis_iter = 0, dis_bytes = 0, reuse_ct = 0;
      {
        double iter = 1, dbytes = -1;
        for (int i = d - 1; i >= 0; --i) {
          const int l = st.loops[size_t(i)];
          const double ext = double(S.loops[size_t(l)].extent);
          bool found = false;
          for (const NestAccess* a : g.accesses) found |= a->index.depends_on(l);
          const std::vector<Record>& recs = records[size_t(l)];
          if (found) {
            iter *= ext;
            dbytes = 0;
            for (const Record& r : recs) dbytes += r.elements * r.elem_bytes;
          } else {
            if (dbytes < 0) {
              dbytes = 0;
              for (const Record& r : recs) dbytes += r.elem_bytes;
            }
            reuse_type = kLoopMultipleRead;
            dis_iter = iter;
            dis_bytes = dbytes;
            reuse_ct = ext;
            break;
          }
          int mine = 0;
          double min_elems = std::numeric_limits<double>::infinity(), all_bytes = 0;
          for (const Record& r : recs) {
            all_bytes += r.elements * r.elem_bytes;
            if (r.buffer != g.buffer) continue;
            ++mine;
            min_elems = std::min(min_elems, r.elements);
          }
          if (mine > 1) {
            reuse_type = kSerialMultipleReadWrite;
            dis_iter = min_elems / ext;
            dis_bytes = all_bytes / ext;
            reuse_ct = mine - 1;
            break;
          }
        }
      }

      BufferRow br{};
      br.lines = lines;
      br.bytes = bytes;
      float* v = br.values;
      v[g.acc_type] = 1;
      v[3] = slog(bytes, ls);
      v[4] = slog(unique_bytes, ls);
      v[5] = slog(lines, ls);
      v[6] = slog(unique_lines, ls);
      v[7 + reuse_type] = 1;
      v[10] = slog(dis_iter, ls);
      v[11] = slog(dis_bytes, ls);
      v[12] = slog(reuse_ct, ls);
      const bool reused = reuse_ct > 0.5;
      v[13] = slog(reused ? bytes / reuse_ct : bytes * 2, ls);
      v[14] = slog(reused ? unique_bytes / reuse_ct : unique_bytes * 2, ls);
      v[15] = slog(reused ? lines / reuse_ct : lines * 2, ls);
      v[16] = slog(reused ? unique_lines / reuse_ct : unique_lines * 2, ls);
      v[17] = slog(double(stride), ls);
      rows.push_back(br);
    }
    std::stable_sort(rows.begin(), rows.end(), [](const BufferRow& a, const BufferRow& b) {
      return a.lines > b.lines || (a.lines == b.lines && a.bytes > b.bytes);
    });
    for (size_t i = 0; i < rows.size() && i < size_t(kFeatureBuffers); ++i)
      for (int j = 0; j < kPerBuffer; ++j) row[size_t(kBuffers + int(i) * kPerBuffer + j)] = rows[i].values[j];

    // Arithmetic intensity curve: flops over touched bytes, loop levels from the
    // innermost out, sampled at 10 evenly spaced flop counts.
    {
      double cur = 2 * ops.c[kFloatMad] + ops.c[kFloatAddSub] + ops.c[kFloatMul] + ops.c[kFloatDivMod] +
                   ops.c[kFloatCmp] + ops.c[kFloatMathFunc] + ops.c[kFloatOtherFunc];
      if (cur > 0 && d > 0) {
        std::vector<double> flops, bytes;
        for (int i = d - 1; i >= 0; --i) {
          cur *= double(S.loops[size_t(st.loops[size_t(i)])].extent);
          flops.push_back(cur);
          bytes.push_back(std::max(mem_bytes[size_t(i)], 1.0));
        }
        size_t pt = 0;
        for (int i = 0; i < kCurvePoints; ++i) {
          const double x = flops.back() * (i + 1) / kCurvePoints;
          while (pt + 1 < flops.size() && flops[pt] < x - 1e-4) ++pt;
          double value;
          if (pt == 0) {
            value = flops[0] / bytes[0];
          } else {
            const double base = flops[pt - 1] / bytes[pt - 1];
            const double slope = (flops[pt] / bytes[pt] - base) / (flops[pt] - flops[pt - 1]);
            value = base + slope * (x - flops[pt - 1]);
          }
          row[size_t(kCurve + i)] = slog(value, ls);
        }
      }
    }

    // Allocation (stores into local buffers).
    const NestBuffer& target = S.buffers[size_t(st.buffer)];
    if (target.alloc >= 0) {
      double alloc_outer = 1;
      for (int l : S.allocs[size_t(target.alloc)].loops) alloc_outer *= double(S.loops[size_t(l)].extent);
      row[kAlloc] = slog(double(target.elements) * target.dtype.bytes(), ls);
      row[kAlloc + 1] = slog(double(target.elements) * alloc_outer, ls);
      row[kAlloc + 2] = slog(alloc_outer, ls);
      row[kAlloc + 3] = slog(outer_prod / alloc_outer, ls);
    }

    // Outer scope.
    double unroll_steps = 0;
    for (int l : st.loops) {
      if (S.loops[size_t(l)].kind == ForKind::kUnrolled) {
        unroll_steps = S.loops[size_t(l)].steps;
        break;
      }
    }
    row[kOther] = slog(outer_prod, ls);
    row[kOther + 1] = slog(d, ls);
    row[kOther + 2] = slog(unroll_steps, ls);

    out.rows.push_back(row);
    out.stores.push_back(target.name);
  }
  return out;
}

std::vector<std::string> feature_names() {
  std::vector<std::string> n = {"float_mad",     "float_addsub",    "float_mul",        "float_divmod",
                                "float_cmp",     "float_math_func", "float_other_func", "int_mad",
                                "int_addsub",    "int_mul",         "int_divmod",       "int_cmp",
                                "int_math_func", "int_other_func",  "bool_op",          "select_op"};
  static const char* kPositions[] = {"none",         "inner_spatial", "middle_spatial", "outer_spatial",
                                     "inner_reduce", "middle_reduce", "outer_reduce",   "mixed"};
  for (const char* a : {"vec", "unroll", "parallel"}) {
    n.push_back(std::string(a) + "_num");
    n.push_back(std::string(a) + "_prod");
    n.push_back(std::string(a) + "_len");
    for (const char* p : kPositions) n.push_back(std::string(a) + "_type." + p);
  }
  for (const char* g : {"is_gpu", "blockIdx_x_len", "blockIdx_y_len", "blockIdx_z_len", "threadIdx_x_len",
                        "threadIdx_y_len", "threadIdx_z_len", "vthread_len"})
    n.push_back(g);
  static const char* kBuffer[] = {"acc_type.read",
                                  "acc_type.write",
                                  "acc_type.read_write",
                                  "bytes",
                                  "unique_bytes",
                                  "lines",
                                  "unique_lines",
                                  "reuse_type.loop_multiple_read",
                                  "reuse_type.serial_multiple_read_write",
                                  "reuse_type.no_reuse",
                                  "reuse_dis_iter",
                                  "reuse_dis_bytes",
                                  "reuse_ct",
                                  "bytes_d_reuse_ct",
                                  "unique_bytes_d_reuse_ct",
                                  "lines_d_reuse_ct",
                                  "unique_lines_d_reuse_ct",
                                  "stride"};
  for (int b = 0; b < kFeatureBuffers; ++b)
    for (const char* f : kBuffer) n.push_back(fmt::format("B{}.{}", b, f));
  for (int i = 0; i < kCurvePoints; ++i) n.push_back(fmt::format("arith_intensity_curve_{}", i));
  for (const char* a : {"alloc_size", "alloc_prod", "alloc_outer_prod", "alloc_inner_prod", "outer_prod", "num_loops",
                        "auto_unroll_max_step"})
    n.push_back(a);
  return n;
}

std::vector<float> pool_features(const NestFeatures& features) {
  std::vector<float> out(size_t(kFeaturesFlat), 0.0f);
  const size_t n = features.rows.size();
  if (n == 0) return out;
  for (size_t c = 0; c < size_t(kFeaturesPerStore); ++c) {
    double sum = 0;
    float mx = features.rows[0][c];
    for (const StoreFeatureRow& r : features.rows) {
      sum += r[c];
      mx = std::max(mx, r[c]);
    }
    out[c] = float(sum);
    out[size_t(kFeaturesPerStore) + c] = float(sum / double(n));
    out[size_t(2 * kFeaturesPerStore) + c] = mx;
  }
  out[size_t(3 * kFeaturesPerStore)] = float(std::log2(1.0 + double(n)));
  return out;
}

std::vector<float> features_flat(const LoopNest& nest, const FeatureOptions& options) {
  return pool_features(extract_features(nest, options));
}

std::vector<std::string> features_flat_names() {
  const std::vector<std::string> base = feature_names();
  std::vector<std::string> n;
  n.reserve(size_t(kFeaturesFlat));
  for (const char* p : {"sum.", "mean.", "max."})
    for (const std::string& b : base) n.push_back(p + b);
  n.push_back("num_stores");
  return n;
}

}  // namespace tensorgym
