// The `cursor` action space, in the style of loop_tool: a cursor points at one loop of
// one stage; a small set of named actions moves it or transforms what it points at.
// Actions that move the cursor change no schedule; the others map to one primitive:
// after the four moves come the registered primitives' cursor actions, in the order of
// the primitive table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/schedule/primitive_text.h"
#include "codegen/schedule/schedule_state.h"
#include "codegen/schedule/trace.h"
#include "spaces/space.h"

namespace tensorgym {

struct Cursor {
  std::string stage;  // empty: the first stage
  int loop = 0;       // leaf position in that stage
};

class CursorActions {
 public:
  static Space space();
  static const std::vector<std::string>& names();

  // The cursor made valid for `state` (the stage exists, the position is in range).
  static Cursor normalize(const ScheduleState& state, Cursor c);

  // What an action does at `cursor`: a move (the new cursor) or a primitive.
  struct Decision {
    bool is_move = false;
    Cursor next;
    BoundPrimitive primitive;
  };
  static Expected<Decision> decide(const ScheduleState& state, const Cursor& cursor, int64_t index);
  // The index of an action name (NOT_FOUND when unknown).
  static Expected<int64_t> index_of(const std::string& name);

  // 1 where the action is likely applicable at the cursor.
  // Only primitives of the episode's kind of target (no parallel on a GPU, ...).
  static std::vector<int64_t> mask(const ScheduleState& state, const Cursor& cursor,
                                   TargetKind target = TargetKind::kCpu);

  // "C.io" (stage.loop) for observations.
  static std::string describe(const ScheduleState& state, const Cursor& cursor);
};

}  // namespace tensorgym
