#include "envs/schedule/cursor_actions.h"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/schedule/primitive.h"
#include "support/quote.h"

namespace tensorgym {
namespace {

constexpr std::string_view kMoves[] = {"stage_next", "stage_prev", "loop_in", "loop_out"};

// The primitive and variant of each action after the moves.
struct CursorEntry {
  const PrimitiveDef* def;
  int variant;
};

const std::vector<CursorEntry>& entries() {
  static const std::vector<CursorEntry> e = [] {
    std::vector<CursorEntry> out;
    for (const PrimitiveDef* p : all_primitives())
      for (size_t v = 0; v < p->cursor.names.size(); ++v) out.push_back({p, int(v)});
    return out;
  }();
  return e;
}

const std::vector<std::string>& action_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out(std::begin(kMoves), std::end(kMoves));
    for (const CursorEntry& e : entries()) out.emplace_back(e.def->cursor.names[size_t(e.variant)]);
    return out;
  }();
  return names;
}

constexpr int64_t kNumMoves = int64_t(std::size(kMoves));

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
  const StageSchedule& s = *state.find_stage(c.stage);
  return s.name() + "." + s.loops[size_t(s.leaf[size_t(c.loop)])].name;
}

Expected<CursorActions::Decision> CursorActions::decide(const ScheduleState& state, const Cursor& cursor,
                                                        int64_t index) {
  if (index < 0 || index >= int64_t(action_names().size()))
    return invalid_argument(
        fmt::format("action {} is out of range for cursor (NamedDiscrete of {})", index, action_names().size()));
  Cursor c = normalize(state, cursor);
  const StageSchedule& s = *state.find_stage(c.stage);
  int si = state.stage_index(s.name());
  Decision d;
  d.next = c;
  if (index < kNumMoves) {
    d.is_move = true;
    switch (index) {
      case 0: d.next.stage = state.stages()[size_t(std::min(si + 1, int(state.stages().size()) - 1))].name(); break;
      case 1: d.next.stage = state.stages()[size_t(std::max(si - 1, 0))].name(); break;
      case 2: d.next.loop = std::min(c.loop + 1, int(s.leaf.size()) - 1); break;
      case 3: d.next.loop = std::max(c.loop - 1, 0); break;
    }
    if (index < 2) d.next.loop = 0;
    return d;
  }
  const CursorEntry& e = entries()[size_t(index - kNumMoves)];
  TG_ASSIGN_OR_RETURN(PrimitiveArgs args, e.def->cursor.make(state, si, c.loop, e.variant));
  d.primitive = BoundPrimitive{e.def, std::move(args)};
  return d;
}

std::vector<int64_t> CursorActions::mask(const ScheduleState& state, const Cursor& cursor, TargetKind target) {
  std::vector<int64_t> m(action_names().size(), 0);
  Cursor c = normalize(state, cursor);
  for (size_t i = 0; i < m.size(); ++i) {
    Expected<Decision> d = decide(state, c, int64_t(i));
    if (!d.ok()) continue;
    if (d->is_move) {
      m[i] = d->next.stage != c.stage || d->next.loop != c.loop;
      continue;
    }
    const PrimitiveDef& def = *d->primitive.def;
    if (!def.offered_on(target) || !def.cursor.offered_on(target)) continue;
    // Check and apply on a copy: the cursor space is small enough to be exact.
    ScheduleState copy = state;
    PrimitiveResult r = check_and_apply(*d->primitive.def, copy, d->primitive.args);
    m[i] = r.ok() && *r == ApplyEffect::kChanged && validate_state(copy).ok();
  }
  return m;
}

}  // namespace tensorgym
