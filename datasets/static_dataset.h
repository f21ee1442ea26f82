// A finite dataset whose programs are generated once, as text, when it is built:
// the operator suite and the model layers. Programs are parsed on first use and
// cached, so resolving a benchmark twice gives the same ProgramPtr.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "datasets/benchmark.h"

namespace tensorgym {

struct SuiteEntry {
  std::string name;             // "gmm-4"
  std::string shape;            // "N=1024 M=1024 K=1024"
  std::string program_text;     // in the program language
  std::string expert_schedule;  // trace text; empty when none
};

class StaticDataset : public Dataset {
 public:
  // `name` is the dataset URI ("benchmark://ops-v0"); entry names must be distinct.
  StaticDataset(std::string name, std::string description, std::vector<SuiteEntry> entries,
                ProgramLimits limits = builtin_program_limits());

  std::string name() const override { return name_; }
  std::string description() const override { return description_; }
  int64_t size() const override { return int64_t(entries_.size()); }
  std::vector<BenchmarkInfo> list(int64_t offset, int64_t limit) const override;
  Expected<Benchmark> get(std::string_view name) const override;

  const std::vector<SuiteEntry>& entries() const { return entries_; }

 private:
  std::string name_;
  std::string description_;
  std::vector<SuiteEntry> entries_;
  ProgramLimits limits_;
  std::unordered_map<std::string, size_t> index_;  // entry name -> position
  mutable std::mutex mu_;
  mutable std::vector<ProgramPtr> parsed_;  // by position; null until first get()
};

}  // namespace tensorgym
