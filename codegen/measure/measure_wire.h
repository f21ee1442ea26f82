// The measurement types (measurement.h) as protobuf messages, for where they cross a
// process boundary: the worker frame (worker.cc, worker_process.cc) and the service.
// Field by field; a field the C++ side does not know stays unset on the wire.
#pragma once

#include <string>

#include "codegen/measure/measurement.h"
#include "support/status.h"

namespace tensorgym {
namespace proto {
class MeasureRequest;
class MeasureResult;
class Provenance;
class RunnerSettings;
}  // namespace proto

void to_proto(const RunnerSettings& in, proto::RunnerSettings* out);
RunnerSettings from_proto(const proto::RunnerSettings& in);
void to_proto(const Provenance& in, proto::Provenance* out);
Provenance from_proto(const proto::Provenance& in);
void to_proto(const MeasureRequest& in, proto::MeasureRequest* out);
MeasureRequest from_proto(const proto::MeasureRequest& in);
void to_proto(const MeasureResult& in, proto::MeasureResult* out);
MeasureResult from_proto(const proto::MeasureResult& in);

// Serialized messages (frame payloads). Parsing: DATA_LOSS when the bytes are not one.
std::string serialize(const MeasureRequest& request);
std::string serialize(const MeasureResult& result);
Expected<MeasureRequest> parse_measure_request(const std::string& bytes);
Expected<MeasureResult> parse_measure_result(const std::string& bytes);

// Provenance as JSON through the protobuf JSON mapping (proto/provenance_json.h): the
// form episode states, journals and agents keep.
std::string provenance_to_json(const Provenance& provenance);

}  // namespace tensorgym
