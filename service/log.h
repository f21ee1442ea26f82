// The server's log: one line per event on stderr, filtered by level
// (`tensorgym serve --log-level`). Thread-safe.
#pragma once

#include <string>

#include "support/status.h"

namespace tensorgym::service {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kOff = 4 };

// "debug", "info", "warning", "error", "off".
Expected<LogLevel> parse_log_level(const std::string& name);
void set_log_level(LogLevel level);
bool log_enabled(LogLevel level);
// "2024-05-01T12:00:00.123Z tensorgym serve [info] message"
void log(LogLevel level, const std::string& message);

}  // namespace tensorgym::service
