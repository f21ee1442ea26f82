#include "datasets/file_benchmark.h"

#include <utility>

#include "datasets/benchmark_uri.h"

namespace tensorgym {
namespace {

// "<stem>.expert.sched" for "<stem>.tg", or "" when the path has another extension.
std::string expert_schedule_path(const std::string& path) {
  constexpr std::string_view kExt = ".tg";
  if (path.size() <= kExt.size() || path.compare(path.size() - kExt.size(), kExt.size(), kExt) != 0) return "";
  return path.substr(0, path.size() - kExt.size()) + ".expert.sched";
}

}  // namespace

Expected<Benchmark> FileBenchmarkLoader::load(std::string_view path_view, const FileAccess& files) const {
  const std::string path(path_view);
  const std::string uri = "file://" + path;
  const ProgramLimits limits;
  TG_ASSIGN_OR_RETURN(std::string text, files.read(path, limits.max_text_bytes));

  std::string expert;
  if (std::string sched = expert_schedule_path(path); !sched.empty()) {
    Expected<std::string> s = files.read(sched, limits.max_text_bytes);
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
