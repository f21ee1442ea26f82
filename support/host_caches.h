#pragma once
// The host's data caches as Linux describes them in sysfs (cpu0). Used by the
// cost model's host machine and by the measurement's cache flusher.
#include <cstdint>
#include <vector>

namespace tensorgym {

struct HostCache {
  int level = 0;           // 1, 2, 3
  int64_t bytes = 0;
  int ways = 0;            // 0: unknown
  int line_bytes = 0;      // 0: unknown
};

// Data and unified caches of cpu0, in sysfs order; empty where sysfs has none.
std::vector<HostCache> host_data_caches();

// "48K", "2048K", "32M", "1G" or plain bytes, as sysfs writes cache sizes; 0 when
// the text is not one.
int64_t parse_cache_size(const char* text);

}  // namespace tensorgym
