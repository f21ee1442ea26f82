// The include graph keeps the layering DESIGN.md draws: the service and the client
// library meet only in the contract (envs/env.h, envs/episode_state.h) and proto/; the
// client library reaches nothing of the server; nothing outside codegen/ names a
// backend's own headers. Each rule reads every source file's quoted includes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Include {
  std::string file;    // relative to the source root
  std::string target;  // what it includes, as written between the quotes
};

// Every `#include "..."` in the .h and .cc files below `folder`, recursively.
std::vector<Include> includes_under(const std::string& folder) {
  const fs::path root(TENSORGYM_SOURCE_DIR);
  std::vector<Include> out;
  if (!fs::exists(root / folder)) return out;
  static const std::regex kInclude(R"(^\s*#\s*include\s*\"([^\"]+)\")");
  for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
    const std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".h" && ext != ".cc")) continue;
    std::ifstream in(entry.path());
    std::string line;
    std::smatch m;
    while (std::getline(in, line)) {
      if (std::regex_search(line, m, kInclude)) out.push_back({fs::relative(entry.path(), root).string(), m[1]});
    }
  }
  return out;
}

bool starts_with_any(const std::string& s, const std::vector<std::string>& prefixes) {
  for (const std::string& p : prefixes) {
    if (s.rfind(p, 0) == 0) return true;
  }
  return false;
}

// The includes under `folder` that start with one of `forbidden`.
std::vector<std::string> violations(const std::string& folder, const std::vector<std::string>& forbidden) {
  std::vector<std::string> found;
  for (const Include& inc : includes_under(folder)) {
    if (starts_with_any(inc.target, forbidden)) found.push_back(inc.file + " includes " + inc.target);
  }
  return found;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += "  " + l + "\n";
  return out;
}

TEST(Layering, TheIncludeScanSeesTheTree) {
  // A scan that finds nothing would pass every rule below.
  EXPECT_GT(includes_under("service").size(), 20u);
  EXPECT_GT(includes_under("client").size(), 20u);
}

TEST(Layering, ServiceNeverIncludesTheClientLibrary) {
  auto found = violations("service", {"client/", "cli/"});
  EXPECT_TRUE(found.empty()) << joined(found);
}

TEST(Layering, ClientLibraryStandsOnTheContractOnly) {
  // What the client library may reach: itself, the contract, the wire conversions,
  // spaces and support.
  std::vector<std::string> found;
  for (const Include& inc : includes_under("client")) {
    const bool allowed = starts_with_any(inc.target, {"client/", "proto/", "spaces/", "support/"}) ||
                         inc.target == "envs/env.h" || inc.target == "envs/episode_state.h";
    if (!allowed) found.push_back(inc.file + " includes " + inc.target);
  }
  EXPECT_TRUE(found.empty()) << joined(found);
}

TEST(Layering, TheContractCarriesNoServerInternals) {
  std::vector<std::string> found;
  for (const Include& inc : includes_under("envs")) {
    if (inc.file != "envs/env.h" && inc.file != "envs/episode_state.h") continue;
    const bool allowed = starts_with_any(inc.target, {"spaces/", "support/"}) || inc.target == "envs/episode_state.h";
    if (!allowed) found.push_back(inc.file + " includes " + inc.target);
  }
  EXPECT_TRUE(found.empty()) << joined(found);
}

TEST(Layering, ProtoConversionsNeitherSideOfTheService) {
  auto found = violations("proto", {"client/", "service/", "cli/", "envs/schedule/", "envs/memory/", "codegen/"});
  EXPECT_TRUE(found.empty()) << joined(found);
}

TEST(Layering, NothingOutsideCodegenNamesABackendsOwnHeaders) {
  // Backends are reached through codegen/backend/ (the interface and the registry).
  // A backend's own tests are the exception, and the accelerator's simulator benchmarks
  // (benchmarks/fpga_*), which measure its streams and simulators below any schedule.
  const std::vector<std::string> backends = {"codegen/cpu/", "codegen/cuda/", "codegen/fpga/"};
  std::vector<std::string> found;
  for (const char* folder : {"support", "spaces", "datasets", "envs", "memplan", "agents", "service", "client",
                             "cli", "proto", "plot", "benchmarks", "fuzz", "tests"}) {
    for (const Include& inc : includes_under(folder)) {
      if (!starts_with_any(inc.target, backends)) continue;
      if (starts_with_any(inc.file, {"tests/cpu_", "tests/cuda_", "tests/fpga_", "benchmarks/fpga_"})) continue;
      found.push_back(inc.file + " includes " + inc.target);
    }
  }
  EXPECT_TRUE(found.empty()) << joined(found);
}

TEST(Layering, AgentsAreAgentsOnly) {
  auto found = violations("agents", {"benchmarks/", "plot/", "service/", "client/", "cli/"});
  EXPECT_TRUE(found.empty()) << joined(found);
}

TEST(Layering, LibrariesNeverIncludeTheCommandLine) {
  std::vector<std::string> found;
  for (const char* folder : {"support", "codegen", "spaces", "datasets", "envs", "memplan", "agents", "service",
                             "client", "proto", "plot"}) {
    for (const std::string& v : violations(folder, {"cli/"})) found.push_back(v);
  }
  EXPECT_TRUE(found.empty()) << joined(found);
}

}  // namespace
