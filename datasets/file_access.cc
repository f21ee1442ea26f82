#include "datasets/file_access.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "datasets/benchmark_uri.h"

namespace tensorgym {
namespace {

constexpr int kReadFlags = O_RDONLY | O_CLOEXEC | O_NONBLOCK;  // a FIFO must not block the open

struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

// `path` below `dir` (both normal absolute paths): the part after "dir/", or npos.
size_t below_dir(const std::string& path, const std::string& dir) {
  if (dir == "/") return path.size() > 1 ? 1 : std::string::npos;
  if (path.size() <= dir.size() + 1 || path.compare(0, dir.size(), dir) != 0 || path[dir.size()] != '/')
    return std::string::npos;
  return dir.size() + 1;
}

Status errno_status(const std::string& path, int err) {
  if (err == ENOENT || err == ENOTDIR) return not_found("cannot read " + path + ": no such file");
  if (err == EACCES || err == EPERM) return Status(StatusCode::kPermissionDenied, "cannot read " + path + ": " + std::strerror(err));
  return not_found("cannot read " + path + ": " + std::strerror(err));
}

}  // namespace

std::string lexically_normal_absolute(const std::string& path) {
  if (path.empty() || path[0] != '/') return "";
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    const std::string part = path.substr(i, j - i);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    i = j + 1;
  }
  std::string out;
  for (const std::string& p : parts) out += "/" + p;
  return out.empty() ? "/" : out;
}

Expected<FileAccess> FileAccess::below(const std::vector<std::string>& dirs) {
  std::vector<std::string> real;
  for (const std::string& d : dirs) {
    char buf[PATH_MAX];
    struct stat st;
    if (!::realpath(d.c_str(), buf) || ::stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
      return invalid_argument("--allow-files " + d + ": not a directory this process can see");
    real.emplace_back(buf);
  }
  return FileAccess(Mode::kBelow, std::move(real));
}

Status FileAccess::denied(const std::string& path) const {
  if (dirs_.empty())
    return Status(StatusCode::kPermissionDenied,
                  "file:// benchmarks are off on this server: it reads no file for its clients unless its operator "
                  "allows directories (tensorgym serve --allow-files DIR); add the program with AddBenchmark instead");
  std::string list;
  for (const std::string& d : dirs_) list += (list.empty() ? "" : ", ") + d;
  return Status(StatusCode::kPermissionDenied,
                quote_uri("file://" + path) + " is not below a directory this server reads benchmarks from (" + list + ")");
}

Expected<int> FileAccess::open_for_reading(const std::string& path) const {
  if (mode_ == Mode::kAny) {
    const int fd = ::open(path.c_str(), kReadFlags);
    if (fd < 0) return errno_status(path, errno);
    return fd;
  }
  const std::string normal = lexically_normal_absolute(path);
  for (const std::string& dir : dirs_) {
    const size_t rest = below_dir(normal, dir);
    if (rest == std::string::npos) continue;
    const int dirfd = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) return denied(path);
    FdCloser closer{dirfd};
    // The kernel resolves the rest inside the directory: "..", absolute symbolic links
    // and links that lead out of it fail with EXDEV, and no race can swap a component.
    open_how how{};
    how.flags = kReadFlags;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
    const std::string relative = normal.substr(rest);
    long fd = ::syscall(SYS_openat2, dirfd, relative.c_str(), &how, sizeof how);
    if (fd < 0 && errno == ENOSYS) {
      // Kernels before 5.6: resolve, check, and open what was checked without
      // following a last link (a component swapped between the two is the
      // directory owner's doing; docs/security.md says to keep them unwritable).
      char real[PATH_MAX];
      if (!::realpath(normal.c_str(), real)) return errno_status(path, errno);
      if (below_dir(real, dir) == std::string::npos) continue;
      fd = ::open(real, kReadFlags | O_NOFOLLOW);
    }
    if (fd < 0) {
      if (errno == EXDEV || errno == ELOOP) continue;  // it left the directory
      return errno_status(path, errno);
    }
    return int(fd);
  }
  return denied(path);
}

Expected<std::string> FileAccess::read(const std::string& path, int64_t max_bytes) const {
  TG_ASSIGN_OR_RETURN(int fd, open_for_reading(path));
  FdCloser closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return errno_status(path, errno);
  if (!S_ISREG(st.st_mode)) return invalid_argument("cannot read " + path + ": not a regular file");
  if (st.st_size > max_bytes)
    return resource_exhausted(fmt::format("{} is {} bytes, over the limit of {} bytes", path, st.st_size, max_bytes));
  std::string text;
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status(StatusCode::kDataLoss, "error while reading " + path + ": " + std::strerror(errno));
    }
    if (n == 0) break;
    text.append(buf, size_t(n));
    if (int64_t(text.size()) > max_bytes)  // it grew while we read
      return resource_exhausted(fmt::format("{} is over the limit of {} bytes", path, max_bytes));
  }
  return text;
}

}  // namespace tensorgym
