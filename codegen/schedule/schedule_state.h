// The state a schedule trace builds: per stage, its loops (the root axes and every loop
// split/fuse made from them), the relations between them, the leaf order, loop
// annotations, where the stage is computed, and its storage layout. Derived entirely
// from (program, trace); lowering reads it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "codegen/ir/program.h"
#include "codegen/ir/stmt.h"
#include "support/copy_on_write.h"

namespace tensorgym {

struct Loop {
  std::string name;
  int64_t extent = 0;  // over the stage's whole domain; lowering recomputes it per region
  bool is_reduce = false;
  ForKind kind = ForKind::kSerial;
  std::string thread_tag;                                // bind(): blockIdx.x, threadIdx.x, ...
  std::vector<std::pair<std::string, int64_t>> pragmas;  // pragma(): auto_unroll_max_step
};

// split: parent -> (outer, inner) by factor; fuse: (outer, inner) -> fused.
struct LoopRelation {
  enum Kind : uint8_t { kSplit, kFuse } kind;
  int parent = -1;  // split's input
  int outer = -1;
  int inner = -1;
  int fused = -1;   // fuse's output
  int64_t factor = 0;
  bool operator==(const LoopRelation&) const = default;
};

enum class AttachKind : uint8_t { kRoot, kInline, kAt };

struct StorageAlign {
  int axis = 0;  // spatial axis index of the stage
  int64_t factor = 0;
  int64_t offset = 0;
  bool operator==(const StorageAlign&) const = default;
};

// Where a stage came from (for messages and for deciding what may be done to it).
enum class StageOrigin : uint8_t { kProgram, kCacheRead, kCacheWrite, kRFactor };

struct StageSchedule {
  // What the stage computes, after cache/rfactor rewrites; shared between the copies
  // of a schedule state until a primitive rewrites it (def.mutate()).
  CopyOnWrite<StageDef> def;
  StageOrigin origin = StageOrigin::kProgram;
  bool is_output = false;
  // loops[0 .. axes) are the spatial root axes, then the reduce root axes, in the
  // order of def.axes and def.reduce_axes; derived loops follow.
  std::vector<Loop> loops;
  std::vector<int> leaf;  // leaf loops, outermost first
  std::vector<LoopRelation> relations;
  AttachKind attach = AttachKind::kRoot;
  std::string attach_stage;  // kAt: the consumer whose loop computes this stage
  std::string attach_loop;   // kAt: that loop's name
  std::vector<StorageAlign> aligns;
  // The buffer's dimensions from outermost to innermost in memory (reorder_storage);
  // empty means the axes' own order (row-major).
  std::vector<int> storage_order;
  // Where its buffer lives on a GPU (set_scope; cache_read / cache_write's scope).
  MemoryScope scope = MemoryScope::kAuto;

  const std::string& name() const { return def->name; }
  int find_loop(std::string_view name) const;  // -1 when absent
  int leaf_position(int loop) const;           // -1 when not a leaf
  int num_root_loops() const { return int(def->axes.size() + def->reduce_axes.size()); }
  // The spatial axis stored innermost (contiguous).
  int innermost_storage_axis() const {
    return storage_order.empty() ? int(def->axes.size()) - 1 : storage_order.back();
  }

  // Removes every reduction loop (roots and the loops split or fused from them) and
  // the relations between them. cache_write and rfactor move the reduction elsewhere.
  void drop_reduce_loops();
};

class ScheduleState {
 public:
  ScheduleState() = default;
  // The unscheduled state: every program stage computed at root with its root loops in
  // the order of its axes, spatial first.
  explicit ScheduleState(ProgramPtr program);

  const Program& program() const { return *program_; }
  const ProgramPtr& program_ptr() const { return program_; }

  std::vector<StageSchedule>& stages() { return stages_; }
  const std::vector<StageSchedule>& stages() const { return stages_; }
  StageSchedule* find_stage(std::string_view name);
  const StageSchedule* find_stage(std::string_view name) const;
  int stage_index(std::string_view name) const;

  // An input or a stage.
  bool has_tensor(std::string_view name) const;
  DataType dtype_of(std::string_view name) const;
  std::vector<int64_t> shape_of(std::string_view name) const;

  // Stages that read `tensor`, looking through inlined stages to where they are used.
  std::vector<std::string> readers_of(std::string_view tensor) const;
  // Whether `reader` runs inside loop `loop` of `stage`: it is `stage` itself, or it
  // is computed (directly or through other stages) at `loop` or a loop inside it.
  bool runs_within(const StageSchedule& reader, const StageSchedule& stage, int loop) const;
  // Stages attached at some loop of `stage`.
  std::vector<std::string> attached_at(std::string_view stage) const;

 private:
  ProgramPtr program_;
  std::vector<StageSchedule> stages_;  // producers before consumers
};

// Builds the schedule of a new stage defined by `def`: root loops from its axes.
StageSchedule make_stage_schedule(StageDef def, StageOrigin origin);

}  // namespace tensorgym
