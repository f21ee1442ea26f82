// A text file the benchmarks read whole (programs, schedules), or NOT_FOUND naming it.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include "support/status.h"

namespace tensorgym {

inline Expected<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return not_found("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace tensorgym
