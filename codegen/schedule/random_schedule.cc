#include "codegen/schedule/random_schedule.h"

#include <algorithm>
#include <string>

namespace tensorgym {
namespace {

const std::vector<int64_t> kFactors = {2, 3, 4, 5, 8, 16};

std::string loop_ref(const StageSchedule& s, int loop) { return s.name() + "." + s.loops[size_t(loop)].name; }

std::string random_leaf(const StageSchedule& s, Rng& rng) { return loop_ref(s, rng.pick(s.leaf)); }

}  // namespace

Primitive propose_random_primitive(const ScheduleState& state, Rng& rng, int fresh_id) {
  const auto& stages = state.stages();
  const StageSchedule& s = stages[size_t(rng.below(stages.size()))];
  std::string id = std::to_string(fresh_id);
  std::string factor = std::to_string(rng.pick(kFactors));
  Primitive p;
  // Weighted choice of the primitive kind.
  static const std::vector<std::pair<const char*, int>> kWeights = {
      {"split", 20},        {"reorder", 10},       {"fuse", 5},      {"tile", 5},     {"vectorize", 8},
      {"parallel", 8},      {"unroll", 6},         {"cache_read", 6}, {"cache_write", 5}, {"compute_at", 14},
      {"compute_inline", 6}, {"compute_root", 3},  {"rfactor", 4},   {"storage_align", 3}, {"pragma", 3}, {"reorder_storage", 3}};
  int total = 0;
  for (const auto& [name, w] : kWeights) total += w;
  int r = int(rng.below(uint64_t(total)));
  for (const auto& [name, w] : kWeights) {
    if (r < w) {
      p.name = name;
      break;
    }
    r -= w;
  }

  if (p.name == "split") {
    p.args = {random_leaf(s, rng), factor, "o" + id, "i" + id};
  } else if (p.name == "reorder") {
    std::vector<int> leaf = s.leaf;
    for (size_t i = leaf.size(); i > 1; --i) std::swap(leaf[i - 1], leaf[size_t(rng.below(i))]);
    p.args = {s.name()};
    size_t n = std::min<size_t>(leaf.size(), size_t(rng.range(2, 4)));
    for (size_t i = 0; i < n; ++i) p.args.push_back(s.loops[size_t(leaf[i])].name);
  } else if (p.name == "fuse") {
    size_t pos = size_t(rng.below(s.leaf.size()));
    size_t next = std::min(pos + 1, s.leaf.size() - 1);
    p.args = {loop_ref(s, s.leaf[pos]), loop_ref(s, s.leaf[next]), "f" + id};
  } else if (p.name == "tile") {
    p.args = {random_leaf(s, rng), random_leaf(s, rng), factor, std::to_string(rng.pick(kFactors)),
              "xo" + id, "yo" + id, "xi" + id, "yi" + id};
  } else if (p.name == "vectorize" || p.name == "parallel" || p.name == "unroll") {
    // Vectorize and unroll are most useful on the inner loops.
    size_t pos = p.name == "parallel" ? 0 : s.leaf.size() - 1;
    if (rng.chance(0.4)) pos = size_t(rng.below(s.leaf.size()));
    p.args = {loop_ref(s, s.leaf[pos])};
  } else if (p.name == "cache_read") {
    std::vector<std::string> reads = state.program().reads_of(s.def);
    std::string tensor = reads.empty() ? s.name() : rng.pick(reads);
    p.args = {tensor, s.name(), tensor + "_r" + id};
  } else if (p.name == "cache_write") {
    p.args = {s.name(), s.name() + "_w" + id};
  } else if (p.name == "compute_at") {
    std::vector<std::string> readers = state.readers_of(s.name());
    if (readers.empty()) {
      p.args = {s.name(), random_leaf(s, rng)};
    } else {
      const StageSchedule* c = state.find_stage(rng.pick(readers));
      // Sometimes go one level further out, to the stage the reader is computed at.
      if (c->attach == AttachKind::kAt && rng.chance(0.3)) c = state.find_stage(c->attach_stage);
      p.args = {s.name(), random_leaf(*c, rng)};
    }
  } else if (p.name == "compute_inline" || p.name == "compute_root") {
    p.args = {s.name()};
  } else if (p.name == "rfactor") {
    std::vector<int> reduce_leaves;
    for (int l : s.leaf)
      if (s.loops[size_t(l)].is_reduce) reduce_leaves.push_back(l);
    int l = reduce_leaves.empty() ? rng.pick(s.leaf) : rng.pick(reduce_leaves);
    p.args = {loop_ref(s, l), s.name() + "_rf" + id};
  } else if (p.name == "storage_align") {
    const IterVar& axis = s.def->axes[size_t(rng.below(s.def->axes.size()))];
    int64_t f = rng.pick(kFactors);
    p.args = {s.name() + "." + axis.name, std::to_string(f), std::to_string(rng.below(uint64_t(f)))};
  } else if (p.name == "reorder_storage") {
    std::vector<std::string> axes;
    for (const IterVar& v : s.def->axes) axes.push_back(v.name);
    for (size_t i = axes.size(); i > 1; --i) std::swap(axes[i - 1], axes[size_t(rng.below(i))]);
    p.args = {s.name()};
    p.args.insert(p.args.end(), axes.begin(), axes.end());
  } else {
    p.args = {random_leaf(s, rng), "auto_unroll_max_step", std::to_string(rng.pick(std::vector<int64_t>{4, 16, 64}))};
  }
  return p;
}

int apply_random_primitives(Schedule& schedule, Rng& rng, int steps, int max_attempts) {
  int applied = 0;
  for (int attempt = 0; attempt < max_attempts && applied < steps; ++attempt) {
    Primitive p = propose_random_primitive(schedule.state(), rng, int(schedule.trace_length()) * 100 + attempt);
    PrimitiveResult r = schedule.apply(p);
    if (r.ok() && *r == ApplyEffect::kChanged) ++applied;
  }
  return applied;
}

}  // namespace tensorgym
