#include "envs/schedule/schedule_env.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "codegen/backend/registry.h"
#include "codegen/measure/measure_wire.h"
#include "datasets/registry.h"
#include "envs/env_context.h"
#include "envs/parameters.h"
#include "envs/schedule/observations.h"
#include "envs/schedule/primitive_actions.h"
#include "envs/schedule/rewards.h"
#include "support/quote.h"

namespace tensorgym {
namespace {

const std::string kName = "schedule-v0";

std::vector<Space> collect_observation_spaces() {
  std::vector<Space> s;
  for (const ObservationDef& o : schedule_observations()) s.push_back(o.space);
  return s;
}

// A primitive applies only on the kinds of target it belongs to: bind and set_scope on
// GPUs (and the accelerator), parallel on CPUs, tensorize on the accelerator.
Status refused_on_target(const PrimitiveDef* def, const ScheduleEpisode& e) {
  if (def == nullptr || def->offered_on(e.target_kind)) return Status();
  std::string kinds;
  for (TargetKind k : {TargetKind::kCpu, TargetKind::kGpu, TargetKind::kAccelerator})
    if (def->offered_on(k)) kinds += fmt::format("{}{}", kinds.empty() ? "" : " and ", target_kind_name(k));
  return failed_precondition(fmt::format("{} is a primitive of {} schedules; this episode's target is {}, a {} target",
                                         def->name, kinds, e.target, target_kind_name(e.target_kind)));
}

std::vector<Space> collect_reward_spaces() {
  std::vector<Space> s;
  for (const RewardDef& r : schedule_rewards()) s.push_back(r.space);
  return s;
}

}  // namespace

ScheduleEnv::ScheduleEnv(std::shared_ptr<EnvContext> context) : context_(std::move(context)) {
  episode_.context = context_;
}

const std::string& ScheduleEnv::name() const { return kName; }

const std::vector<Space>& ScheduleEnv::action_spaces() const {
  // Never destroyed: threads of a server still running at exit may read it.
  static const auto* spaces = new std::vector<Space>{PrimitiveActions::space(), CursorActions::space()};
  return *spaces;
}

const std::vector<Space>& ScheduleEnv::observation_spaces() const {
  static const auto* spaces = new std::vector<Space>(collect_observation_spaces());  // never destroyed
  return *spaces;
}

const std::vector<Space>& ScheduleEnv::reward_spaces() const {
  static const auto* spaces = new std::vector<Space>(collect_reward_spaces());  // never destroyed
  return *spaces;
}

Expected<std::vector<Event>> ScheduleEnv::reset(const std::string& benchmark, const ResetOptions& options,
                                                const std::vector<std::string>& observations) {
  ActionSpaceKind kind = ActionSpaceKind::kPrimitives;
  if (options.action_space == "cursor") {
    kind = ActionSpaceKind::kCursor;
  } else if (!options.action_space.empty() && options.action_space != "primitives") {
    return invalid_argument("unknown action space " + quote_text(options.action_space) +
                            " (schedule-v0 has primitives, cursor)");
  }
  if (options.max_episode_steps < 0) return invalid_argument("max_episode_steps must be >= 0");
  const std::string target = options.target.empty() ? context_->target : options.target;
  Expected<const Backend*> backend = find_backend(target);
  if (!backend.ok())
    return invalid_argument("unknown target " + quote_text(target) + " (schedule-v0 targets: " +
                            fmt::format("{}", fmt::join(backend_names(), ", ")) + ")");
  for (const std::string& o : observations)
    if (!find_schedule_observation(o)) return invalid_argument("unknown observation space " + quote_text(o));
  DatasetRegistry& registry = context_->datasets ? *context_->datasets : DatasetRegistry::global();
  TG_ASSIGN_OR_RETURN(Benchmark b, registry.resolve(benchmark));

  ScheduleEpisode next;
  next.context = context_;
  next.benchmark = std::move(b);
  next.schedule = std::make_shared<const Schedule>(next.benchmark.program);
  next.action_space = kind;
  next.target = target;
  next.target_kind = (*backend)->lowering().kind;
  next.runner_settings = episode_.runner_settings;  // session parameters persist across resets
  next.cursor = CursorActions::normalize(next.schedule->state(), Cursor{});
  next.invalidate();
  episode_ = std::move(next);
  options_ = options;
  steps_ = 0;
  start_ = std::chrono::steady_clock::now();
  last_metric_.clear();
  cumulative_.clear();
  last_reward_space_.clear();

  Status error;
  std::vector<Event> obs = observe(observations, &error);
  if (!error.ok()) return error;
  return obs;
}

Status ScheduleEnv::apply_action(const Event& action, bool* changed) {
  *changed = false;
  if (episode_.action_space == ActionSpaceKind::kCursor) {
    int64_t index = 0;
    if (action.is<int64_t>()) {
      index = action.as<int64_t>();
    } else if (action.is<std::string>()) {
      TG_ASSIGN_OR_RETURN(index, CursorActions::index_of(action.as<std::string>()));
    } else {
      return invalid_argument("a cursor action is an index or an action name");
    }
    TG_ASSIGN_OR_RETURN(CursorActions::Decision d, CursorActions::decide(episode_.schedule->state(), episode_.cursor, index));
    std::string text = CursorActions::names()[size_t(index)];
    if (!d.is_move) {
      TG_RETURN_IF_ERROR(refused_on_target(d.primitive.def, episode_));
      if (!d.primitive.def->cursor.offered_on(episode_.target_kind))
        return failed_precondition(fmt::format("cursor action {} is not offered on the {} target ({} schedules "
                                               "do not take it)",
                                               text, episode_.target, target_kind_name(episode_.target_kind)));
    }
    if (d.is_move) {
      *changed = d.next.stage != episode_.cursor.stage || d.next.loop != episode_.cursor.loop;
      episode_.cursor = d.next;
    } else {
      std::optional<Schedule> next;
      PrimitiveResult r = episode_.schedule->apply_to_copy(d.primitive, &next);
      if (!r.ok()) return Status(r.status().code(), "action " + text + ": " + r.status().message());
      *changed = *r == ApplyEffect::kChanged;
      if (*changed) {
        episode_.schedule = std::make_shared<const Schedule>(std::move(*next));
        episode_.cursor = CursorActions::normalize(episode_.schedule->state(), episode_.cursor);
        episode_.invalidate();
      }
    }
    if (*changed) episode_.actions.push_back(text);
    return Status();
  }

  // An index is decoded straight to a bound primitive; text is bound once.
  std::optional<Schedule> next;
  PrimitiveResult r = ApplyEffect::kNoEffect;
  if (action.is<int64_t>()) {
    Expected<BoundPrimitive> decoded = PrimitiveActions::decode(episode_.schedule->state(), action.as<int64_t>());
    if (!decoded.ok())
      return Status(decoded.status().code(),
                    fmt::format("action {}: {}", action.as<int64_t>(), decoded.status().message()));
    if (Status st = refused_on_target(decoded->def, episode_); !st.ok())
      return Status(st.code(), fmt::format("action {}: {}", action.as<int64_t>(), st.message()));
    r = episode_.schedule->apply_to_copy(*decoded, &next);
  } else if (action.is<std::string>()) {
    TG_ASSIGN_OR_RETURN(Trace t, parse_trace(action.as<std::string>()));
    if (t.steps.size() != 1)
      return invalid_argument(fmt::format("an action's text is one primitive, got {}: {}", t.steps.size(),
                                          quote_text(action.as<std::string>())));
    TG_RETURN_IF_ERROR(refused_on_target(find_primitive(t.steps[0].name), episode_));
    r = episode_.schedule->apply_to_copy(t.steps[0], &next);
  } else {
    return invalid_argument("a primitives action is an index or a primitive's text");
  }
  if (!r.ok()) return r.status();
  *changed = *r == ApplyEffect::kChanged;
  if (*changed) {
    episode_.schedule = std::make_shared<const Schedule>(std::move(*next));
    episode_.actions.push_back(episode_.schedule->last_primitive()->to_string());
    episode_.cursor = CursorActions::normalize(episode_.schedule->state(), episode_.cursor);
    episode_.invalidate();
  }
  return Status();
}

std::vector<Event> ScheduleEnv::observe(const std::vector<std::string>& names, Status* error) {
  std::vector<Event> out;
  out.reserve(names.size());
  for (const std::string& n : names) {
    const ObservationDef* def = find_schedule_observation(n);
    if (!def) {
      if (error->ok()) *error = invalid_argument("unknown observation space " + quote_text(n));
      out.emplace_back();
      continue;
    }
    Expected<Event> v = def->compute(episode_);
    if (v.ok()) {
      out.push_back(std::move(*v));
    } else {
      if (error->ok()) *error = Status(v.status().code(), "observation " + n + ": " + v.status().message());
      out.push_back(def->space.default_value());
    }
  }
  return out;
}

Expected<std::vector<double>> ScheduleEnv::rewards(const std::vector<std::string>& names) {
  std::vector<double> out;
  Status first_error;
  for (const std::string& n : names) {
    const RewardDef* def = find_schedule_reward(n);
    if (!def) return invalid_argument("unknown reward space " + quote_text(n));
    last_reward_space_ = n;
    Expected<double> initial = initial_metric(def->metric, episode_);
    // A target that runs only whole schedules (a GPU's binding, an accelerator's tiling:
    // Backend::default_schedule) has no runtime for a state its compiler refuses yet: the
    // measured rewards stay where they were (0) until the schedule is whole.
    if (initial.ok() && !def->space.deterministic() && episode_.schedule->trace_length() > 0 &&
        runs_only_whole_schedules(episode_) && !episode_.derived->target_code().ok()) {
      out.push_back(0.0);
      continue;
    }
    Expected<double> scale_base = def->normalize_by_expert ? expert_metric(def->metric, episode_) : initial;
    // Where the target cannot run the unscheduled program, its default schedule stands in
    // for it (initial_metric): an episode starts at reward 0, as on the cpu.
    Expected<double> current = episode_.schedule->trace_length() == 0 && !def->space.deterministic()
                                   ? initial
                                   : schedule_metric(def->metric, episode_);
    if (!initial.ok() || !scale_base.ok() || !current.ok()) {
      const Status& st = !initial.ok() ? initial.status() : !scale_base.ok() ? scale_base.status() : current.status();
      if (first_error.ok()) first_error = Status(st.code(), "reward " + n + ": " + st.message());
      out.push_back(def->reward_on_error);
      cumulative_[n] += def->reward_on_error;
      continue;
    }
    double scale = def->normalize_by_expert ? (*initial - *scale_base) : *initial;
    if (def->normalize_by_expert && def->higher_is_better) scale = *scale_base - *initial;
    if (!(std::fabs(scale) > 0) || !std::isfinite(scale)) scale = 1.0;
    auto it = last_metric_.find(n);
    double previous = it == last_metric_.end() ? *initial : it->second;
    double delta = def->higher_is_better ? (*current - previous) : (previous - *current);
    double r = delta / std::fabs(scale);
    if (def->log_speedup) {
      // ln(previous / current): the episode's sum is the log of the speedup so far.
      const double ratio = def->higher_is_better ? *current / previous : previous / *current;
      r = ratio > 0 && std::isfinite(ratio) ? std::log(ratio) : 0.0;
    }
    last_metric_[n] = *current;
    cumulative_[n] += r;
    out.push_back(r);
  }
  if (!first_error.ok()) return first_error;
  return out;
}

bool ScheduleEnv::runs_only_whole_schedules(const ScheduleEpisode& e) {
  Expected<const Backend*> backend = find_backend(e.target);
  if (!backend.ok()) return false;
  Expected<std::string> baseline = (*backend)->default_schedule(e.benchmark.program);
  return baseline.ok() && !baseline->empty();
}

StepResult ScheduleEnv::step(const std::vector<Event>& actions, const std::vector<std::string>& observations,
                             const std::vector<std::string>& reward_names) {
  StepResult result;
  if (!started()) {
    result.error = failed_precondition("step before reset: call reset(benchmark) first");
    result.terminated = true;
    return result;
  }
  bool any_change = false;
  for (const Event& a : actions) {
    bool changed = false;
    Status st = apply_action(a, &changed);
    if (!st.ok()) {
      result.error = st;
      break;
    }
    any_change |= changed;
  }
  ++steps_;
  result.action_had_no_effect = result.error.ok() && !any_change;
  result.observations = observe(observations, &result.error);
  Expected<std::vector<double>> r = rewards(reward_names);
  if (r.ok()) {
    result.rewards = std::move(*r);
  } else {
    for (const std::string& n : reward_names) {
      const RewardDef* def = find_schedule_reward(n);
      result.rewards.push_back(def ? def->reward_on_error : 0.0);
    }
    if (result.error.ok()) result.error = r.status();
  }
  result.truncated = options_.max_episode_steps > 0 && steps_ >= options_.max_episode_steps;
  return result;
}

Expected<std::unique_ptr<Env>> ScheduleEnv::fork() const {
  if (!started()) return failed_precondition("fork before reset");
  auto copy = std::make_unique<ScheduleEnv>(*this);
  return std::unique_ptr<Env>(std::move(copy));
}

EpisodeState ScheduleEnv::state() const {
  EpisodeState s;
  s.env = kName;
  s.target = started() ? episode_.target : context_->target;
  if (!started()) return s;
  s.benchmark = episode_.benchmark.uri;
  s.action_space = episode_.action_space == ActionSpaceKind::kCursor ? "cursor" : "primitives";
  s.actions = episode_.actions;
  s.reward_space = last_reward_space_;
  auto it = cumulative_.find(last_reward_space_);
  s.reward = it == cumulative_.end() ? 0.0 : it->second;
  s.walltime = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // A simulated target's measurements are deterministic too (fpga: cycles at its clock).
  Expected<const Backend*> backend = find_backend(episode_.target);
  const bool simulated = backend.ok() && (*backend)->target().simulated;
  for (const auto& [name, value] : cumulative_) {
    const RewardDef* def = find_schedule_reward(name);
    if (def && (def->space.deterministic() || simulated)) s.deterministic_rewards[name] = value;
  }
  // Where and how the current schedule's runtime was measured, if it was.
  if (episode_.derived) {
    if (std::optional<Provenance> p = episode_.derived->measured_provenance())
      s.provenance_json = provenance_to_json(*p);
  }
  return s;
}

Status ScheduleEnv::set_parameter(const std::string& key, const std::string& value) {
  Status st = apply_runner_parameter(&episode_.runner_settings, key, value);
  if (st.code() == StatusCode::kNotFound)
    return invalid_argument("unknown parameter " + quote_text(key) + " (known: " + kRunnerParameterNames + ")");
  TG_RETURN_IF_ERROR(st);
  if (started()) episode_.invalidate();
  return Status();
}

void ScheduleEnv::close() {
  episode_ = ScheduleEpisode();
  episode_.context = context_;
}

}  // namespace tensorgym
