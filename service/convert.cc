#include "service/convert.h"

#include <fmt/format.h>

#include "proto/rpc_status.h"

namespace tensorgym::service {

Status names_from_proto(const google::protobuf::RepeatedPtrField<std::string>& names, const ServerOptions& limits,
                        const char* what, std::vector<std::string>* out) {
  if (names.size() > limits.max_spaces_per_call)
    return invalid_argument(
        fmt::format("{} {} spaces in one call; the cap is {}", names.size(), what, limits.max_spaces_per_call));
  out->assign(names.begin(), names.end());
  return Status();
}

Status step_args_from_proto(const proto::StepRequest& request, const ServerOptions& limits, StepArgs* out) {
  if (request.action_size() > limits.max_actions_per_step)
    return invalid_argument(
        fmt::format("{} actions in one step; the cap is {}", request.action_size(), limits.max_actions_per_step));
  out->actions.clear();
  out->actions.reserve(size_t(request.action_size()));
  for (int i = 0; i < request.action_size(); ++i) {
    const proto::Event& a = request.action(i);
    switch (a.value_case()) {
      case proto::Event::kInt64Value: out->actions.emplace_back(a.int64_value()); break;
      case proto::Event::kStringValue: out->actions.emplace_back(a.string_value()); break;
      default:
        return invalid_argument(fmt::format("action {}", i) +
                                " is neither an index (int64_value) nor an action's text (string_value)");
    }
  }
  TG_RETURN_IF_ERROR(names_from_proto(request.observation_space(), limits, "observation", &out->observations));
  TG_RETURN_IF_ERROR(names_from_proto(request.reward_space(), limits, "reward", &out->rewards));
  return Status();
}

void events_to_proto(const std::vector<Event>& events, google::protobuf::RepeatedPtrField<proto::Event>* out) {
  out->Reserve(int(events.size()));
  for (const Event& e : events) event_to_proto(e, out->Add());
}

void move_step_result_to_proto(StepResult* result, proto::StepResponse* out) {
  out->mutable_observation()->Reserve(int(result->observations.size()));
  for (Event& e : result->observations) event_to_proto(std::move(e), out->mutable_observation()->Add());
  result->observations.clear();
  out->mutable_reward()->Reserve(int(result->rewards.size()));
  for (double r : result->rewards) out->add_reward(r);
  out->set_terminated(result->terminated);
  out->set_truncated(result->truncated);
  out->set_action_had_no_effect(result->action_had_no_effect);
}

void status_to_proto(const Status& status, proto::RpcStatus* out) {
  out->set_code(int(status.code()));
  out->set_message(rpc::wire_message(status.message()));
}

void spaces_to_proto(const Env& env, proto::GetSpacesResponse* out) {
  for (const Space& s : env.action_spaces()) s.to_proto(out->add_action_space());
  for (const Space& s : env.observation_spaces()) s.to_proto(out->add_observation_space());
  for (const Space& s : env.reward_spaces()) s.to_proto(out->add_reward_space());
}

}  // namespace tensorgym::service
