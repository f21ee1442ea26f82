#include "envs/schedule/primitive_actions.h"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/schedule/action_helpers.h"

namespace tensorgym {
namespace {

constexpr int S = PrimitiveActions::kMaxStages;

// One block of the flat space: a primitive's `flat` or `flat_more` choices.
struct FlatBlock {
  const PrimitiveDef* def;
  const FlatActions* flat;
  int slots;      // per stage: leaf loops (kMaxLoops) or 1
  int per_stage;  // slots * choices
  int64_t offset;
};

// Every primitive's first block in table order, then their further blocks: a new
// block always starts after the existing ones.
const std::vector<FlatBlock>& blocks() {
  static const std::vector<FlatBlock> b = [] {
    std::vector<FlatBlock> out;
    int64_t offset = 0;
    for (FlatActions PrimitiveDef::*which : {&PrimitiveDef::flat, &PrimitiveDef::flat_more})
      for (const PrimitiveDef* p : all_primitives()) {
        const FlatActions& f = p->*which;
        if (f.slots == ActionSlots::kNone) continue;
        int slots = f.slots == ActionSlots::kLoops ? PrimitiveActions::kMaxLoops : 1;
        out.push_back(FlatBlock{p, &f, slots, slots * f.choices, offset});
        offset += int64_t(S) * out.back().per_stage;
      }
    return out;
  }();
  return b;
}

struct Decoded {
  const FlatBlock* block;
  int stage, slot, choice;
};

bool decode_index(int64_t index, Decoded* d) {
  if (index < 0) return false;
  for (const FlatBlock& b : blocks()) {
    int64_t n = int64_t(S) * b.per_stage;
    if (index < b.offset + n) {
      int64_t rest = index - b.offset;
      d->block = &b;
      d->stage = int(rest / b.per_stage);
      rest %= b.per_stage;
      d->slot = int(rest / b.flat->choices);
      d->choice = int(rest % b.flat->choices);
      return true;
    }
  }
  return false;
}

}  // namespace

Space PrimitiveActions::space() {
  return Space::discrete("primitives", size())
      .set_description("flat (primitive, stage, loop, choice) index; see docs/schedule_env.md");
}

int64_t PrimitiveActions::size() {
  static const int64_t n = blocks().back().offset + int64_t(S) * blocks().back().per_stage;
  return n;
}

std::string PrimitiveActions::describe(int64_t index) {
  Decoded d;
  if (!decode_index(index, &d)) return "out of range";
  std::string s = fmt::format("{}(stage {}", d.block->def->name, d.stage);
  if (d.block->slots > 1) fmt::format_to(std::back_inserter(s), ", loop {}", d.slot);
  if (d.block->flat->choices > 1) fmt::format_to(std::back_inserter(s), ", choice {}", d.choice);
  return s + ")";
}

Expected<BoundPrimitive> PrimitiveActions::decode(const ScheduleState& state, int64_t index) {
  Decoded d;
  if (!decode_index(index, &d))
    return invalid_argument(fmt::format("action {} is out of range for primitives (Discrete({}))", index, size()));
  TG_RETURN_IF_ERROR(action_stage(state, d.block->def->name, d.stage).status());
  TG_ASSIGN_OR_RETURN(PrimitiveArgs args, d.block->flat->make(state, d.stage, d.slot, d.choice));
  return BoundPrimitive{d.block->def, std::move(args)};
}

std::vector<int64_t> PrimitiveActions::mask(const ScheduleState& state, TargetKind target) {
  std::vector<int64_t> m(size_t(size()), 0);
  int ns = std::min<int>(int(state.stages().size()), S);
  for (const FlatBlock& b : blocks()) {
    if (!b.def->offered_on(target)) continue;
    for (int si = 0; si < ns; ++si)
      b.flat->mask(state, si,
                       std::span<int64_t>(m.data() + b.offset + int64_t(si) * b.per_stage, size_t(b.per_stage)),
                       target);
  }
  return m;
}

}  // namespace tensorgym
