// The dataset registry: every dataset by name, and benchmark URIs resolved to
// programs. DatasetRegistry::global() holds the built-in datasets (see
// docs/datasets.md); tests may build their own.
#pragma once

#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/benchmark.h"
#include "datasets/file_benchmark.h"
#include "datasets/inline_programs.h"
#include "datasets/user_dataset.h"

namespace tensorgym {

class DatasetRegistry {
 public:
  // The built-in datasets (ops-v0, resnet50-v0, bert-v0, mobilenetv2-v0,
  // random-ops-v0) and an empty user-v0.
  DatasetRegistry();
  ~DatasetRegistry();
  DatasetRegistry(const DatasetRegistry&) = delete;
  DatasetRegistry& operator=(const DatasetRegistry&) = delete;

  // The process-wide registry (built on first use). Thread-safe, like every method.
  static DatasetRegistry& global();

  // In registration order; the pointers live as long as the registry.
  std::vector<const Dataset*> datasets() const;

  // A dataset by its URI ("benchmark://ops-v0") or its short name ("ops-v0").
  // NOT_FOUND naming it and listing the datasets there are.
  Expected<const Dataset*> find_dataset(std::string_view name) const;

  // The benchmark a URI names: scheme://dataset/name, file://PATH, or the short
  // dataset/name. INVALID_ARGUMENT for a malformed URI or an unknown scheme,
  // NOT_FOUND for an unknown dataset or benchmark; messages quote the URI and say
  // what was expected. Resolving a URI again gives the same ProgramPtr (for files:
  // while the text is unchanged).
  Expected<Benchmark> resolve(std::string_view uri) const;

  // Adds a program to benchmark://user-v0 (UserDataset::add): the URI, or
  // INVALID_ARGUMENT (bad name; program text, with line:column), ALREADY_EXISTS (the
  // name holds a different text), RESOURCE_EXHAUSTED (too many).
  // `owner` is whose caps it counts against (a server's client; "" in-process).
  Expected<std::string> add_user_benchmark(std::string_view name, std::string_view program_text,
                                           const std::string& owner = "");
  UserDataset& user_benchmarks() { return *user_; }
  // benchmark://inline-v0, the programs batch jobs send as text.
  InlinePrograms& inline_programs() { return *inline_; }

  // Which files file:// URIs may read (FileAccess::any() unless set); set it before
  // the registry is shared.
  void set_file_access(FileAccess files) { files_access_ = std::move(files); }
  const FileAccess& file_access() const { return files_access_; }

  // Registers another dataset; ALREADY_EXISTS when its name is taken,
  // INVALID_ARGUMENT when it is not of the form scheme://name.
  Status add_dataset(std::unique_ptr<Dataset> dataset);

 private:
  mutable std::shared_mutex mu_;  // guards datasets_ (the datasets guard themselves)
  std::vector<std::unique_ptr<Dataset>> datasets_;
  UserDataset* user_ = nullptr;      // owned by datasets_
  InlinePrograms* inline_ = nullptr;  // owned by datasets_
  FileBenchmarkLoader files_;
  FileAccess files_access_ = FileAccess::any();
};

}  // namespace tensorgym
