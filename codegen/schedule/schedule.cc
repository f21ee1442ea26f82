#include "codegen/schedule/schedule.h"

#include <fmt/format.h>

#include "support/quote.h"

namespace tensorgym {

Schedule::Schedule(ProgramPtr program) : state_(std::move(program)) {}

Schedule::TraceNode::~TraceNode() {
  // Destroying the predecessors one at a time, instead of through nested destructors.
  std::shared_ptr<const TraceNode> p = std::move(const_cast<std::shared_ptr<const TraceNode>&>(prev));
  while (p && p.use_count() == 1) {
    std::shared_ptr<const TraceNode> next = std::move(const_cast<std::shared_ptr<const TraceNode>&>(p->prev));
    p = std::move(next);
  }
}

const Trace& Schedule::trace() const {
  static const Trace kEmpty;
  if (!last_) return kEmpty;
  std::shared_ptr<const Trace> t = std::atomic_load(&materialized_);
  if (!t) {
    auto built = std::make_shared<Trace>();
    built->steps.resize(last_->length);
    size_t i = last_->length;
    for (const TraceNode* n = last_.get(); n; n = n->prev.get()) built->steps[--i] = n->primitive;
    t = built;
    std::atomic_store(&materialized_, t);
  }
  return *t;
}

Expected<Schedule> Schedule::from_text(ProgramPtr program, std::string_view trace_text) {
  Schedule s(std::move(program));
  TG_RETURN_IF_ERROR(s.apply_text(trace_text));
  return s;
}

namespace {

Status with_text(const Primitive& text, const Status& st) {
  return Status(st.code(), excerpt_text(text.to_string()) + ": " + st.message());
}

}  // namespace

PrimitiveResult Schedule::apply_bound(const BoundPrimitive& bound, const Primitive& text,
                                      std::optional<Schedule>* next) const {
  ScheduleState state = state_;
  PrimitiveResult r = check_and_apply(*bound.def, state, bound.args);
  if (!r.ok()) return with_text(text, r.status());
  if (*r == ApplyEffect::kNoEffect) return r;
  if (Status st = validate_state(state); !st.ok()) return with_text(text, st);
  *next = Schedule(std::move(state), last_);
  (*next)->append_to_trace(text);
  return r;
}

void Schedule::append_to_trace(const Primitive& primitive) {
  auto node = std::make_shared<TraceNode>();
  node->primitive = primitive;
  node->primitive.loc = {};
  node->prev = last_;
  node->length = trace_length() + 1;
  last_ = std::move(node);
  materialized_.reset();
}

PrimitiveResult Schedule::apply(const Primitive& primitive) {
  std::optional<Schedule> next;
  PrimitiveResult r = apply_to_copy(primitive, &next);
  if (next) *this = std::move(*next);
  return r;
}

PrimitiveResult Schedule::apply(const BoundPrimitive& primitive) {
  std::optional<Schedule> next;
  PrimitiveResult r = apply_to_copy(primitive, &next);
  if (next) *this = std::move(*next);
  return r;
}

PrimitiveResult Schedule::apply_to_copy(const Primitive& primitive, std::optional<Schedule>* next) const {
  Expected<BoundPrimitive> bound = bind_primitive(state_, primitive);
  if (!bound.ok()) return with_text(primitive, bound.status());
  return apply_bound(*bound, primitive, next);
}

PrimitiveResult Schedule::apply_to_copy(const BoundPrimitive& primitive, std::optional<Schedule>* next) const {
  return apply_bound(primitive, primitive_text(state_, primitive), next);
}

Status Schedule::apply_text(std::string_view trace_text) {
  TG_ASSIGN_OR_RETURN(Trace trace, parse_trace(trace_text));
  Schedule next = *this;
  for (const Primitive& p : trace.steps) {
    PrimitiveResult r = next.apply(p);
    if (!r.ok()) {
      std::string where = p.loc.line ? fmt::format("{}:{}: ", p.loc.line, p.loc.column) : "";
      return Status(r.status().code(), where + r.status().message());
    }
  }
  *this = std::move(next);
  return Status();
}

}  // namespace tensorgym
