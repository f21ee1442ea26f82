// Substitutes compute_inline'd stages into their readers: a read S[e0, e1] becomes
// S's expression with S's axes replaced by e0, e1.
#include "codegen/ir/substitute.h"
#include "codegen/schedule/bound_inference.h"

namespace tensorgym {

void inline_bodies(const ScheduleState& state, ScheduleBounds* bounds) {
  std::unordered_map<std::string, const StageSchedule*> inlined;
  for (const StageSchedule& s : state.stages()) {
    Expr body = s.def.body;
    // Producers come first, so their own inlined reads are already expanded.
    for (const auto& [name, producer] : inlined) {
      if (!expr_reads(body, name)) continue;
      const Expr& producer_body = bounds->bodies.at(name);
      body = replace_loads(body, name, [&](const Load* l) {
        VarMap values;
        for (size_t d = 0; d < producer->def.axes.size(); ++d) values[producer->def.axes[d].name] = l->indices[d];
        return substitute(producer_body, values);
      });
    }
    bounds->bodies[s.name()] = body;
    if (s.attach == AttachKind::kInline) {
      inlined[s.name()] = &s;
    } else {
      bounds->stages.push_back(&s);
    }
  }
}

}  // namespace tensorgym
