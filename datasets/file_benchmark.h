// file://PATH: a program read from a file (.tg) when the URI resolves.
#pragma once

#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "datasets/benchmark.h"
#include "datasets/file_access.h"

namespace tensorgym {

class FileBenchmarkLoader {
 public:
  // Files whose parsed program is kept; the oldest goes first past this many.
  static constexpr size_t kCacheSize = 256;

  // Reads and parses the file at `path` (default ProgramLimits). The URI is
  // "file://" + path: file:///abs/prog.tg is absolute, file://rel/prog.tg relative
  // to the working directory. A sibling "<stem>.expert.sched" next to "<stem>.tg"
  // becomes the expert schedule. The file is read every time; while its text is
  // unchanged the same ProgramPtr comes back. Thread-safe.
  //
  // `files` says which files may be read (FileAccess::read and its errors).
  // Errors name the file: NOT_FOUND (no such file), PERMISSION_DENIED,
  // INVALID_ARGUMENT for something that is not a regular file and for program text
  // that does not parse ("PATH:line:column: message"), RESOURCE_EXHAUSTED for a
  // file over the text limit.
  Expected<Benchmark> load(std::string_view path, const FileAccess& files) const;

 private:
  struct Cached {
    std::string text;
    ProgramPtr program;
  };
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, Cached> cache_;
  mutable std::deque<std::string> order_;  // insertion order, for eviction
};

}  // namespace tensorgym
