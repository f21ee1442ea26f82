#include "codegen/cuda/ptxas.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "support/subprocess.h"

namespace tensorgym::cuda {
namespace {

// `N bytes <what>` anywhere on a line.
int64_t bytes_of(const std::string& line, const std::string& what) {
  static const std::regex number_before(R"((\d+) bytes )");
  for (std::sregex_iterator it(line.begin(), line.end(), number_before), end; it != end; ++it) {
    const size_t after = size_t(it->position(0) + it->length(0));
    if (line.compare(after, what.size(), what) == 0) return std::stoll((*it)[1].str());
  }
  return -1;
}

// Removes a directory and what is in it when it goes out of scope.
struct TempDir {
  std::string path;
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

std::string find_ptxas() {
  if (const char* env = std::getenv("TENSORGYM_PTXAS"); env && *env) return find_on_path(env);
  std::string on_path = find_on_path("ptxas");
  if (!on_path.empty()) return on_path;
  return find_on_path("/usr/local/cuda/bin/ptxas");
}

std::map<std::string, PtxasStats> parse_ptxas_verbose(const std::string& text) {
  static const std::regex entry(R"(Compiling entry function '([^']+)')");
  static const std::regex properties(R"(Function properties for ([^\s]+))");
  static const std::regex registers(R"(Used (\d+) registers)");
  static const std::regex barriers(R"(used (\d+) barriers)");
  static const std::regex cmem(R"((\d+) bytes cmem\[0\])");
  std::map<std::string, PtxasStats> out;
  std::string current;
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, entry) || std::regex_search(line, m, properties)) {
      current = m[1].str();
      out[current];
      continue;
    }
    if (current.empty()) continue;
    PtxasStats& s = out[current];
    if (int64_t v = bytes_of(line, "stack frame"); v >= 0) s.stack_bytes = v;
    if (int64_t v = bytes_of(line, "spill stores"); v >= 0) s.spill_store_bytes = v;
    if (int64_t v = bytes_of(line, "spill loads"); v >= 0) s.spill_load_bytes = v;
    if (int64_t v = bytes_of(line, "smem"); v >= 0) s.shared_bytes = v;
    if (std::regex_search(line, m, registers)) s.registers = std::stoi(m[1].str());
    if (std::regex_search(line, m, barriers)) s.barriers = std::stoi(m[1].str());
    if (std::regex_search(line, m, cmem)) s.constant_bytes = std::stoll(m[1].str());
  }
  return out;
}

Expected<std::map<std::string, PtxasStats>> assemble_ptx(const std::string& ptx, const std::string& arch,
                                                         double timeout_s) {
  const std::string ptxas = find_ptxas();
  if (ptxas.empty())
    return not_found("ptxas (the CUDA toolkit's PTX assembler) is not installed: put it on PATH or set $TENSORGYM_PTXAS");
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/tensorgym-ptxas-XXXXXX";
  if (!::mkdtemp(templ.data())) return Status(StatusCode::kUnavailable, "mkdtemp failed for " + templ);
  TempDir dir{templ};
  const std::string input = dir.path + "/kernel.ptx", output = dir.path + "/kernel.cubin";
  {
    std::ofstream f(input, std::ios::binary);
    f << ptx;
    if (!f) return Status(StatusCode::kUnavailable, "cannot write " + input);
  }
  Expected<ProgramResult> run = run_program({ptxas, "-arch=" + arch, "-v", "-o", output, input}, timeout_s);
  if (!run.ok()) return run.status();
  if (run->timed_out)
    return Status(StatusCode::kDeadlineExceeded, fmt::format("ptxas did not finish within {:g} s", timeout_s));
  if (!run->ok()) {
    std::string text = run->output;
    // Its messages name the temporary file; say "kernel.ptx" instead.
    for (size_t at; (at = text.find(input)) != std::string::npos;) text.replace(at, input.size(), "kernel.ptx");
    return invalid_argument(fmt::format("ptxas rejected the PTX for {}: {}", arch, text));
  }
  return parse_ptxas_verbose(run->output);
}

}  // namespace tensorgym::cuda
