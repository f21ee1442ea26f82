#include "codegen/analysis/working_set.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "codegen/ir/interval.h"
#include "codegen/ir/ir_equality.h"
#include "codegen/ir/ir_mutator.h"
#include "codegen/ir/linear_form.h"

namespace tensorgym {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// What encloses an access, outermost first.
struct ChainItem {
  enum Kind : uint8_t { kLoop, kLet, kCond } kind = kLoop;
  int loop_id = -1;            // kLoop
  const For* loop = nullptr;   // kLoop
  const std::string* name = nullptr;  // kLet
  Expr expr;                   // kLet: the value; kCond: the condition
  bool truth = true;           // kCond
};

struct Binding {
  std::string name;
  DataType dtype;
  int64_t elements = 0;
  int alloc = -1;  // index into allocs, or -1 for an argument
};

struct Access {
  int binding = -1;
  Expr index;  // flat, with Ramp lanes replaced by lane variables
  std::vector<std::pair<std::string, int>> lanes;
  std::vector<ChainItem> chain;
  int64_t seq = 0;
};

struct AllocRecord {
  int binding = -1;
  std::vector<int> loops;  // enclosing loop ids
  int64_t seq = 0;
};

struct LoopRecord {
  const For* loop = nullptr;
  int depth = 0;
  std::vector<ChainItem> chain;  // what encloses the loop
};

// Replaces Ramp(base, stride, lanes) by base + stride * <laneK> and Broadcast(v) by v,
// so interval arithmetic sees a scalar index with one more (inner) variable.
class LaneScalarizer : public IRMutator {
 public:
  std::vector<std::pair<std::string, int>> lanes;

 protected:
  Expr visit(const Ramp* op) override {
    Expr base = mutate(op->base), stride = mutate(op->stride);
    std::string name = "<lane" + std::to_string(lanes.size()) + ">";
    lanes.push_back({name, op->lanes});
    return Add::make(base, Mul::make(stride, Variable::make(base.type(), name)));
  }
  Expr visit(const Broadcast* op) override { return mutate(op->value); }
};

class Collector {
 public:
  std::vector<Binding> bindings;
  std::vector<Access> accesses;
  std::vector<AllocRecord> allocs;
  std::vector<LoopRecord> loops;

  void run(const LoopNest& nest) {
    for (const BufferArg& a : nest.inputs) add_arg(a);
    for (const BufferArg& a : nest.outputs) add_arg(a);
    if (nest.body.defined()) stmt(nest.body);
  }

 private:
  void add_arg(const BufferArg& a) {
    bindings.push_back({a.name, a.dtype, num_elements_of(a.shape), -1});
    scope_.push_back({a.name, int(bindings.size()) - 1});
  }

  static int64_t num_elements_of(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }

  int find(const std::string& name) const {
    for (size_t i = scope_.size(); i-- > 0;)
      if (scope_[i].first == name) return scope_[i].second;
    return -1;
  }

  std::vector<int> enclosing_loops() const {
    std::vector<int> ids;
    for (const ChainItem& c : chain_)
      if (c.kind == ChainItem::kLoop) ids.push_back(c.loop_id);
    return ids;
  }

  // The flat index of an access (multi-dimensional ones are flattened row-major
  // against the buffer's shape, so an unflattened nest still gets an estimate).
  Expr flat_index(int binding, const std::vector<Expr>& indices) const {
    if (indices.size() == 1) return indices[0];
    if (indices.empty()) return make_int(0);
    std::vector<int64_t> dims;
    if (bindings[size_t(binding)].alloc < 0) {
      dims = arg_shapes_[size_t(binding)];
    } else {
      dims = alloc_extents_[size_t(bindings[size_t(binding)].alloc)];
    }
    if (dims.size() != indices.size()) return indices[0];
    Expr flat = indices[0];
    for (size_t d = 1; d < indices.size(); ++d) {
      DataType t = flat.type();
      flat = Add::make(Mul::make(flat, IntImm::make(t, dims[d])), indices[d]);
    }
    return flat;
  }

  void record(const std::string& name, const std::vector<Expr>& indices) {
    const int b = find(name);
    if (b < 0) return;  // a malformed nest; nothing to estimate
    Access a;
    a.binding = b;
    LaneScalarizer lanes;
    a.index = lanes.mutate(flat_index(b, indices));
    a.lanes = std::move(lanes.lanes);
    a.chain = chain_;
    a.seq = seq_++;
    accesses.push_back(std::move(a));
  }

  void expr(const Expr& e) {
    if (!e.defined()) return;
    switch (e.kind()) {
      case NodeKind::kLoad: {
        const Load* l = e.as<Load>();
        record(l->name, l->indices);
        for (const Expr& i : l->indices) expr(i);
        return;
      }
      case NodeKind::kSelect: {
        const Select* s = e.as<Select>();
        expr(s->condition);
        with_cond(s->condition, true, [&] { expr(s->true_value); });
        with_cond(s->condition, false, [&] { expr(s->false_value); });
        return;
      }
      case NodeKind::kCast: expr(e.as<Cast>()->value); return;
      case NodeKind::kNot: expr(e.as<Not>()->a); return;
      case NodeKind::kCall:
        for (const Expr& a : e.as<Call>()->args) expr(a);
        return;
      case NodeKind::kRamp:
        expr(e.as<Ramp>()->base);
        expr(e.as<Ramp>()->stride);
        return;
      case NodeKind::kBroadcast: expr(e.as<Broadcast>()->value); return;
#define TG_WS_BINARY(Node)       \
  case NodeKind::k##Node:        \
    expr(e.as<Node>()->a);       \
    expr(e.as<Node>()->b);       \
    return;
        TG_WS_BINARY(Add) TG_WS_BINARY(Sub) TG_WS_BINARY(Mul) TG_WS_BINARY(Div) TG_WS_BINARY(Mod)
        TG_WS_BINARY(Min) TG_WS_BINARY(Max) TG_WS_BINARY(EQ) TG_WS_BINARY(NE) TG_WS_BINARY(LT)
        TG_WS_BINARY(LE) TG_WS_BINARY(GT) TG_WS_BINARY(GE) TG_WS_BINARY(And) TG_WS_BINARY(Or)
#undef TG_WS_BINARY
      default: return;
    }
  }

  template <class F>
  void with_cond(const Expr& c, bool truth, F&& f) {
    ChainItem item;
    item.kind = ChainItem::kCond;
    item.expr = c;
    item.truth = truth;
    chain_.push_back(item);
    f();
    chain_.pop_back();
  }

  void stmt(const Stmt& s) {
    if (!s.defined()) return;
    switch (s.kind()) {
      case NodeKind::kFor: {
        const For* f = s.as<For>();
        expr(f->min);
        expr(f->extent);
        const int id = int(loops.size());
        int depth = 0;
        for (const ChainItem& c : chain_) depth += c.kind == ChainItem::kLoop;
        loops.push_back({f, depth, chain_});
        ChainItem item;
        item.kind = ChainItem::kLoop;
        item.loop_id = id;
        item.loop = f;
        chain_.push_back(item);
        stmt(f->body);
        chain_.pop_back();
        return;
      }
      case NodeKind::kLetStmt: {
        const LetStmt* l = s.as<LetStmt>();
        expr(l->value);
        ChainItem item;
        item.kind = ChainItem::kLet;
        item.name = &l->name;
        item.expr = l->value;
        chain_.push_back(item);
        stmt(l->body);
        chain_.pop_back();
        return;
      }
      case NodeKind::kIfThenElse: {
        const IfThenElse* i = s.as<IfThenElse>();
        expr(i->condition);
        with_cond(i->condition, true, [&] { stmt(i->then_case); });
        if (i->else_case.defined()) with_cond(i->condition, false, [&] { stmt(i->else_case); });
        return;
      }
      case NodeKind::kAllocate: {
        const Allocate* a = s.as<Allocate>();
        allocs.push_back({int(bindings.size()), enclosing_loops(), seq_++});
        alloc_extents_.push_back(a->extents);
        bindings.push_back({a->name, a->dtype, a->num_elements(), int(allocs.size()) - 1});
        arg_shapes_.emplace_back();
        scope_.push_back({a->name, int(bindings.size()) - 1});
        stmt(a->body);
        scope_.pop_back();
        return;
      }
      case NodeKind::kStore: {
        const Store* st = s.as<Store>();
        for (const Expr& i : st->indices) expr(i);
        expr(st->value);
        record(st->name, st->indices);
        return;
      }
      case NodeKind::kBlock:
        for (const Stmt& c : s.as<Block>()->stmts) stmt(c);
        return;
      default: return;
    }
  }

 public:
  // Shapes of argument bindings (indexed by binding; empty for allocations).
  void set_arg_shapes(const LoopNest& nest) {
    for (const BufferArg& a : nest.inputs) arg_shapes_.push_back(a.shape);
    for (const BufferArg& a : nest.outputs) arg_shapes_.push_back(a.shape);
  }

 private:
  std::vector<ChainItem> chain_;
  std::vector<std::pair<std::string, int>> scope_;
  std::vector<std::vector<int64_t>> arg_shapes_;
  std::vector<std::vector<int64_t>> alloc_extents_;
  int64_t seq_ = 0;
};

bool has_empty_range(const RangeScope& scope) {
  for (const auto& [name, r] : scope)
    if (r.min > r.max) return true;
  return false;
}

double range_count(IntRange r) {
  if (!r.bounded()) return kInf;
  return double(r.max) - double(r.min) + 1;
}

int64_t add_sat(int64_t a, int64_t b) {
  if (a == IntRange::kNegInf || a == IntRange::kPosInf) return a;
  if (b == IntRange::kNegInf || b == IntRange::kPosInf) return b;
  __int128 s = __int128(a) + b;
  if (s >= IntRange::kPosInf) return IntRange::kPosInf;
  if (s <= IntRange::kNegInf) return IntRange::kNegInf;
  return int64_t(s);
}

// The scope in which an access under loop `target` is estimated (see the header).
// Returns false when the access cannot happen at the fixed outer point.
struct AccessScope {
  RangeScope ranges;
  std::unordered_map<std::string, double> varying;  // variable -> number of values
  std::unordered_map<std::string, Expr> lets;
};

bool build_scope(const std::vector<ChainItem>& chain, int target, AccessScope* s) {
  bool fixed = true;
  for (const ChainItem& item : chain) {
    switch (item.kind) {
      case ChainItem::kLoop: {
        const For* f = item.loop;
        if (item.loop_id == target) fixed = false;
        const IntRange rmin = constant_bounds(f->min, s->ranges);
        const IntRange rext = constant_bounds(f->extent, s->ranges);
        if (rext.max <= 0) return false;  // never runs
        s->lets.erase(f->name);
        if (fixed) {
          s->ranges[f->name] = rmin.min == IntRange::kNegInf ? IntRange::everything() : IntRange::point(rmin.min);
          s->varying.erase(f->name);
        } else {
          IntRange r{rmin.min, add_sat(rmin.max, add_sat(rext.max, -1))};
          s->ranges[f->name] = r;
          s->varying[f->name] = range_count(r);
        }
        break;
      }
      case ChainItem::kLet:
        s->ranges[*item.name] = constant_bounds(item.expr, s->ranges);
        s->lets[*item.name] = item.expr;
        s->varying.erase(*item.name);
        break;
      case ChainItem::kCond: {
        const IntRange c = constant_bounds(item.expr, s->ranges);
        if (c.is_point() && (c.min != 0) != item.truth) return false;
        narrow_by_condition(item.expr, item.truth, &s->ranges);
        if (has_empty_range(s->ranges)) return false;
        break;
      }
    }
  }
  return true;
}

// Variables of `e` after linearize, with let-bound names expanded.
void collect_vars(const Expr& e, const AccessScope& s, std::unordered_set<std::string>* vars,
                  std::unordered_set<std::string>* expanded) {
  LinearForm f = linearize(e);
  for (const LinearTerm& t : f.terms) {
    visit_exprs(t.atom, [&](const Expr& x) {
      const Variable* v = x.as<Variable>();
      if (!v) return;
      auto let = s.lets.find(v->name);
      if (let != s.lets.end()) {
        if (expanded->insert(v->name).second) collect_vars(let->second, s, vars, expanded);
      } else {
        vars->insert(v->name);
      }
    });
  }
}

struct BufferAgg {
  bool present = false;
  int64_t first_seq = 0;
  int64_t lo = IntRange::kPosInf, hi = IntRange::kNegInf;
  bool unbounded = false;
  double product = 0;
  std::vector<Expr> seen;
  bool allocated_inside = false;
};

}  // namespace

std::vector<LoopWorkingSet> loop_working_sets(const LoopNest& nest) {
  Collector c;
  c.set_arg_shapes(nest);
  c.run(nest);

  std::vector<LoopWorkingSet> result;
  result.reserve(c.loops.size());
  for (int L = 0; L < int(c.loops.size()); ++L) {
    const LoopRecord& loop = c.loops[size_t(L)];
    LoopWorkingSet ws;
    ws.loop = loop.loop->name;
    ws.depth = loop.depth;
    {
      AccessScope outer;
      const bool runs = build_scope(loop.chain, -1, &outer);
      const IntRange ext = constant_bounds(loop.loop->extent, outer.ranges);
      ws.extent = !runs ? 0 : ext.max == IntRange::kPosInf ? -1 : std::max<int64_t>(ext.max, 0);
    }

    std::vector<BufferAgg> agg(c.bindings.size());
    for (const AllocRecord& a : c.allocs) {
      if (std::find(a.loops.begin(), a.loops.end(), L) == a.loops.end()) continue;
      BufferAgg& g = agg[size_t(a.binding)];
      g.present = true;
      g.allocated_inside = true;
      g.first_seq = a.seq;
    }
    for (const Access& a : c.accesses) {
      bool under = false;
      for (const ChainItem& item : a.chain) under |= item.kind == ChainItem::kLoop && item.loop_id == L;
      if (!under) continue;
      BufferAgg& g = agg[size_t(a.binding)];
      if (g.allocated_inside) continue;
      AccessScope s;
      if (!build_scope(a.chain, L, &s)) continue;
      for (const auto& [name, lanes] : a.lanes) {
        s.ranges[name] = {0, lanes - 1};
        s.varying[name] = lanes;
      }
      if (!g.present) {
        g.present = true;
        g.first_seq = a.seq;
      }
      const IntRange r = constant_bounds(a.index, s.ranges);
      if (r.bounded()) {
        g.lo = std::min(g.lo, r.min);
        g.hi = std::max(g.hi, r.max);
      } else {
        g.unbounded = true;
      }
      bool duplicate = false;
      for (const Expr& e : g.seen) duplicate |= structural_equal(e, a.index);
      if (duplicate) continue;
      g.seen.push_back(a.index);
      std::unordered_set<std::string> vars, expanded;
      collect_vars(a.index, s, &vars, &expanded);
      double product = 1;
      for (const std::string& v : vars) {
        auto it = s.varying.find(v);
        if (it != s.varying.end()) product *= it->second;
      }
      g.product += product;
    }

    std::vector<int> order;
    for (int b = 0; b < int(agg.size()); ++b)
      if (agg[size_t(b)].present) order.push_back(b);
    std::sort(order.begin(), order.end(),
              [&](int x, int y) { return agg[size_t(x)].first_seq < agg[size_t(y)].first_seq; });
    for (int b : order) {
      const BufferAgg& g = agg[size_t(b)];
      const Binding& binding = c.bindings[size_t(b)];
      BufferFootprint fp;
      fp.buffer = binding.name;
      fp.allocated_inside = g.allocated_inside;
      if (g.allocated_inside) {
        fp.elements = binding.elements;
      } else {
        double span = g.unbounded || g.hi < g.lo ? kInf : double(g.hi) - double(g.lo) + 1;
        if (g.hi < g.lo && !g.unbounded) span = 0;
        const double est = std::min({span, g.product, double(binding.elements)});
        fp.elements = int64_t(est);
      }
      fp.bytes = fp.elements * binding.dtype.bytes();
      ws.total_bytes += fp.bytes;
      ws.buffers.push_back(std::move(fp));
    }
    result.push_back(std::move(ws));
  }
  return result;
}

}  // namespace tensorgym
