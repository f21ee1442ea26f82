#include "codegen/schedule/schedule_state.h"

#include <algorithm>
#include <cassert>

namespace tensorgym {

StageSchedule make_stage_schedule(StageDef def, StageOrigin origin) {
  StageSchedule s;
  s.origin = origin;
  for (const IterVar& v : def.axes) s.loops.push_back(Loop{v.name, v.extent, false});
  for (const IterVar& v : def.reduce_axes) s.loops.push_back(Loop{v.name, v.extent, true});
  for (int i = 0; i < int(s.loops.size()); ++i) s.leaf.push_back(i);
  s.def = std::move(def);
  return s;
}

int StageSchedule::find_loop(std::string_view n) const {
  for (int i = 0; i < int(loops.size()); ++i)
    if (loops[size_t(i)].name == n) return i;
  return -1;
}

int StageSchedule::leaf_position(int loop) const {
  for (int i = 0; i < int(leaf.size()); ++i)
    if (leaf[size_t(i)] == loop) return i;
  return -1;
}

void StageSchedule::drop_reduce_loops() {
  std::vector<int> remap(loops.size(), -1);
  std::vector<Loop> kept;
  for (size_t i = 0; i < loops.size(); ++i) {
    if (loops[i].is_reduce) continue;
    remap[i] = int(kept.size());
    kept.push_back(std::move(loops[i]));
  }
  auto map = [&](int l) { return l < 0 ? -1 : remap[size_t(l)]; };
  std::vector<LoopRelation> rels;
  for (LoopRelation r : relations) {
    int any = r.kind == LoopRelation::kSplit ? r.parent : r.outer;
    if (remap[size_t(any)] < 0) continue;  // a relation among reduction loops
    r.parent = map(r.parent);
    r.outer = map(r.outer);
    r.inner = map(r.inner);
    r.fused = map(r.fused);
    rels.push_back(r);
  }
  std::vector<int> new_leaf;
  for (int l : leaf)
    if (remap[size_t(l)] >= 0) new_leaf.push_back(remap[size_t(l)]);
  loops = std::move(kept);
  relations = std::move(rels);
  leaf = std::move(new_leaf);
  def.mutate().reduce_axes.clear();
}

ScheduleState::ScheduleState(ProgramPtr program) : program_(std::move(program)) {
  for (const StageDef& def : program_->stages) {
    stages_.push_back(make_stage_schedule(def, StageOrigin::kProgram));
    stages_.back().is_output = program_->is_output(def.name);
  }
}

StageSchedule* ScheduleState::find_stage(std::string_view name) {
  int i = stage_index(name);
  return i < 0 ? nullptr : &stages_[size_t(i)];
}

const StageSchedule* ScheduleState::find_stage(std::string_view name) const {
  int i = stage_index(name);
  return i < 0 ? nullptr : &stages_[size_t(i)];
}

int ScheduleState::stage_index(std::string_view name) const {
  for (int i = 0; i < int(stages_.size()); ++i)
    if (stages_[size_t(i)].def->name == name) return i;
  return -1;
}

bool ScheduleState::has_tensor(std::string_view name) const {
  return program_->find_input(name) != nullptr || stage_index(name) >= 0;
}

DataType ScheduleState::dtype_of(std::string_view name) const {
  if (const TensorInput* t = program_->find_input(name)) return t->dtype;
  const StageSchedule* s = find_stage(name);
  assert(s);
  return s->def->dtype;
}

std::vector<int64_t> ScheduleState::shape_of(std::string_view name) const {
  if (const TensorInput* t = program_->find_input(name)) return t->shape;
  const StageSchedule* s = find_stage(name);
  assert(s);
  return s->def->shape();
}

std::vector<std::string> ScheduleState::readers_of(std::string_view tensor) const {
  std::vector<std::string> out;
  for (const StageSchedule& s : stages_) {
    if (!expr_reads(s.def->body, tensor)) continue;
    if (s.attach != AttachKind::kInline) {
      out.push_back(s.def->name);
      continue;
    }
    // An inlined stage's reads happen in its own readers.
    for (std::string& r : readers_of(s.def->name))
      if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(std::move(r));
  }
  return out;
}

bool ScheduleState::runs_within(const StageSchedule& reader, const StageSchedule& stage, int loop) const {
  const StageSchedule* r = &reader;
  for (size_t depth = 0; depth <= stages_.size(); ++depth) {
    if (r == &stage) return true;
    if (r->attach != AttachKind::kAt) return false;
    const StageSchedule* at = find_stage(r->attach_stage);
    if (!at) return false;
    if (at == &stage) {
      int l = at->find_loop(r->attach_loop);
      return l >= 0 && stage.leaf_position(l) >= stage.leaf_position(loop);
    }
    r = at;
  }
  return false;
}

std::vector<std::string> ScheduleState::attached_at(std::string_view stage) const {
  std::vector<std::string> out;
  for (const StageSchedule& s : stages_)
    if (s.attach == AttachKind::kAt && s.attach_stage == stage) out.push_back(s.def->name);
  return out;
}

}  // namespace tensorgym
