#include "datasets/file_benchmark.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "datasets/benchmark_uri.h"

namespace tensorgym {
namespace {

// Reads a whole regular file of at most `max_bytes` bytes.
Expected<std::string> read_small_file(const std::string& path, int64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is rejected below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    const std::string why = std::strerror(err);
    if (err == ENOENT || err == ENOTDIR) return not_found("cannot read " + path + ": no such file");
    if (err == EACCES) return Status(StatusCode::kPermissionDenied, "cannot read " + path + ": " + why);
    return not_found("cannot read " + path + ": " + why);
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return not_found("cannot read " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return invalid_argument("cannot read " + path + ": not a regular file");
  if (st.st_size > max_bytes) {
    return resource_exhausted(path + " is " + std::to_string(st.st_size) + " bytes, over the limit of " +
                              std::to_string(max_bytes) + " bytes for program text");
  }
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
    if (int64_t(text.size()) > max_bytes) {  // grew while we read
      return resource_exhausted(path + " is over the limit of " + std::to_string(max_bytes) +
                                " bytes for program text");
    }
  }
  return text;
}

// "<stem>.expert.sched" for "<stem>.tg", or "" when the path has another extension.
std::string expert_schedule_path(const std::string& path) {
  constexpr std::string_view kExt = ".tg";
  if (path.size() <= kExt.size() || path.compare(path.size() - kExt.size(), kExt.size(), kExt) != 0) return "";
  return path.substr(0, path.size() - kExt.size()) + ".expert.sched";
}

}  // namespace

Expected<Benchmark> FileBenchmarkLoader::load(std::string_view path_view) const {
  const std::string path(path_view);
  const std::string uri = "file://" + path;
  const ProgramLimits limits;
  TG_ASSIGN_OR_RETURN(std::string text, read_small_file(path, limits.max_text_bytes));

  std::string expert;
  if (std::string sched = expert_schedule_path(path); !sched.empty()) {
    Expected<std::string> s = read_small_file(sched, limits.max_text_bytes);
    if (s.ok()) {
      expert = std::move(*s);
    } else if (s.status().code() != StatusCode::kNotFound) {
      return s.status();
    }
  }

  ProgramPtr program;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(path);
    if (it != cache_.end() && it->second.text == text) program = it->second.program;
  }
  if (!program) {
    Expected<Program> parsed = parse_program(text, limits);
    if (!parsed.ok()) return Status(parsed.status().code(), path + ":" + parsed.status().message());
    program = std::make_shared<const Program>(std::move(*parsed));
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(path);
    if (it == cache_.end()) {
      cache_.emplace(path, Cached{text, program});
      order_.push_back(path);
      if (order_.size() > kCacheSize) {
        cache_.erase(order_.front());
        order_.pop_front();
      }
    } else if (it->second.text == text) {
      program = it->second.program;  // another thread parsed it first
    } else {
      it->second = Cached{text, program};
    }
  }
  std::string shape = describe_program_shapes(*program);
  return Benchmark{uri, std::move(text), std::move(program), std::move(expert), std::move(shape)};
}

}  // namespace tensorgym
