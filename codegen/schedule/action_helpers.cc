#include "codegen/schedule/action_helpers.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace tensorgym {
namespace {

std::vector<int64_t> proper_divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t i = 2; i * i <= n; ++i) {
    if (n % i) continue;
    d.push_back(i);
    if (i != n / i) d.push_back(n / i);
  }
  std::sort(d.begin(), d.end());
  return d;
}

}  // namespace

std::array<int64_t, kSplitChoices> split_factors(int64_t extent) {
  static constexpr std::array<int64_t, 6> kPowers = {2, 4, 8, 16, 32, 64};
  std::array<int64_t, kSplitChoices> f{};
  for (size_t c = 0; c < kPowers.size(); ++c) f[c] = kPowers[c] < extent ? kPowers[c] : 0;
  std::vector<int64_t> d = proper_divisors(extent);
  for (size_t q = 1; q <= 3 && !d.empty(); ++q) {
    size_t i = std::min(d.size() - 1, size_t(std::floor(double(d.size() - 1) * double(q) / 4.0 + 0.5)));
    f[kPowers.size() + q - 1] = d[i];
  }
  return f;
}

bool has_attached_at(const ScheduleState& state, const StageSchedule& stage, int loop) {
  const std::string& name = stage.loops[size_t(loop)].name;
  for (const StageSchedule& t : state.stages())
    if (t.attach == AttachKind::kAt && t.attach_stage == stage.name() && t.attach_loop == name) return true;
  return false;
}

bool inside_vectorized(const StageSchedule& s, size_t p) {
  for (size_t q = 0; q <= p; ++q)
    if (s.loops[size_t(s.leaf[q])].kind == ForKind::kVectorized) return true;
  return false;
}

Expected<const StageSchedule*> action_stage(const ScheduleState& state, std::string_view action, int stage) {
  const auto& stages = state.stages();
  if (stage >= int(stages.size()))
    return invalid_argument(
        fmt::format("{} action names stage {} but the schedule has {} stages", action, stage, stages.size()));
  return &stages[size_t(stage)];
}

Expected<int> action_leaf(const StageSchedule& s, std::string_view action, int pos) {
  if (pos >= int(s.leaf.size()))
    return invalid_argument(
        fmt::format("{} action names loop {} of {}, which has {} loops", action, pos, s.name(), s.leaf.size()));
  return s.leaf[size_t(pos)];
}

int random_leaf(const StageSchedule& s, Rng& rng) { return rng.pick(s.leaf); }

Expected<PrimitiveArgs> leaf_loop_at_slot(const ScheduleState& state, std::string_view action, int stage, int slot) {
  TG_ASSIGN_OR_RETURN(int loop, action_leaf(state.stages()[size_t(stage)], action, slot));
  return PrimitiveArgs{PrimitiveArg::of_loop(stage, loop)};
}

Expected<PrimitiveArgs> leaf_loop_at_cursor(const ScheduleState& state, int stage, int pos, int) {
  return PrimitiveArgs{PrimitiveArg::of_loop(stage, state.stages()[size_t(stage)].leaf[size_t(pos)])};
}

PrimitiveArgs propose_leaf_loop(const ScheduleState& state, int stage, Rng& rng, FavouredLoop favoured) {
  const StageSchedule& s = state.stages()[size_t(stage)];
  size_t pos = favoured == FavouredLoop::kOutermost ? 0 : s.leaf.size() - 1;
  if (rng.chance(0.4)) pos = size_t(rng.below(s.leaf.size()));
  return {PrimitiveArg::of_loop(stage, s.leaf[pos])};
}

}  // namespace tensorgym
