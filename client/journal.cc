#include "client/journal.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "proto/jobs.h"

namespace tensorgym::client {
namespace {

// The code says what to do about it: fix the path, the permissions, free space; or retry.
Status errno_status(const std::string& what) {
  const int err = errno;
  StatusCode code = StatusCode::kUnavailable;
  if (err == ENOENT || err == ENOTDIR) code = StatusCode::kNotFound;
  if (err == EACCES || err == EPERM || err == EROFS) code = StatusCode::kPermissionDenied;
  if (err == ENOSPC || err == EDQUOT) code = StatusCode::kResourceExhausted;
  if (err == EISDIR) code = StatusCode::kInvalidArgument;
  return Status(code, what + ": " + std::strerror(err));
}

Status write_all(int fd, const std::string& bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return errno_status("cannot write " + path);
    done += size_t(n);
  }
  return Status();
}

Expected<std::string> read_all(int fd, const std::string& path) {
  std::string text;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, off_t(text.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_status("cannot read " + path);
    if (n == 0) return text;
    text.append(buf, size_t(n));
  }
}

// A new file's name is durable once its folder is synced.
void sync_parent_dir(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;
  (void)::fsync(dfd);
  ::close(dfd);
}

}  // namespace

Expected<std::unique_ptr<Journal>> Journal::open(const std::string& path, bool resume) {
  std::unique_ptr<Journal> j(new Journal());
  j->path_ = path;
  struct stat before {};
  const bool existed = ::stat(path.c_str(), &before) == 0;
  j->fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (j->fd_ < 0) return errno_status("cannot open the journal " + path);
  if (!existed) sync_parent_dir(path);
  TG_ASSIGN_OR_RETURN(std::string text, read_all(j->fd_, path));
  if (!text.empty() && !resume)
    return already_exists("the journal " + path + " already holds results; pass --resume to skip the jobs it has, "
                          "or remove it");
  // Complete lines, then what follows the last newline (a write cut short).
  size_t keep = 0;  // bytes of good lines
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    const bool complete = nl != std::string::npos;
    const size_t end = complete ? nl : text.size();
    std::string line = text.substr(pos, end - pos);
    ++line_no;
    const bool last = !complete || end + 1 == text.size();
    if (line.find_first_not_of(" \t\r") == std::string::npos && complete) {
      pos = end + 1;
      keep = pos;
      continue;
    }
    Expected<ResultLine> r = complete ? parse_result_line(line) : Expected<ResultLine>(invalid_argument("no newline"));
    if (!r.ok()) {
      if (!last)
        return Status(StatusCode::kDataLoss,
                      fmt::format("{}:{}: not a result line ({}); only the last line may be torn", path, line_no,
                                  r.status().message()));
      j->torn_line_ = line.empty() ? std::string("(a lone newline)") : line;
      break;
    }
    j->keys_.insert(r->key);
    pos = complete ? end + 1 : end;
    keep = pos;
  }
  if (keep < text.size()) {
    if (::ftruncate(j->fd_, off_t(keep)) != 0) return errno_status("cannot cut the torn last line off " + path);
    (void)::fdatasync(j->fd_);
  }
  if (::lseek(j->fd_, 0, SEEK_END) < 0) return errno_status("cannot seek in " + path);
  Journal* raw = j.get();
  j->writer_ = std::thread([raw] { raw->run_writer(); });
  return j;
}

Journal::~Journal() { (void)close(); }

void Journal::append(std::string line) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) return;
    queue_.push_back(std::move(line));
    ++appended_;
  }
  work_cv_.notify_one();
}

void Journal::run_writer() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return closing_ || !queue_.empty(); });
    if (queue_.empty()) return;  // closing, nothing left
    std::vector<std::string> group(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
    queue_.clear();
    lock.unlock();
    std::string bytes;
    for (const std::string& l : group) {
      bytes += l;
      bytes += '\n';
    }
    Status st = write_all(fd_, bytes, path_);
    if (st.ok() && ::fdatasync(fd_) != 0) st = errno_status("cannot sync " + path_);
    lock.lock();
    if (!st.ok() && error_.ok()) error_ = st;
    durable_ += int64_t(group.size());
    done_cv_.notify_all();
  }
}

Status Journal::flush() {
  std::unique_lock<std::mutex> lock(mu_);
  const int64_t target = appended_;
  done_cv_.wait(lock, [&] { return durable_ >= target || closed_; });
  return error_;
}

Status Journal::close() {
  Status st = flush();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return error_;
    closing_ = true;
  }
  work_cv_.notify_all();
  if (writer_.joinable()) writer_.join();
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  done_cv_.notify_all();
  return error_.ok() ? st : error_;
}

int64_t Journal::durable() const {
  std::lock_guard<std::mutex> lock(mu_);
  return durable_;
}

}  // namespace tensorgym::client
