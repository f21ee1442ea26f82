#include "support/host_caches.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace tensorgym {
namespace {

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

}  // namespace

int64_t parse_cache_size(const char* text) {
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (end == text || v <= 0) return 0;
  switch (*end) {
    case 'K':
    case 'k': return int64_t(v) << 10;
    case 'M':
    case 'm': return int64_t(v) << 20;
    case 'G':
    case 'g': return int64_t(v) << 30;
    default: return int64_t(v);
  }
}

std::vector<HostCache> host_data_caches() {
  std::vector<HostCache> caches;
  for (int i = 0; i < 16; ++i) {
    const std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", i);
    const std::string level = read_line(dir + "level");
    if (level.empty()) break;
    if (read_line(dir + "type") == "Instruction") continue;
    HostCache c;
    c.level = std::atoi(level.c_str());
    c.bytes = parse_cache_size(read_line(dir + "size").c_str());
    c.ways = std::atoi(read_line(dir + "ways_of_associativity").c_str());
    c.line_bytes = std::atoi(read_line(dir + "coherency_line_size").c_str());
    if (c.bytes > 0) caches.push_back(c);
  }
  return caches;
}

}  // namespace tensorgym
