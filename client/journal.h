// The results journal of a batch: JSON Lines, one result per line, appended as results
// arrive. Lines are written in groups by a thread of the journal: whatever arrived
// while the previous group was being written goes in one write(2) and one
// fdatasync(2), so a crash loses at most results that were not yet reported durable,
// and leaves at worst a torn last line. Reopened with `resume`, the journal lists the
// keys it holds (the jobs to skip), cuts a torn last line off, and appends after it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>

#include "support/status.h"

namespace tensorgym::client {

class Journal {
 public:
  // Opens `path` for appending (creating it). Without `resume` a file that already
  // holds results is refused (ALREADY_EXISTS: resume it or remove it). With `resume`
  // every line is read: a last line that is incomplete (no newline) or not a result
  // (a write cut short) is cut off and reported by torn_line(); a bad line before the
  // last is DATA_LOSS naming its line number.
  static Expected<std::unique_ptr<Journal>> open(const std::string& path, bool resume);
  ~Journal();  // close()
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  const std::string& path() const { return path_; }
  // Keys of the results found on open (resume).
  const std::unordered_set<std::string>& keys() const { return keys_; }
  // The torn last line that was cut off on open ("" when there was none).
  const std::string& torn_line() const { return torn_line_; }

  // Queues one line (without its newline) for the writer thread.
  void append(std::string line);
  // Waits until every line appended so far is on disk; the first write error, if any.
  Status flush();
  // flush(), then stops the writer and closes the file. Idempotent.
  Status close();
  // Lines written and synced since open.
  int64_t durable() const;

 private:
  Journal() = default;
  void run_writer();

  std::string path_;
  int fd_ = -1;
  std::unordered_set<std::string> keys_;
  std::string torn_line_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // lines queued, or closing
  std::condition_variable done_cv_;  // a group reached the disk
  std::deque<std::string> queue_;
  int64_t appended_ = 0;
  int64_t durable_ = 0;
  bool closing_ = false;
  bool closed_ = false;
  Status error_;
  std::thread writer_;
};

}  // namespace tensorgym::client
