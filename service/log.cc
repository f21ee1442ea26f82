#include "service/log.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace tensorgym::service {
namespace {

std::atomic<int> g_level{int(LogLevel::kInfo)};

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
    case LogLevel::kOff: return "off";
  }
  return "?";
}

}  // namespace

Expected<LogLevel> parse_log_level(const std::string& name) {
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning, LogLevel::kError, LogLevel::kOff})
    if (name == level_name(l)) return l;
  return invalid_argument("unknown log level '" + name + "' (debug, info, warning, error, off)");
}

void set_log_level(LogLevel level) { g_level.store(int(level)); }

bool log_enabled(LogLevel level) { return level != LogLevel::kOff && int(level) >= g_level.load(std::memory_order_relaxed); }

void log(LogLevel level, const std::string& message) {
  if (!log_enabled(level)) return;
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  int ms = int(std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  // One fprintf per line: stdio locks the stream, so lines from threads do not interleave.
  fmt::print(stderr, "{}.{:03}Z tensorgym serve [{}] {}\n", stamp, ms, level_name(level), message);
}

}  // namespace tensorgym::service
