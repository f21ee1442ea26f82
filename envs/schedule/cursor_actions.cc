#include "envs/schedule/cursor_actions.h"

#include <algorithm>

#include "codegen/schedule/primitive.h"
#include "envs/schedule/naming.h"
#include "support/quote.h"

namespace tensorgym {
namespace {

const std::vector<std::string>& action_names() {
  static const std::vector<std::string> names = {
      "stage_next", "stage_prev", "loop_in",      "loop_out",     "split_2",       "split_4",
      "split_8",    "split_16",   "split_32",     "split_64",     "swap_next",     "fuse_next",
      "vectorize",  "parallel",   "unroll",       "cache_read_0", "cache_read_1",  "cache_read_2",
      "cache_read_3", "cache_write", "compute_at_here", "inline", "root",          "rfactor",
      "storage_align", "auto_unroll_64",
  };
  return names;
}

std::string loop_ref(const StageSchedule& s, int leaf_pos) {
  return s.name() + "." + s.loops[size_t(s.leaf[size_t(leaf_pos)])].name;
}

// The first producer of `s` that may be computed at its loop `leaf_pos` and is not yet.
const StageSchedule* producer_for_here(const ScheduleState& state, const StageSchedule& s, int leaf_pos) {
  int loop = s.leaf[size_t(leaf_pos)];
  for (const std::string& t : state.program().reads_of(s.def)) {
    const StageSchedule* p = state.find_stage(t);
    if (!p || p->is_output || p->attach == AttachKind::kInline) continue;
    if (p->attach == AttachKind::kAt && p->attach_stage == s.name() && p->attach_loop == s.loops[size_t(loop)].name)
      continue;
    bool within = true;
    for (const std::string& r : state.readers_of(p->name())) within &= state.runs_within(*state.find_stage(r), s, loop);
    if (within) return p;
  }
  return nullptr;
}

}  // namespace

Space CursorActions::space() {
  return Space::named_discrete("cursor", action_names())
      .set_description("loop_tool-style cursor actions; see docs/schedule_env.md");
}

const std::vector<std::string>& CursorActions::names() { return action_names(); }

Expected<int64_t> CursorActions::index_of(const std::string& name) {
  const auto& n = action_names();
  auto it = std::find(n.begin(), n.end(), name);
  if (it == n.end()) return not_found("unknown cursor action " + quote_text(name));
  return int64_t(it - n.begin());
}

Cursor CursorActions::normalize(const ScheduleState& state, Cursor c) {
  const StageSchedule* s = c.stage.empty() ? nullptr : state.find_stage(c.stage);
  if (!s) s = &state.stages().front();
  c.stage = s->name();
  c.loop = std::clamp(c.loop, 0, int(s->leaf.size()) - 1);
  return c;
}

std::string CursorActions::describe(const ScheduleState& state, const Cursor& cursor) {
  Cursor c = normalize(state, cursor);
  return loop_ref(*state.find_stage(c.stage), c.loop);
}

Expected<CursorActions::Decision> CursorActions::decide(const ScheduleState& state, const Cursor& cursor,
                                                        int64_t index) {
  if (index < 0 || index >= int64_t(action_names().size()))
    return invalid_argument("action " + std::to_string(index) + " is out of range for cursor (NamedDiscrete of " +
                            std::to_string(action_names().size()) + ")");
  Cursor c = normalize(state, cursor);
  const StageSchedule& s = *state.find_stage(c.stage);
  int si = state.stage_index(s.name());
  const std::string& name = action_names()[size_t(index)];
  const Loop& loop = s.loops[size_t(s.leaf[size_t(c.loop)])];
  Decision d;
  d.next = c;
  auto move_to_stage = [&](int i) {
    d.is_move = true;
    d.next.stage = state.stages()[size_t(i)].name();
    d.next.loop = 0;
  };
  if (name == "stage_next") {
    move_to_stage(std::min(si + 1, int(state.stages().size()) - 1));
  } else if (name == "stage_prev") {
    move_to_stage(std::max(si - 1, 0));
  } else if (name == "loop_in") {
    d.is_move = true;
    d.next.loop = std::min(c.loop + 1, int(s.leaf.size()) - 1);
  } else if (name == "loop_out") {
    d.is_move = true;
    d.next.loop = std::max(c.loop - 1, 0);
  } else if (name.rfind("split_", 0) == 0) {
    d.primitive = {"split", {loop_ref(s, c.loop), name.substr(6), fresh_loop_name(s, loop.name + "_o"),
                             fresh_loop_name(s, loop.name + "_i")}};
  } else if (name == "swap_next") {
    if (c.loop + 1 >= int(s.leaf.size())) return failed_precondition("the cursor's loop " + loop_ref(s, c.loop) + " is innermost");
    d.primitive = {"reorder", {s.name(), s.loops[size_t(s.leaf[size_t(c.loop) + 1])].name, loop.name}};
  } else if (name == "fuse_next") {
    if (c.loop + 1 >= int(s.leaf.size())) return failed_precondition("the cursor's loop " + loop_ref(s, c.loop) + " is innermost");
    const Loop& next = s.loops[size_t(s.leaf[size_t(c.loop) + 1])];
    d.primitive = {"fuse", {loop_ref(s, c.loop), loop_ref(s, c.loop + 1), fresh_loop_name(s, loop.name + "_" + next.name)}};
  } else if (name == "vectorize" || name == "parallel" || name == "unroll") {
    d.primitive = {name, {loop_ref(s, c.loop)}};
  } else if (name.rfind("cache_read_", 0) == 0) {
    size_t t = size_t(name.back() - '0');
    std::vector<std::string> reads = state.program().reads_of(s.def);
    if (t >= reads.size())
      return failed_precondition("stage " + s.name() + " reads " + std::to_string(reads.size()) + " tensors");
    d.primitive = {"cache_read", {reads[t], s.name(), fresh_tensor_name(state, reads[t] + "_" + s.name())}};
  } else if (name == "cache_write") {
    d.primitive = {"cache_write", {s.name(), fresh_tensor_name(state, s.name() + "_local")}};
  } else if (name == "compute_at_here") {
    const StageSchedule* p = producer_for_here(state, s, c.loop);
    if (!p) return failed_precondition("no producer of " + s.name() + " can be computed at " + loop_ref(s, c.loop));
    d.primitive = {"compute_at", {p->name(), loop_ref(s, c.loop)}};
  } else if (name == "inline") {
    d.primitive = {"compute_inline", {s.name()}};
  } else if (name == "root") {
    d.primitive = {"compute_root", {s.name()}};
  } else if (name == "rfactor") {
    d.primitive = {"rfactor", {loop_ref(s, c.loop), fresh_tensor_name(state, s.name() + "_rf")}};
  } else if (name == "storage_align") {
    // The dimension of the stage's buffer the cursor's loop came from, when it is one.
    int axis = -1;
    for (size_t a = 0; a < s.def->axes.size(); ++a)
      if (s.def->axes[a].name == loop.name) axis = int(a);
    if (axis < 0) return failed_precondition("the cursor's loop " + loop_ref(s, c.loop) + " is not a dimension of " + s.name());
    d.primitive = {"storage_align", {s.name() + "." + loop.name, "16", "1"}};
  } else if (name == "auto_unroll_64") {
    d.primitive = {"pragma", {loop_ref(s, c.loop), "auto_unroll_max_step", "64"}};
  }
  return d;
}

std::vector<int64_t> CursorActions::mask(const ScheduleState& state, const Cursor& cursor) {
  std::vector<int64_t> m(action_names().size(), 0);
  Cursor c = normalize(state, cursor);
  for (size_t i = 0; i < m.size(); ++i) {
    Expected<Decision> d = decide(state, c, int64_t(i));
    if (!d.ok()) continue;
    if (d->is_move) {
      m[i] = d->next.stage != c.stage || d->next.loop != c.loop;
      continue;
    }
    // Apply on a copy: the cursor space is small enough to check exactly.
    const PrimitiveInfo* info = find_primitive(d->primitive.name);
    ScheduleState copy = state;
    PrimitiveResult r = info->apply(copy, d->primitive.args);
    m[i] = r.ok() && *r == ApplyEffect::kChanged && validate_state(copy).ok();
  }
  return m;
}

}  // namespace tensorgym
