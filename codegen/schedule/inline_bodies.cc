// Substitutes compute_inline'd stages into their readers: a read S[e0, e1] becomes
// S's expression with S's axes replaced by e0, e1.
#include "codegen/ir/substitute.h"
#include "codegen/schedule/bound_inference.h"

namespace tensorgym {

void inline_bodies(const ScheduleState& state, ScheduleBounds* bounds) {
  // Inlined stages with their expanded bodies. Each expanded body reads no inlined
  // stage, so the order they are substituted in does not matter.
  std::vector<std::pair<const StageSchedule*, Expr>> inlined;
  bounds->bodies.reserve(state.stages().size());
  bounds->stages.reserve(state.stages().size());
  for (const StageSchedule& s : state.stages()) {
    Expr body = s.def->body;
    // Producers come first, so their own inlined reads are already expanded.
    for (const auto& [producer, producer_body] : inlined) {
      const std::string& name = producer->name();
      if (!expr_reads(body, name)) continue;
      body = replace_loads(body, name, [&](const Load* l) {
        VarMap values;
        for (size_t d = 0; d < producer->def->axes.size(); ++d) values[producer->def->axes[d].name] = l->indices[d];
        return substitute(producer_body, values);
      });
    }
    if (s.attach == AttachKind::kInline) {
      inlined.emplace_back(&s, body);
    } else {
      bounds->stages.push_back(&s);
    }
    bounds->bodies.emplace(s.name(), std::move(body));
  }
}

}  // namespace tensorgym
