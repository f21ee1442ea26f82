// A measurement's Provenance as JSON text, the form episode states, journals and agent
// results keep it in: the proto's own field names (protobuf's JSON mapping with
// preserve_proto_field_names), so the text reads like the .proto.
#pragma once

#include <string>

#include "proto/tensorgym.pb.h"

namespace tensorgym {

std::string provenance_to_json(const proto::Provenance& provenance);
// The inverse; unknown fields are ignored, and an empty or malformed text gives an
// empty Provenance (provenance is informative: it never fails a result).
proto::Provenance provenance_from_json(const std::string& json);

}  // namespace tensorgym
