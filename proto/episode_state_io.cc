#include "proto/episode_state_io.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "proto/tensorgym.pb.h"
#include "proto/wire.h"

namespace tensorgym {

std::string episode_state_to_json(const EpisodeState& s) {
  proto::EpisodeState p;
  wire::episode_state_to_proto(s, &p);
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  opts.always_print_primitive_fields = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(p, &out, opts);
  return out;
}

Expected<EpisodeState> episode_state_from_json(const std::string& line) {
  proto::EpisodeState p;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = false;
  auto st = google::protobuf::util::JsonStringToMessage(line, &p, opts);
  if (!st.ok()) return invalid_argument("not an EpisodeState: " + std::string(st.message()));
  if (p.env().empty()) return invalid_argument("EpisodeState has no env");
  if (p.benchmark().empty()) return invalid_argument("EpisodeState has no benchmark");
  return wire::episode_state_from_proto(p);
}

Expected<std::vector<EpisodeState>> read_episode_states(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot read " + path + ": " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  std::vector<EpisodeState> states;
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    ++line_no;
    bool torn = end == std::string::npos;
    std::string line = text.substr(pos, torn ? std::string::npos : end - pos);
    pos = torn ? text.size() : end + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Expected<EpisodeState> s = episode_state_from_json(line);
    if (!s.ok()) {
      std::string where = fmt::format("{}:{}: ", path, line_no);
      if (torn) return Status(StatusCode::kDataLoss, where + "the last line is cut short (" + s.status().message() + ")");
      return Status(s.status().code(), where + s.status().message());
    }
    states.push_back(std::move(*s));
  }
  return states;
}

Status append_episode_state(const std::string& path, const EpisodeState& s) {
  std::string line = episode_state_to_json(s) + "\n";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Status(StatusCode::kUnavailable, "cannot open " + path + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return Status(StatusCode::kDataLoss, "cannot write " + path + ": " + std::strerror(errno));
    }
    done += size_t(n);
  }
  ::fsync(fd);
  ::close(fd);
  return Status();
}

}  // namespace tensorgym
