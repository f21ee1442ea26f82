#include "memplan/verify.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

namespace tensorgym {
namespace {

std::string describe(const Buffer& b, int64_t offset) {
  return fmt::format("'{}' (lifetime [{}, {}), bytes [{}, {}))", b.id, b.lower, b.upper, offset, offset + b.size);
}

}  // namespace

Expected<int64_t> verify_offsets(const Instance& instance, const Offsets& offsets) {
  const size_t n = instance.buffers.size();
  if (offsets.size() != n)
    return invalid_argument(fmt::format("the plan has {} offsets for {} buffers", offsets.size(), n));
  for (size_t i = 0; i < n; ++i) {
    if (offsets[i] < 0) return invalid_argument("buffer '" + instance.buffers[i].id + "' has no offset");
    if (offsets[i] % instance.alignment != 0)
      return invalid_argument(fmt::format("buffer '{}' has offset {}, not a multiple of the alignment {}",
                                          instance.buffers[i].id, offsets[i], instance.alignment));
  }
  // Events in time order; at equal times ends come before starts (half-open lifetimes).
  struct Event {
    int64_t time;
    int kind;  // 0: end, 1: start
    int buffer;
  };
  std::vector<Event> events;
  events.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    if (instance.buffers[i].size == 0) continue;
    events.push_back({instance.buffers[i].lower, 1, int(i)});
    events.push_back({instance.buffers[i].upper, 0, int(i)});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.kind != b.kind) return a.kind < b.kind;
    return a.buffer < b.buffer;
  });
  // Live buffers by offset. While the live set is free of overlaps, a new buffer
  // overlaps one of them exactly when it overlaps its neighbour below or above.
  std::set<std::pair<int64_t, int>> live;
  for (const Event& e : events) {
    const Buffer& b = instance.buffers[size_t(e.buffer)];
    const int64_t off = offsets[size_t(e.buffer)];
    if (e.kind == 0) {
      live.erase({off, e.buffer});
      continue;
    }
    auto it = live.lower_bound({off, -1});
    auto clash = [&](int other) -> Status {
      const Buffer& o = instance.buffers[size_t(other)];
      return failed_precondition("buffers " + describe(o, offsets[size_t(other)]) + " and " + describe(b, off) +
                                 " are live at the same time and overlap in memory");
    };
    if (it != live.end() && it->first < off + b.size) return clash(it->second);
    if (it != live.begin()) {
      auto below = std::prev(it);
      if (below->first + instance.buffers[size_t(below->second)].size > off) return clash(below->second);
    }
    live.insert({off, e.buffer});
  }
  return arena_size(instance, offsets);
}

std::string offsets_to_csv(const Instance& instance, const Offsets& offsets) {
  std::string out = "id,offset\n";
  for (size_t i = 0; i < instance.buffers.size(); ++i)
    fmt::format_to(std::back_inserter(out), "{},{}\n", instance.buffers[i].id, i < offsets.size() ? offsets[i] : -1);
  return out;
}

Expected<Offsets> offsets_from_csv(const Instance& instance, const std::string& text, const std::string& source) {
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < instance.buffers.size(); ++i) index.emplace(instance.buffers[i].id, i);
  Offsets offsets(instance.buffers.size(), -1);
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::string where = fmt::format("{}:{}: ", source, line_no);
    if (!header) {
      if (line != "id,offset") return invalid_argument(where + "expected the header 'id,offset', got '" + line + "'");
      header = true;
      continue;
    }
    const size_t comma = line.rfind(',');
    if (comma == std::string::npos) return invalid_argument(where + "expected 'id,offset', got '" + line + "'");
    const std::string id = line.substr(0, comma);
    int64_t off = 0;
    try {
      size_t used = 0;
      off = std::stoll(line.substr(comma + 1), &used);
      if (used != line.size() - comma - 1 || off < 0) throw std::invalid_argument("offset");
    } catch (const std::exception&) {
      return invalid_argument(where + "the offset '" + line.substr(comma + 1) + "' is not a non-negative integer");
    }
    auto it = index.find(id);
    if (it == index.end()) return invalid_argument(where + "no buffer '" + id + "' in the instance");
    if (offsets[it->second] >= 0) return invalid_argument(where + "buffer '" + id + "' appears twice");
    offsets[it->second] = off;
  }
  if (!header) return invalid_argument(source + ": empty plan (expected the header 'id,offset')");
  for (size_t i = 0; i < offsets.size(); ++i)
    if (offsets[i] < 0) return invalid_argument(source + ": buffer '" + instance.buffers[i].id + "' has no offset");
  return offsets;
}

}  // namespace tensorgym
