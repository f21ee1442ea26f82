// Bounds inference: the region of its domain each stage computes, and the loops that
// cover that region. Lowering builds loop nests from it; the schedule uses it to check
// loop extents (unroll, vectorize) as they will be once stages are computed at loops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "codegen/ir/interval.h"
#include "codegen/schedule/loop_geometry.h"
#include "codegen/schedule/schedule_state.h"

namespace tensorgym {

// The part of a stage's domain it computes: per spatial axis a minimum (an expression
// of enclosing loop variables when computed inside a consumer's loop) and a constant
// extent. Reduction axes always cover their whole range.
struct Region {
  std::vector<Expr> min;        // a constant, or the variable min_var() naming it
  std::vector<Expr> min_value;  // what that variable is bound to (undefined for constants)
  std::vector<int64_t> extent;
};

// Per-stage data keyed by stage name, with the lookups of an unordered_map. A program
// has a handful of stages and bounds inference runs on every lowering: a flat list
// searched by name is cheaper to build, search and free than a hash map. Entries keep
// their insertion order and addresses while nothing is added.
template <class T>
class StageMap {
 public:
  using value_type = std::pair<std::string, T>;
  using iterator = typename std::vector<value_type>::iterator;
  using const_iterator = typename std::vector<value_type>::const_iterator;

  iterator begin() { return entries_.begin(); }
  iterator end() { return entries_.end(); }
  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  void reserve(size_t n) { entries_.reserve(n); }

  iterator find(std::string_view name) { return begin() + ptrdiff_t(index_of(name)); }
  const_iterator find(std::string_view name) const { return begin() + ptrdiff_t(index_of(name)); }
  size_t count(std::string_view name) const { return index_of(name) < size() ? 1 : 0; }
  const T& at(std::string_view name) const {
    size_t i = index_of(name);
    if (i == size()) throw std::out_of_range("StageMap::at: no stage " + std::string(name));
    return entries_[i].second;
  }
  T& at(std::string_view name) { return const_cast<T&>(std::as_const(*this).at(name)); }
  // Like unordered_map::emplace: keeps the value of a name already present.
  std::pair<iterator, bool> emplace(std::string_view name, T value) {
    if (size_t i = index_of(name); i < size()) return {begin() + ptrdiff_t(i), false};
    entries_.emplace_back(std::string(name), std::move(value));
    return {end() - 1, true};
  }

 private:
  // The position of `name`, or size() when absent.
  size_t index_of(std::string_view name) const {
    size_t i = 0;
    while (i < entries_.size() && entries_[i].first != name) ++i;
    return i;
  }
  std::vector<value_type> entries_;
};

// Refers into the ScheduleState it was inferred from; keep that alive.
struct ScheduleBounds {
  std::vector<const StageSchedule*> stages;      // stages with buffers, producers first
  StageMap<Expr> bodies;  // every stage's body, inlined stages substituted
  StageMap<Region> regions;
  StageMap<LoopGeometry> geometry;  // loops over each region
  // Ranges of every loop variable and region-minimum variable.
  RangeScope ranges;

  // The variable of a stage's loop in the lowered nest: "C.io".
  static std::string loop_var(const StageSchedule& s, const Loop& l) { return s.name() + "." + l.name; }
  // The variable holding a region's minimum along an axis: "P.h.min".
  static std::string min_var(const StageSchedule& s, size_t axis) {
    return s.name() + "." + s.def.axes[axis].name + ".min";
  }
  // The extent of a stage's loop over its region.
  int64_t loop_extent(const StageSchedule& s, int loop) const { return geometry.at(s.name()).extents[size_t(loop)]; }
};

Expected<ScheduleBounds> infer_bounds(const ScheduleState& state);

// Step one of infer_bounds: stage bodies with compute_inline'd stages substituted,
// and the stages that keep a buffer (inline_bodies.cc).
void inline_bodies(const ScheduleState& state, ScheduleBounds* bounds);

}  // namespace tensorgym
