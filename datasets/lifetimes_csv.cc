#include "datasets/lifetimes_csv.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <unordered_set>
#include <vector>

#include "support/quote.h"

namespace tensorgym {
namespace {

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != ' ' && c != '\t') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

bool parse_int(const std::string& s, int64_t* v) {
  if (s.empty()) return false;
  try {
    size_t used = 0;
    *v = std::stoll(s, &used);
    return used == s.size();
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

Expected<Instance> parse_lifetimes_csv(const std::string& text, const std::string& source) {
  Instance inst;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  bool header = false;
  std::unordered_set<std::string> ids;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::string where = fmt::format("{}:{}: ", source, line_no);
    std::vector<std::string> f = split_csv(line);
    if (!header) {
      if (f.size() < 4 || f[0] != "id" || f[1] != "lower" || f[2] != "upper" || f[3] != "size")
        return invalid_argument(where + "expected the header 'id,lower,upper,size', got " + quote_text(line));
      header = true;
      continue;
    }
    if (f.size() < 4) return invalid_argument(where + "expected 'id,lower,upper,size', got " + quote_text(line));
    Buffer b;
    b.id = f[0];
    if (b.id.empty()) return invalid_argument(where + "the id is empty");
    if (!parse_int(f[1], &b.lower) || !parse_int(f[2], &b.upper) || !parse_int(f[3], &b.size))
      return invalid_argument(where + "lower, upper and size must be integers, got " + quote_text(line));
    if (b.lower < 0 || b.upper <= b.lower)
      return invalid_argument(where + "the lifetime [" + f[1] + ", " + f[2] + ") is empty or negative");
    if (b.size < 0 || b.size > kMaxBufferBytes)
      return invalid_argument(where + "the size " + f[3] + " is out of range");
    if (!ids.insert(b.id).second) return invalid_argument(where + "the id " + quote_text(b.id) + " appears twice");
    if (int64_t(inst.buffers.size()) >= kMaxBuffers)
      return resource_exhausted(fmt::format("{}more than {} buffers", where, kMaxBuffers));
    inst.buffers.push_back(std::move(b));
  }
  if (!header) return invalid_argument(source + ": empty (expected the header 'id,lower,upper,size')");
  return inst;
}

Expected<Instance> load_lifetimes_csv(const std::string& path, const FileAccess& files) {
  TG_ASSIGN_OR_RETURN(std::string text, files.read(path, kMaxLifetimesFileBytes));
  return parse_lifetimes_csv(text, path);
}

std::string lifetimes_to_csv(const Instance& instance) {
  std::string out = "id,lower,upper,size\n";
  for (const Buffer& b : instance.buffers)
    fmt::format_to(std::back_inserter(out), "{},{},{},{}\n", b.id, b.lower, b.upper, b.size);
  return out;
}

}  // namespace tensorgym
