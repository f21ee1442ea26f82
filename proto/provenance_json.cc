#include "proto/provenance_json.h"

#include <google/protobuf/util/json_util.h>

namespace tensorgym {

std::string provenance_to_json(const proto::Provenance& provenance) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(provenance, &json, options);
  return json;
}

proto::Provenance provenance_from_json(const std::string& json) {
  proto::Provenance p;
  if (json.empty()) return p;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(json, &p, options).ok()) p.Clear();
  return p;
}

}  // namespace tensorgym
