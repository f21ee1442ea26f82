#include "codegen/schedule/primitive_args.h"

#include <cctype>
#include <charconv>

#include <fmt/format.h>

#include "support/quote.h"

namespace tensorgym {

bool is_identifier(std::string_view s) {
  if (s.empty() || s.size() > kMaxNameBytes || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_'))
    return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

std::string leaf_names(const StageSchedule& stage) {
  std::string s;
  for (int l : stage.leaf) {
    if (!s.empty()) s += ", ";
    s += stage.loops[size_t(l)].name;
  }
  return s;
}

const std::string& tensor_name(const ScheduleState& state, const PrimitiveArg& a) {
  if (a.stage >= 0) return stage_of(state, a).name();
  return state.program().inputs[size_t(a.value)].name;
}

PrimitiveArg tensor_arg(const ScheduleState& state, std::string_view tensor) {
  PrimitiveArg a;
  a.stage = state.stage_index(tensor);
  a.value = -1;
  if (a.stage < 0) {
    const auto& inputs = state.program().inputs;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].name == tensor) a.value = int64_t(i);
  }
  return a;
}

Expected<int> parse_stage(const ScheduleState& state, std::string_view arg) {
  int i = state.stage_index(arg);
  if (i >= 0) return i;
  if (state.program().find_input(arg)) return invalid_argument(quote_text(arg) + " is an input and has no loops");
  return not_found("unknown stage " + quote_text(arg));
}

Expected<int> parse_leaf_of(const StageSchedule& stage, std::string_view arg) {
  int loop = stage.find_loop(arg);
  if (loop < 0)
    return not_found("stage " + stage.name() + " has no loop " + quote_text(arg) + " (its loops: " + leaf_names(stage) +
                     ")");
  if (stage.leaf_position(loop) < 0)
    return invalid_argument("loop " + stage.name() + "." + std::string(arg) +
                            " was split or fused away (its loops: " + leaf_names(stage) + ")");
  return loop;
}

Expected<LoopRef> parse_loop(const ScheduleState& state, std::string_view arg, bool must_be_leaf) {
  size_t dot = arg.find('.');
  if (dot == std::string_view::npos) return invalid_argument("expected a loop as STAGE.loop, found " + quote_text(arg));
  TG_ASSIGN_OR_RETURN(int si, parse_stage(state, arg.substr(0, dot)));
  const StageSchedule* stage = &state.stages()[size_t(si)];
  std::string_view name = arg.substr(dot + 1);
  if (must_be_leaf) {
    TG_ASSIGN_OR_RETURN(int loop, parse_leaf_of(*stage, name));
    return LoopRef{stage, loop};
  }
  int loop = stage->find_loop(name);
  if (loop < 0)
    return not_found("stage " + stage->name() + " has no loop " + quote_text(name) +
                     " (its loops: " + leaf_names(*stage) + ")");
  return LoopRef{stage, loop};
}

Expected<int64_t> parse_int(std::string_view arg, std::string_view what, int64_t min, int64_t max) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), v);
  if (ec != std::errc() || end != arg.data() + arg.size())
    return invalid_argument(std::string(what) + " must be an integer, found " + quote_text(arg));
  if (v < min || v > max)
    return invalid_argument(fmt::format("{} must be in {}..{}, found {}", what, min, max, v));
  return v;
}

Status check_new_loop_name(const StageSchedule& stage, std::string_view name) {
  if (!is_identifier(name)) return invalid_argument(quote_text(name) + " is not a valid loop name");
  if (stage.find_loop(name) >= 0)
    return already_exists("stage " + stage.name() + " already has a loop named " + quote_text(name));
  return Status();
}

Status check_new_tensor_name(const ScheduleState& state, std::string_view name) {
  if (!is_identifier(name)) return invalid_argument(quote_text(name) + " is not a valid tensor name");
  if (state.has_tensor(name)) return already_exists("a tensor named " + quote_text(name) + " already exists");
  return Status();
}

Status check_nothing_attached_at(const ScheduleState& state, const LoopRef& target, int loop, std::string_view verb) {
  const StageSchedule& stage = *target.stage;
  const std::string& loop_name = stage.loops[size_t(loop)].name;
  for (const StageSchedule& s : state.stages()) {
    if (s.attach == AttachKind::kAt && s.attach_stage == stage.name() && s.attach_loop == loop_name)
      return failed_precondition("cannot " + std::string(verb) + " " + target.text() + ": stage " + s.name() +
                                 " is computed at " + stage.name() + "." + loop_name +
                                 "; move it first (compute_root or compute_at another loop)");
  }
  return Status();
}

Status check_loop_kind(const LoopRef& ref, ForKind kind) {
  const Loop& loop = ref.get();
  if (!loop.thread_tag.empty()) return failed_precondition("loop " + ref.text() + " is bound to " + loop.thread_tag);
  if (loop.kind != kind && loop.kind != ForKind::kSerial)
    return failed_precondition("loop " + ref.text() + " is already " + for_kind_name(loop.kind));
  return Status();
}

PrimitiveResult set_loop_kind(Loop& loop, ForKind kind) {
  if (loop.kind == kind) return ApplyEffect::kNoEffect;
  loop.kind = kind;
  return ApplyEffect::kChanged;
}

bool annotated(const Loop& l) { return l.kind != ForKind::kSerial || !l.thread_tag.empty() || !l.pragmas.empty(); }

}  // namespace tensorgym
