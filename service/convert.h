// Request conversion: wire messages to the library's arguments (checking every cap a
// request controls) and library results to wire messages.
#pragma once

#include <string>
#include <vector>

#include "envs/env.h"
#include "proto/tensorgym.pb.h"
#include "service/server_options.h"
#include "support/status.h"

namespace tensorgym::service {

struct StepArgs {
  std::vector<Event> actions;
  std::vector<std::string> observations;
  std::vector<std::string> rewards;
};

// INVALID_ARGUMENT for an action that is neither an index nor a text, or past a cap.
Status step_args_from_proto(const proto::StepRequest& request, const ServerOptions& limits, StepArgs* out);
// Names of observation or reward spaces (`what` names them in errors).
Status names_from_proto(const google::protobuf::RepeatedPtrField<std::string>& names, const ServerOptions& limits,
                        const char* what, std::vector<std::string>* out);

void events_to_proto(const std::vector<Event>& events, google::protobuf::RepeatedPtrField<proto::Event>* out);
// Fills everything but `status`, moving the observations into the answer (a text is
// moved, not copied); leaves result->observations empty.
void move_step_result_to_proto(StepResult* result, proto::StepResponse* out);
void status_to_proto(const Status& status, proto::RpcStatus* out);

void spaces_to_proto(const Env& env, proto::GetSpacesResponse* out);

}  // namespace tensorgym::service
