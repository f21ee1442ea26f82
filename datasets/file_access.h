// Which files a file:// benchmark may read. The command line reads any file its user
// can; a server reads none unless its operator names the directories they may come
// from (`tensorgym serve --allow-files DIR`), and then only files below them: a client
// must not read the server's other files, nor learn which of them exist.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/status.h"

namespace tensorgym {

class FileAccess {
 public:
  // Any file the process can read (the command line, tests).
  static FileAccess any() { return FileAccess(Mode::kAny, {}); }
  // No file at all (a server without --allow-files).
  static FileAccess none() { return FileAccess(Mode::kBelow, {}); }
  // Files below these directories, which must exist; they are kept as their real
  // paths (symbolic links resolved). INVALID_ARGUMENT naming a directory that is not one.
  static Expected<FileAccess> below(const std::vector<std::string>& dirs);

  bool restricted() const { return mode_ == Mode::kBelow; }
  const std::vector<std::string>& dirs() const { return dirs_; }

  // The whole regular file at `path`, of at most `max_bytes` bytes. When restricted:
  // PERMISSION_DENIED, with the same message whether or not the file exists, for a
  // path that is not absolute or not below an allowed directory, or that leaves it
  // through "..", a symbolic link or a mount; only below one are NOT_FOUND and the
  // like said. RESOURCE_EXHAUSTED past max_bytes; INVALID_ARGUMENT for a file that
  // is not regular (a FIFO is never waited on).
  Expected<std::string> read(const std::string& path, int64_t max_bytes) const;

 private:
  enum class Mode { kAny, kBelow };
  FileAccess(Mode mode, std::vector<std::string> dirs) : mode_(mode), dirs_(std::move(dirs)) {}
  // An open descriptor for reading, or the error read() reports.
  Expected<int> open_for_reading(const std::string& path) const;
  Status denied(const std::string& path) const;

  Mode mode_;
  std::vector<std::string> dirs_;
};

// `path` with "." and ".." applied and repeated '/' collapsed, without looking at the
// file system; "" for a path that is not absolute.
std::string lexically_normal_absolute(const std::string& path);

}  // namespace tensorgym
