#include "codegen/schedule/random_schedule.h"

#include <string>

namespace tensorgym {

BoundPrimitive propose_random_primitive(const ScheduleState& state, Rng& rng, int fresh_id) {
  static const std::vector<int64_t> kFactors = {2, 3, 4, 5, 8, 16};
  int stage = int(rng.below(state.stages().size()));
  std::string id = std::to_string(fresh_id);
  int64_t factor = rng.pick(kFactors);
  // Weighted choice of the primitive.
  static const int total = [] {
    int t = 0;
    for (const PrimitiveDef* p : all_primitives()) t += p->random.weight;
    return t;
  }();
  int r = int(rng.below(uint64_t(total)));
  for (const PrimitiveDef* p : all_primitives()) {
    if (r < p->random.weight) return BoundPrimitive{p, p->random.propose(state, stage, rng, id, factor)};
    r -= p->random.weight;
  }
  return {};  // unreachable: r < total
}

int apply_random_primitives(Schedule& schedule, Rng& rng, int steps, int max_attempts) {
  int applied = 0;
  for (int attempt = 0; attempt < max_attempts && applied < steps; ++attempt) {
    BoundPrimitive p = propose_random_primitive(schedule.state(), rng, int(schedule.trace_length()) * 100 + attempt);
    PrimitiveResult r = schedule.apply(p);
    if (r.ok() && *r == ApplyEffect::kChanged) ++applied;
  }
  return applied;
}

}  // namespace tensorgym
