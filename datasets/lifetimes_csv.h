// Offset-only instances in the common CSV format (MiniMalloc's):
//   id,lower,upper,size
// one buffer a line, lifetimes half-open [lower, upper), sizes in bytes. Extra
// columns after these four are ignored (e.g. MiniMalloc's `offset` in its outputs).
#pragma once

#include <string>

#include "datasets/file_access.h"
#include "memplan/instance.h"
#include "support/status.h"

namespace tensorgym {

// Most bytes a lifetimes file may have.
inline constexpr int64_t kMaxLifetimesFileBytes = int64_t(256) << 20;

// Errors are INVALID_ARGUMENT "SOURCE:line: message".
Expected<Instance> parse_lifetimes_csv(const std::string& text, const std::string& source);
// Reads a file through `files` (NOT_FOUND when missing; RESOURCE_EXHAUSTED past the cap).
Expected<Instance> load_lifetimes_csv(const std::string& path, const FileAccess& files = FileAccess::any());
std::string lifetimes_to_csv(const Instance& instance);

}  // namespace tensorgym
