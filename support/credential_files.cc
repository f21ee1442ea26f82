#include "support/credential_files.h"

#include <fstream>
#include <sstream>

namespace tensorgym {

Expected<std::string> read_token_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return invalid_argument("cannot read the token file " + path);
  std::string line;
  std::getline(in, line);
  const size_t b = line.find_first_not_of(" \t\r\n");
  const size_t e = line.find_last_not_of(" \t\r\n");
  if (b == std::string::npos) return invalid_argument("the token file " + path + " is empty");
  return line.substr(b, e - b + 1);
}

Expected<std::string> read_pem_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid_argument(std::string("cannot read the ") + what + " " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tensorgym
