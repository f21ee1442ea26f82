// The JSON the commands print (--json): values built with nlohmann_json, written on
// one line with ", " and ": " between items, the form every --json output and the
// JSON Lines files share. Numbers keep full precision.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "spaces/event.h"

namespace tensorgym::cli {

// Objects keep the order their keys were added in.
using Json = nlohmann::ordered_json;

// One line, no trailing newline.
std::string json_text(const Json& value);

// An observation or reward value: tensors nest by shape, NaN and infinities are null.
Json event_json(const Event& event);

// JSON text made elsewhere (an EpisodeState line, a provenance), as a value to embed;
// null when the text is empty or not JSON.
Json parsed_json(const std::string& text);

}  // namespace tensorgym::cli
