// The backends, by target name. Adding a backend is its folder under codegen/ and one
// line in registry.cc's table.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "codegen/backend/backend.h"
#include "support/status.h"

namespace tensorgym {

// The target a request, a state or a provenance record names when it names none.
inline constexpr std::string_view kDefaultTarget = "cpu";

// The backend of `target` (empty: kDefaultTarget); NOT_FOUND listing the known
// targets for another name. Backends live as long as the process.
Expected<const Backend*> find_backend(std::string_view target);

// The backend of kDefaultTarget: the machine this process runs on.
const Backend& host_backend();

// The registered targets, in registration order.
std::vector<std::string> backend_names();

}  // namespace tensorgym
