#include "datasets/static_dataset.h"

#include <fmt/format.h>

#include <cassert>
#include <utility>

#include "datasets/benchmark_uri.h"

namespace tensorgym {

StaticDataset::StaticDataset(std::string name, std::string description, std::vector<SuiteEntry> entries,
                             ProgramLimits limits)
    : name_(std::move(name)),
      description_(std::move(description)),
      entries_(std::move(entries)),
      limits_(limits),
      parsed_(entries_.size()) {
  for (size_t i = 0; i < entries_.size(); ++i) {
    [[maybe_unused]] bool inserted = index_.emplace(entries_[i].name, i).second;
    assert(inserted && "duplicate benchmark name in a suite");
  }
}

std::vector<BenchmarkInfo> StaticDataset::list(int64_t offset, int64_t limit) const {
  int64_t begin, end;
  list_range(size(), offset, limit, &begin, &end);
  std::vector<BenchmarkInfo> out;
  out.reserve(size_t(end - begin));
  for (int64_t i = begin; i < end; ++i) out.push_back({name_ + "/" + entries_[size_t(i)].name, entries_[size_t(i)].shape});
  return out;
}

Expected<Benchmark> StaticDataset::get(std::string_view name) const {
  auto it = index_.find(std::string(name));
  if (it == index_.end()) {
    std::string examples;
    for (size_t i = 0; i < entries_.size() && i < 4; ++i) examples += (i ? ", " : "") + entries_[i].name;
    if (entries_.size() > 4) examples += ", ...";
    return not_found(
        fmt::format("no benchmark {} in {} (its {} benchmarks are named like {}; `tensorgym benchmarks {}` lists them)",
                    quote_uri(name_ + "/" + std::string(name)), name_, entries_.size(), examples, name_));
  }
  const size_t i = it->second;
  const SuiteEntry& e = entries_[i];
  ProgramPtr program;
  {
    std::lock_guard<std::mutex> lock(mu_);
    program = parsed_[i];
  }
  if (!program) {
    // Parsed outside the lock; when two threads race, the first result is kept.
    Expected<Program> parsed = parse_program(e.program_text, limits_);
    if (!parsed.ok()) {
      return internal_error("built-in benchmark " + name_ + "/" + e.name +
                            " does not parse: " + parsed.status().message());
    }
    auto fresh = std::make_shared<const Program>(std::move(*parsed));
    std::lock_guard<std::mutex> lock(mu_);
    if (!parsed_[i]) parsed_[i] = std::move(fresh);
    program = parsed_[i];
  }
  return Benchmark{name_ + "/" + e.name, e.program_text, std::move(program), e.expert_schedule, e.shape};
}

}  // namespace tensorgym
