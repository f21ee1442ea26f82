// Bounds inference: the region each stage must compute. A root stage computes its
// whole domain; a stage computed at a consumer's loop computes what the consumer
// reads while the loops inside that one run (outer loops fixed), clamped into its
// domain with a constant extent so its buffer has a fixed size.
#include "codegen/ir/ir_visitor.h"
#include "codegen/ir/simplify.h"
#include "codegen/ir/substitute.h"
#include "codegen/schedule/bound_inference.h"
#include "codegen/schedule/symbolic_bounds.h"

namespace tensorgym {
namespace {

std::unordered_set<std::string> names_of(const VarMap& m) {
  std::unordered_set<std::string> names;
  for (const auto& [name, value] : m) names.insert(name);
  return names;
}

Region full_region(const StageSchedule& s) {
  Region r;
  r.min.reserve(s.def->axes.size());
  r.min_value.reserve(s.def->axes.size());
  r.extent.reserve(s.def->axes.size());
  for (const IterVar& v : s.def->axes) {
    r.min.push_back(make_int(0));
    r.min_value.push_back(Expr());
    r.extent.push_back(v.extent);
  }
  return r;
}

// The region of `s` its readers use while loop `s.attach_loop` of `c` runs one
// iteration: c's loops inside it vary, and so do all loops of the stages computed
// within it (whose region minimums are rewritten in terms of c's loops).
Region region_needed_at(const ScheduleState& state, const ScheduleBounds& ctx, const StageSchedule& s, const StageSchedule& c) {
  int attach_loop = c.find_loop(s.attach_loop);
  int attach_pos = c.leaf_position(attach_loop);

  RangeScope varying;
  VarMap inner_mins;
  for (size_t p = size_t(attach_pos) + 1; p < c.leaf.size(); ++p) {
    std::string var = ScheduleBounds::loop_var(c, c.loops[size_t(c.leaf[p])]);
    varying[var] = ctx.ranges.at(var);
  }
  for (const StageSchedule* r : ctx.stages) {
    if (r == &c || r == &s) continue;
    auto region_it = ctx.regions.find(r->name());
    if (region_it == ctx.regions.end() || !state.runs_within(*r, c, attach_loop)) continue;
    for (int l : r->leaf) {
      std::string var = ScheduleBounds::loop_var(*r, r->loops[size_t(l)]);
      varying[var] = ctx.ranges.at(var);
    }
    const Region& rr = region_it->second;
    for (size_t d = 0; d < rr.min.size(); ++d)
      if (rr.min_value[d].defined()) inner_mins[ScheduleBounds::min_var(*r, d)] = rr.min_value[d];
  }
  const std::unordered_set<std::string> inner_min_names = names_of(inner_mins);

  size_t n = s.def->axes.size();
  std::vector<SymbolicInterval> dims(n);
  std::vector<bool> unbounded(n, false);
  bool first = true;
  for (const StageSchedule* r : ctx.stages) {
    auto region_it = ctx.regions.find(r->name());
    if (region_it == ctx.regions.end()) continue;
    const Expr& body = ctx.bodies.at(r->name());
    if (!expr_reads(body, s.name())) continue;
    // The reader's root variables in terms of its loops and region minimum.
    const LoopGeometry& g = ctx.geometry.at(r->name());
    const Region& rr = region_it->second;
    VarMap root_values;
    size_t nr = r->def->axes.size();
    for (size_t d = 0; d < nr; ++d) root_values[r->def->axes[d].name] = Add::make(rr.min[d], g.values[d]);
    for (size_t k = 0; k < r->def->reduce_axes.size(); ++k)
      root_values[r->def->reduce_axes[k].name] = Add::make(make_int(r->def->reduce_axes[k].min), g.values[nr + k]);
    visit_exprs(body, [&](const Expr& e) {
      const Load* l = e.as<Load>();
      if (!l || l->name != s.name()) return;
      for (size_t d = 0; d < n; ++d) {
        Expr idx = substitute(l->indices[d], root_values);
        // Minimums of stages nested inside the loop, down to the loop's own variables.
        for (int depth = 0; depth < 16 && uses_any_var(idx, inner_min_names); ++depth)
          idx = substitute(idx, inner_mins);
        idx = simplify(idx, ctx.ranges);
        SymbolicInterval b = symbolic_bounds(idx, varying, ctx.ranges);
        if (!b.bounded()) {
          unbounded[d] = true;
          continue;
        }
        if (first) {
          dims[d] = b;
        } else if (dims[d].bounded()) {
          dims[d] = {Min::make(dims[d].min, b.min), Max::make(dims[d].max, b.max)};
        }
      }
      first = false;
    });
  }

  Region region = full_region(s);
  for (size_t d = 0; d < n; ++d) {
    if (unbounded[d] || !dims[d].bounded()) continue;  // keep the whole domain
    int64_t domain = s.def->axes[d].extent;
    Expr lo = simplify(dims[d].min, ctx.ranges);
    Expr span = simplify(Add::make(Sub::make(dims[d].max, lo), make_int(1)), ctx.ranges);
    int64_t extent = 0;
    if (const int64_t* c = as_const_int(span)) {
      extent = *c;
    } else {
      IntRange r = constant_bounds(span, ctx.ranges);
      if (!r.bounded()) continue;
      extent = r.max;
    }
    if (extent >= domain || extent <= 0) continue;
    // Shift the region inwards at the domain's edges: same size, always in the domain.
    Expr min = simplify(Max::make(make_int(0), Min::make(lo, make_int(domain - extent))), ctx.ranges);
    region.extent[d] = extent;
    if (as_const_int(min)) {
      region.min[d] = min;
    } else {
      region.min[d] = make_var(ScheduleBounds::min_var(s, d));
      region.min_value[d] = min;
    }
  }
  return region;
}

}  // namespace

Expected<ScheduleBounds> infer_bounds(const ScheduleState& state) {
  ScheduleBounds ctx;
  inline_bodies(state, &ctx);
  // Sized up front: these are rebuilt on every lowering.
  size_t num_vars = 0;
  for (const StageSchedule* s : ctx.stages) num_vars += s->leaf.size() + s->def->axes.size();
  ctx.ranges.reserve(num_vars);
  ctx.regions.reserve(ctx.stages.size());
  ctx.geometry.reserve(ctx.stages.size());
  // Consumers before producers: a stage's region depends on its consumer's loops.
  for (auto it = ctx.stages.rbegin(); it != ctx.stages.rend(); ++it) {
    const StageSchedule& s = **it;
    Region region;
    if (s.attach == AttachKind::kAt) {
      const StageSchedule* c = state.find_stage(s.attach_stage);
      if (!c || !ctx.regions.count(c->name()))
        return internal_error("stage " + s.name() + " is computed at " + s.attach_stage + ", which has no loops");
      region = region_needed_at(state, ctx, s, *c);
    } else {
      region = full_region(s);
    }
    for (size_t d = 0; d < region.min.size(); ++d)
      if (region.min_value[d].defined())
        ctx.ranges[ScheduleBounds::min_var(s, d)] = constant_bounds(region.min_value[d], ctx.ranges);

    std::vector<int64_t> root_extents;
    root_extents.reserve(s.loops.size());  // becomes the extents of every loop
    root_extents.assign(region.extent.begin(), region.extent.end());
    for (const IterVar& v : s.def->reduce_axes) root_extents.push_back(v.extent);
    LoopGeometry g =
        loop_geometry(s, std::move(root_extents), [&](const Loop& l) { return ScheduleBounds::loop_var(s, l); });
    // A leaf loop's value is its variable: take the name from there rather than build it again.
    for (int l : s.leaf)
      ctx.ranges.insert_or_assign(g.values[size_t(l)].as<Variable>()->name, IntRange{0, g.extents[size_t(l)] - 1});
    ctx.geometry.emplace(s.name(), std::move(g));
    ctx.regions.emplace(s.name(), std::move(region));
  }
  return ctx;
}

}  // namespace tensorgym
