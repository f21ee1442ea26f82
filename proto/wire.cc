#include "proto/wire.h"

#include <google/protobuf/util/json_util.h>

namespace tensorgym::wire {

void episode_state_to_proto(const EpisodeState& s, proto::EpisodeState* out) {
  out->Clear();
  out->set_env(s.env);
  out->set_benchmark(s.benchmark);
  out->set_action_space(s.action_space);
  out->mutable_actions()->Reserve(int(s.actions.size()));
  for (const std::string& a : s.actions) out->add_actions(a);
  out->set_reward_space(s.reward_space);
  out->set_reward(s.reward);
  out->set_walltime(s.walltime);
  out->set_target(s.target);
  for (const auto& [k, v] : s.deterministic_rewards) (*out->mutable_deterministic_rewards())[k] = v;
  if (!s.provenance_json.empty()) {
    google::protobuf::util::JsonParseOptions opts;
    opts.ignore_unknown_fields = true;
    (void)google::protobuf::util::JsonStringToMessage(s.provenance_json, out->mutable_provenance(), opts);
  }
}

EpisodeState episode_state_from_proto(const proto::EpisodeState& p) {
  EpisodeState s;
  s.env = p.env();
  s.benchmark = p.benchmark();
  s.action_space = p.action_space();
  s.actions.assign(p.actions().begin(), p.actions().end());
  s.reward_space = p.reward_space();
  s.reward = p.reward();
  s.walltime = p.walltime();
  if (!p.target().empty()) s.target = p.target();  // older peers: "cpu"
  for (const auto& [k, v] : p.deterministic_rewards()) s.deterministic_rewards[k] = v;
  if (p.has_provenance()) {
    google::protobuf::util::JsonPrintOptions opts;
    opts.preserve_proto_field_names = true;
    (void)google::protobuf::util::MessageToJsonString(p.provenance(), &s.provenance_json, opts);
  }
  return s;
}

}  // namespace tensorgym::wire
