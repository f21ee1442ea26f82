#include "proto/jobs.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "support/sha256.h"
#include "proto/provenance_json.h"
#include "proto/tensorgym.pb.h"

namespace tensorgym::client {
namespace {

void put_field(std::string* out, std::string_view s) {
  *out += std::to_string(s.size());
  *out += ':';
  out->append(s.data(), s.size());
  *out += ';';
}

BatchJob from_proto(const proto::EvaluateJob& p) {
  BatchJob job;
  job.key = p.key();
  job.env = p.env();
  job.benchmark = p.benchmark();
  job.program = p.program();
  job.actions = p.actions();
  job.action_space = p.action_space();
  job.observations.assign(p.observations().begin(), p.observations().end());
  job.rewards.assign(p.rewards().begin(), p.rewards().end());
  for (const auto& [k, v] : p.parameters()) job.parameters[k] = v;
  job.timeout_s = p.timeout_s();
  return job;
}

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

std::string number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// JSON text of a parsed value with object keys sorted, so that equal values print
// equally (protobuf's own printer follows map order, which is unspecified).
std::string canonical_json(const google::protobuf::Value& v) {
  switch (v.kind_case()) {
    case google::protobuf::Value::kNumberValue: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", v.number_value());
      return buf;
    }
    case google::protobuf::Value::kStringValue: return json_quote(v.string_value());
    case google::protobuf::Value::kBoolValue: return v.bool_value() ? "true" : "false";
    case google::protobuf::Value::kStructValue: {
      std::map<std::string, const google::protobuf::Value*> sorted;
      for (const auto& [k, f] : v.struct_value().fields()) sorted[k] = &f;
      std::string out = "{";
      for (const auto& [k, f] : sorted) out += (out.size() > 1 ? "," : "") + json_quote(k) + ":" + canonical_json(*f);
      return out + "}";
    }
    case google::protobuf::Value::kListValue: {
      std::string out = "[";
      for (const google::protobuf::Value& e : v.list_value().values())
        out += (out.size() > 1 ? "," : "") + canonical_json(e);
      return out + "]";
    }
    default: return "null";
  }
}

// The key of a line that is not a job: its own "key" when it is a JSON object with
// one (so the user finds the error under the name they gave), else the hash of its text.
std::string key_of_bad_line(const std::string& line) {
  google::protobuf::Struct obj;
  if (google::protobuf::util::JsonStringToMessage(line, &obj).ok()) {
    auto it = obj.fields().find("key");
    if (it != obj.fields().end() && it->second.kind_case() == google::protobuf::Value::kStringValue &&
        !it->second.string_value().empty())
      return it->second.string_value();
  }
  return sha256_hex("tensorgym-bad-job-line-v1;" + trim(line)).substr(0, 32);
}

}  // namespace

std::string job_content_key(const BatchJob& job) {
  std::string enc = "tensorgym-job-v1;";
  put_field(&enc, job.env.empty() ? "schedule-v0" : job.env);
  put_field(&enc, job.benchmark);
  put_field(&enc, job.program);
  put_field(&enc, job.actions);
  put_field(&enc, job.action_space);
  put_field(&enc, std::to_string(job.observations.size()));
  for (const std::string& o : job.observations) put_field(&enc, o);
  put_field(&enc, std::to_string(job.rewards.size()));
  for (const std::string& r : job.rewards) put_field(&enc, r);
  put_field(&enc, std::to_string(job.parameters.size()));
  for (const auto& [k, v] : job.parameters) {
    put_field(&enc, k);
    put_field(&enc, v);
  }
  char timeout[32];
  std::snprintf(timeout, sizeof timeout, "%.17g", job.timeout_s);
  put_field(&enc, timeout);
  return sha256_hex(enc).substr(0, 32);
}

void job_to_proto(const BatchJob& job, proto::EvaluateJob* p) {
  p->Clear();
  p->set_key(job.key);
  p->set_env(job.env);
  p->set_benchmark(job.benchmark);
  p->set_program(job.program);
  p->set_actions(job.actions);
  p->set_action_space(job.action_space);
  for (const std::string& o : job.observations) p->add_observations(o);
  for (const std::string& r : job.rewards) p->add_rewards(r);
  for (const auto& [k, v] : job.parameters) (*p->mutable_parameters())[k] = v;
  p->set_timeout_s(job.timeout_s);
}

std::string job_to_json(const BatchJob& job) {
  proto::EvaluateJob p;
  job_to_proto(job, &p);
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(p, &out, opts);
  return out;
}

Expected<BatchJob> parse_job_line(std::string_view line) {
  proto::EvaluateJob p;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = false;
  auto st = google::protobuf::util::JsonStringToMessage(std::string(line), &p, opts);
  if (!st.ok()) return invalid_argument("not a job: " + std::string(st.message()));
  BatchJob job = from_proto(p);
  if (job.benchmark.empty() && job.program.empty())
    return invalid_argument("a job needs \"benchmark\" (a URI) or \"program\" (program text)");
  if (!std::isfinite(job.timeout_s) || job.timeout_s < 0) return invalid_argument("\"timeout_s\" must be >= 0");
  if (job.key.empty()) job.key = job_content_key(job);
  return job;
}

Expected<std::vector<JobLine>> read_job_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot read the job file " + path);
  std::vector<JobLine> out;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (trim(line).empty()) continue;
    JobLine j;
    j.line = number;
    Expected<BatchJob> job = parse_job_line(line);
    if (job.ok()) {
      j.job = std::move(*job);
    } else {
      j.error = invalid_argument(path + ":" + std::to_string(number) + ": " + job.status().message());
      j.job.key = key_of_bad_line(line);
    }
    out.push_back(std::move(j));
  }
  if (in.bad()) return Status(StatusCode::kDataLoss, "error while reading " + path);
  return out;
}

const Event* BatchResult::observation(const std::string& name) const {
  for (const auto& [n, v] : observations)
    if (n == name) return &v;
  return nullptr;
}

const double* BatchResult::reward(const std::string& name) const {
  for (const auto& [n, v] : rewards)
    if (n == name) return &v;
  return nullptr;
}

std::string job_error_class(proto::JobError error) {
  const std::string& name = proto::JobError_Name(error);
  if (name.empty()) return "JOB_ERROR_" + std::to_string(int(error));
  return name.rfind("JOB_", 0) == 0 ? name.substr(4) : name;
}

BatchResult result_from_proto(const proto::EvaluateJob& job, const proto::JobResult& r) {
  BatchResult out;
  out.key = r.key();
  out.error = job_error_class(r.error());
  out.message = r.error_message();
  out.benchmark = job.benchmark();
  // Values come in the job's order; a result that does not match its job has none.
  if (r.observation_size() == job.observations_size()) {
    for (int i = 0; i < r.observation_size(); ++i) {
      Expected<Event> v = event_from_proto(r.observation(i));
      out.observations.emplace_back(job.observations(i), v.ok() ? std::move(*v) : Event());
    }
  }
  if (r.reward_size() == job.rewards_size())
    for (int i = 0; i < r.reward_size(); ++i) out.rewards.emplace_back(job.rewards(i), r.reward(i));
  out.queue_ms = r.queue_ms();
  out.compile_ms = r.compile_ms();
  out.run_ms = r.run_ms();
  out.instance_id = r.instance_id();
  out.slot = r.slot();
  out.worker_pid = r.worker_pid();
  if (r.has_provenance()) out.provenance_json = provenance_to_json(r.provenance());
  return out;
}

std::string result_to_json(const BatchResult& r) {
  std::string s = "{\"key\": " + json_quote(r.key);
  s += ", \"error\": " + json_quote(r.error);
  s += ", \"message\": " + json_quote(r.message);
  s += ", \"benchmark\": " + json_quote(r.benchmark);
  s += ", \"observations\": {";
  for (size_t i = 0; i < r.observations.size(); ++i)
    s += (i ? ", " : "") + json_quote(r.observations[i].first) + ": " + event_to_json(r.observations[i].second);
  s += "}, \"rewards\": {";
  for (size_t i = 0; i < r.rewards.size(); ++i)
    s += (i ? ", " : "") + json_quote(r.rewards[i].first) + ": " + event_to_json(Event(r.rewards[i].second));
  s += "}, \"queue_ms\": " + number(r.queue_ms);
  s += ", \"compile_ms\": " + number(r.compile_ms);
  s += ", \"run_ms\": " + number(r.run_ms);
  s += ", \"endpoint\": " + json_quote(r.endpoint);
  s += ", \"instance\": " + json_quote(r.instance_id);
  s += ", \"slot\": " + std::to_string(r.slot);
  s += ", \"worker_pid\": " + std::to_string(r.worker_pid);
  s += ", \"attempts\": " + std::to_string(r.attempts);
  if (!r.provenance_json.empty()) s += ", \"provenance\": " + r.provenance_json;
  return s + "}";
}

Expected<ResultLine> parse_result_line(std::string_view line) {
  google::protobuf::Struct obj;
  google::protobuf::util::JsonParseOptions opts;
  auto st = google::protobuf::util::JsonStringToMessage(std::string(line), &obj, opts);
  if (!st.ok()) return invalid_argument("not a JSON object: " + std::string(st.message()));
  const auto& f = obj.fields();
  auto key = f.find("key");
  if (key == f.end() || key->second.kind_case() != google::protobuf::Value::kStringValue || key->second.string_value().empty())
    return invalid_argument("a result line needs a string \"key\"");
  ResultLine r;
  r.key = key->second.string_value();
  auto str = [&](const char* name) {
    auto it = f.find(name);
    return it != f.end() && it->second.kind_case() == google::protobuf::Value::kStringValue ? it->second.string_value()
                                                                                            : std::string();
  };
  r.error = str("error");
  r.message = str("message");
  r.endpoint = str("endpoint");
  if (auto it = f.find("attempts"); it != f.end() && it->second.kind_case() == google::protobuf::Value::kNumberValue)
    r.attempts = int(it->second.number_value());
  if (auto it = f.find("observations"); it != f.end()) r.observations_json = canonical_json(it->second);
  if (auto it = f.find("rewards"); it != f.end()) r.rewards_json = canonical_json(it->second);
  return r;
}

}  // namespace tensorgym::client
