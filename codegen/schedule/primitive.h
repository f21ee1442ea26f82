// Schedule primitives. Each lives in its own file and is registered once, as one
// PrimitiveDef in primitive_table.cc: its name, the kinds of its arguments, its
// precondition check and its apply, and how the action spaces and random schedules
// offer it. Arguments are typed handles (a stage, a loop, an integer, ...); text exists
// only at a trace's edge (primitive_text.h binds text to handles and prints them back).
// The Schedule checks and applies a primitive on a copy of the state, so an error
// never leaves a half-applied change behind.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/schedule/schedule_state.h"
#include "support/random.h"
#include "support/status.h"

namespace tensorgym {

// Whether a valid primitive changed the state (reorder into the current order, or
// parallel on a loop that is already parallel, have no effect).
enum class ApplyEffect : uint8_t { kChanged, kNoEffect };
using PrimitiveResult = Expected<ApplyEffect>;

enum class ArgKind : uint8_t {
  kStage,        // "C": a stage of the schedule (not an input)
  kLoop,         // "C.i": a leaf loop of a stage
  kAnyLoop,      // "C.i": any loop of a stage, split or fused away or not
  kLeafOfStage,  // "i": a leaf loop of the stage in argument 0
  kDimOfStage,   // "i": a buffer dimension (spatial axis) of the stage in argument 0
  kTensor,       // "A": an input or a stage
  kInt,          // an integer in [min, max]
  kNewLoop,      // the name of a loop the primitive makes
  kNewTensor,    // the name of a stage the primitive makes
  kWord,         // one of a fixed list of words
};

struct ArgSpec {
  ArgKind kind;
  std::string_view what = {};                   // kInt, kWord: what messages call it
  int64_t min = 0;                              // kInt
  int64_t max = 0;                              // kInt
  std::span<const std::string_view> words = {};  // kWord
  std::string_view known = {};                  // kWord: the words as messages list them
  bool optional = false;                        // may be left out (trailing arguments only)
};

// One argument, bound to a state: indices into that state (or a copy of it).
struct PrimitiveArg {
  int stage = -1;     // kStage, kLoop, kAnyLoop, kLeafOfStage, kDimOfStage; kTensor: -1 for an input
  int loop = -1;      // kLoop, kAnyLoop, kLeafOfStage: the loop's index in its stage
  int64_t value = 0;  // kInt; kWord: index in the words; kDimOfStage: the axis; kTensor: input index
  std::string name;   // kNewLoop, kNewTensor

  static PrimitiveArg of_stage(int stage) { return PrimitiveArg{stage, -1, 0, {}}; }
  static PrimitiveArg of_loop(int stage, int loop) { return PrimitiveArg{stage, loop, 0, {}}; }
  static PrimitiveArg of_int(int64_t v) { return PrimitiveArg{-1, -1, v, {}}; }
  static PrimitiveArg of_name(std::string n) { return PrimitiveArg{-1, -1, 0, std::move(n)}; }
};
using PrimitiveArgs = std::vector<PrimitiveArg>;

using CheckFn = Status (*)(const ScheduleState& state, const PrimitiveArgs& args);
// Runs after check() passed on the same state and arguments.
using ApplyFn = PrimitiveResult (*)(ScheduleState& state, const PrimitiveArgs& args);

// Bounds of the action spaces (the same on every benchmark).
inline constexpr int kActionMaxStages = 8;
inline constexpr int kActionMaxLoops = 12;
inline constexpr int kActionMaxReads = 4;

// The kinds of target a schedule is for: a CPU (loops on a thread pool, vectors), a GPU
// (loops bound to blocks and threads, memory scopes) or an accelerator (loops mapped
// onto its compute core, on-chip buffers). Environments offer a primitive, and each
// choice of it, only where it means something for the episode's target.
enum class TargetKind : uint8_t { kCpu = 1, kGpu = 2, kAccelerator = 4 };
inline constexpr uint8_t kAnyTarget = 1 | 2 | 4;
const char* target_kind_name(TargetKind kind);  // "cpu", "gpu", "accelerator"

// What one slot of a stage in the flat `primitives` action space stands for.
enum class ActionSlots : uint8_t {
  kNone,   // not in the flat space
  kLoops,  // one per leaf loop (kActionMaxLoops), each with `choices`
  kStage,  // `choices` per stage
};

// How the flat action space offers a primitive: per stage, slots x choices entries.
struct FlatActions {
  ActionSlots slots = ActionSlots::kNone;
  int choices = 1;
  // The arguments of entry (stage, slot, choice), or INVALID_ARGUMENT when the state
  // has no such loop or choice.
  Expected<PrimitiveArgs> (*make)(const ScheduleState& state, int stage, int slot, int choice) = nullptr;
  // Sets row[slot * choices + choice] to 1 for the entries of `stage` that pass cheap
  // checks mirroring check() (computed on every observed mask, so no trial applies),
  // and that mean something on a target of that kind.
  void (*mask)(const ScheduleState& state, int stage, std::span<int64_t> row, TargetKind target) = nullptr;
};

// How the cursor action space offers a primitive: named actions at the cursor (a leaf
// position of a stage), variant = the action's index among `names`.
struct CursorActionsDef {
  std::span<const std::string_view> names = {};
  Expected<PrimitiveArgs> (*make)(const ScheduleState& state, int stage, int leaf_pos, int variant) = nullptr;
  // The kinds of target (TargetKind bits) its cursor actions are offered on, within the
  // primitive's own (pragma's auto_unroll: not the accelerator's).
  uint8_t targets = kAnyTarget;
  bool offered_on(TargetKind kind) const { return (targets & uint8_t(kind)) != 0; }
};

// How random schedules propose a primitive: `weight` among all, and arguments drawn
// for `stage` (they may still fail the check). `factor` is a split factor already drawn.
struct RandomProposal {
  int weight = 0;
  PrimitiveArgs (*propose)(const ScheduleState& state, int stage, Rng& rng, const std::string& id,
                           int64_t factor) = nullptr;
};

struct PrimitiveDef {
  std::string_view name;
  std::string_view usage;    // "split(STAGE.loop, factor, outer, inner)"
  std::string_view summary;  // what it does (the reference table in docs/schedule_primitives.md)
  std::string_view rejects;  // when it is rejected (the same table)
  std::span<const ArgSpec> args;
  bool variadic = false;  // the last kind repeats, at least once
  CheckFn check = nullptr;
  ApplyFn apply = nullptr;
  FlatActions flat = {};
  // More choices for the flat space, added after every primitive's `flat` block so that
  // no existing index moves (pragma's dma_copy, set_scope's accelerator buffers).
  FlatActions flat_more = {};
  CursorActionsDef cursor = {};
  RandomProposal random = {};
  // The kinds of target it belongs to (TargetKind bits): environments offer and apply
  // it only there (parallel: CPUs; bind: GPUs and accelerators' virtual threads).
  uint8_t targets = kAnyTarget;
  bool offered_on(TargetKind kind) const { return (targets & uint8_t(kind)) != 0; }

  int min_args() const {
    int n = int(args.size());
    while (n > 0 && args[size_t(n) - 1].optional) --n;
    return n;
  }
  int max_args() const { return variadic ? -1 : int(args.size()); }
  const ArgSpec& spec(size_t i) const { return args[std::min(i, args.size() - 1)]; }
};

// Every primitive, in the order of primitive_table.cc (the order of the action spaces).
std::span<const PrimitiveDef* const> all_primitives();
const PrimitiveDef* find_primitive(std::string_view name);

// Checks, then applies; what the Schedule does (without validate_state).
PrimitiveResult check_and_apply(const PrimitiveDef& def, ScheduleState& state, const PrimitiveArgs& args);

// Limits that keep generated code sane.
inline constexpr int64_t kMaxVectorLanes = 64;
inline constexpr int64_t kMaxUnrollExtent = 256;
inline constexpr int64_t kMaxLoopExtent = (int64_t(1) << 31) - 1;

// Checks the invariants every state keeps (attachments point at leaf loops of the one
// consumer, vectorized loops are innermost, ...). The Schedule runs it after each
// primitive and rejects the primitive when it fails.
Status validate_state(const ScheduleState& state);

}  // namespace tensorgym
