#include "codegen/schedule/primitive_text.h"

#include "codegen/schedule/primitive_args.h"
#include "support/quote.h"

namespace tensorgym {
namespace {

Expected<PrimitiveArg> bind_arg(const ScheduleState& state, const ArgSpec& spec, const std::string& text, const PrimitiveArg* first) {
  PrimitiveArg a;
  switch (spec.kind) {
    case ArgKind::kStage: {
      TG_ASSIGN_OR_RETURN(a.stage, parse_stage(state, text));
      return a;
    }
    case ArgKind::kLoop:
    case ArgKind::kAnyLoop: {
      TG_ASSIGN_OR_RETURN(LoopRef ref, parse_loop(state, text, spec.kind == ArgKind::kLoop));
      a.stage = int(ref.stage - state.stages().data());
      a.loop = ref.loop;
      return a;
    }
    case ArgKind::kLeafOfStage: {
      a.stage = first->stage;
      TG_ASSIGN_OR_RETURN(a.loop, parse_leaf_of(stage_of(state, a), text));
      return a;
    }
    case ArgKind::kDimOfStage: {
      a.stage = first->stage;
      const StageSchedule& s = stage_of(state, a);
      for (size_t d = 0; d < s.def->axes.size(); ++d)
        if (s.def->axes[d].name == text) {
          a.value = int64_t(d);
          return a;
        }
      return not_found("stage " + s.name() + " has no dimension " + quote_text(text));
    }
    case ArgKind::kTensor: {
      a = tensor_arg(state, text);
      if (a.stage < 0 && a.value < 0) return not_found("unknown tensor " + quote_text(text));
      return a;
    }
    case ArgKind::kInt: {
      TG_ASSIGN_OR_RETURN(a.value, parse_int(text, spec.what, spec.min, spec.max));
      return a;
    }
    case ArgKind::kNewLoop:
    case ArgKind::kNewTensor: a.name = text; return a;
    case ArgKind::kWord: {
      for (size_t w = 0; w < spec.words.size(); ++w)
        if (spec.words[w] == text) {
          a.value = int64_t(w);
          return a;
        }
      return invalid_argument("unknown " + std::string(spec.what) + " " + quote_text(text) + " (known: " +
                              std::string(spec.known) + ")");
    }
  }
  return a;
}

}  // namespace

Expected<BoundPrimitive> bind_primitive(const ScheduleState& state, const Primitive& p) {
  BoundPrimitive b;
  b.def = find_primitive(p.name);
  if (!b.def) return invalid_argument("unknown primitive " + quote_text(p.name));
  int n = int(p.args.size());
  if (n < b.def->min_args() || (b.def->max_args() >= 0 && n > b.def->max_args()))
    return invalid_argument("wrong number of arguments; usage: " + std::string(b.def->usage));
  b.args.reserve(p.args.size());
  for (size_t i = 0; i < p.args.size(); ++i) {
    TG_ASSIGN_OR_RETURN(PrimitiveArg a, bind_arg(state, b.def->spec(i), p.args[i], b.args.empty() ? nullptr : &b.args[0]));
    b.args.push_back(std::move(a));
  }
  return b;
}

Primitive primitive_text(const ScheduleState& state, const BoundPrimitive& p) {
  Primitive out;
  out.name = std::string(p.def->name);
  out.args.reserve(p.args.size());
  for (size_t i = 0; i < p.args.size(); ++i) {
    const ArgSpec& spec = p.def->spec(i);
    const PrimitiveArg& a = p.args[i];
    switch (spec.kind) {
      case ArgKind::kStage: out.args.push_back(stage_of(state, a).name()); break;
      case ArgKind::kLoop:
      case ArgKind::kAnyLoop: out.args.push_back(loop_of(state, a).text()); break;
      case ArgKind::kLeafOfStage: out.args.push_back(loop_of(state, a).get().name); break;
      case ArgKind::kDimOfStage: out.args.push_back(stage_of(state, a).def->axes[size_t(a.value)].name); break;
      case ArgKind::kTensor: out.args.push_back(tensor_name(state, a)); break;
      case ArgKind::kInt: out.args.push_back(std::to_string(a.value)); break;
      case ArgKind::kNewLoop:
      case ArgKind::kNewTensor: out.args.push_back(a.name); break;
      case ArgKind::kWord: out.args.emplace_back(spec.words[size_t(a.value)]); break;
    }
  }
  return out;
}

}  // namespace tensorgym
