#include "support/credential_files.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <fstream>
#include <set>
#include <sstream>

namespace tensorgym {
namespace {

constexpr const char* kBlanks = " \t\r\n";

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(kBlanks);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(kBlanks) - b + 1);
}

// A token file others can read leaks the token; one others can write lets them
// choose it. Group read is allowed (a Kubernetes secret mounted for an fsGroup).
Status check_token_file_mode(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return invalid_argument("cannot read the token file " + path);
  if ((st.st_mode & (S_IROTH | S_IWOTH | S_IWGRP)) != 0) {
    return invalid_argument(fmt::format(
        "the token file {0} has mode {1:04o}: it is readable by others or writable by others than its owner; "
        "run chmod 600 {0} (or 640 for a group of readers)",
        path, unsigned(st.st_mode & 07777)));
  }
  return Status();
}

Expected<std::vector<std::string>> read_lines(const std::string& path) {
  TG_RETURN_IF_ERROR(check_token_file_mode(path));
  std::ifstream in(path);
  if (!in) return invalid_argument("cannot read the token file " + path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(trim(line));
  return lines;
}

}  // namespace

Status check_token(const std::string& token, const std::string& where) {
  if (token.size() < kMinTokenBytes)
    return invalid_argument(
        fmt::format("the bearer token {} has {} bytes; a token needs at least {} (e.g. openssl rand -hex 32)", where,
                    token.size(), kMinTokenBytes));
  for (unsigned char c : token)
    if (c <= ' ' || c == 0x7f)
      return invalid_argument("the bearer token " + where + " holds a blank or a control character");
  return Status();
}

Expected<std::string> read_token_file(const std::string& path) {
  TG_ASSIGN_OR_RETURN(std::vector<std::string> lines, read_lines(path));
  if (lines.empty() || lines.front().empty()) return invalid_argument("the token file " + path + " is empty");
  TG_RETURN_IF_ERROR(check_token(lines.front(), "in " + path));
  return lines.front();
}

Expected<std::vector<NamedToken>> read_token_list_file(const std::string& path) {
  TG_ASSIGN_OR_RETURN(std::vector<std::string> lines, read_lines(path));
  std::vector<NamedToken> tokens;
  std::set<std::string> names, seen;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line.empty() || line[0] == '#') continue;
    const std::string where = fmt::format("on line {} of {}", i + 1, path);
    NamedToken t;
    const size_t blank = line.find_first_of(kBlanks);
    if (blank == std::string::npos) {
      t = {fmt::format("token-{}", i + 1), line};
    } else {
      t = {line.substr(0, blank), trim(line.substr(blank))};
    }
    TG_RETURN_IF_ERROR(check_token(t.token, where));
    if (!names.insert(t.name).second) return invalid_argument("the client name '" + t.name + "' " + where + " is taken");
    if (!seen.insert(t.token).second) return invalid_argument("the token " + where + " is given twice");
    tokens.push_back(std::move(t));
  }
  if (tokens.empty()) return invalid_argument("the token file " + path + " has no token");
  return tokens;
}

Expected<std::string> read_pem_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid_argument(std::string("cannot read the ") + what + " " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tensorgym
